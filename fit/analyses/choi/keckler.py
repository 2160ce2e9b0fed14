"""The Keckler comparison of S0 §V-A (= S1 §3.4.1): what the fitted GTX 580 costs hold beyond the bare
circuit energies that Keckler et al. (IEEE Micro 2011) give for a Fermi-class GPU.

Keckler's numbers, as S0 quotes them: one double-precision FMA costs about 50 pJ in the floating-point unit
(25 pJ per flop); moving a byte from DRAM costs 253-389 pJ (DRAM access, interface and wires); an SRAM read
or write costs about 1.75 pJ per byte. S0's arithmetic:

    overhead per flop      = eps_d - 25 pJ                         212 - 25 = 187 pJ/flop (eps_d ~ 8x 25 pJ)
    overhead per SP byte   = overhead per flop / 4 B per word      187/4 ~ 47 pJ/B
    memory + overhead      = 253..389 + 47                          300..436 pJ/B
    + L1 and L2 traffic    = 2 levels x (read + write) x 1.75       7 pJ/B
    total estimate         = 300..436 + 7                           307..443 pJ/B, below the fitted 513 pJ/B

S1 §3.4.1 adds that an SRAM read (1.75 pJ/B) and the wire (10-20 pJ/B) are a small part of the fitted cache costs
(eps_L1 = 149, eps_L2 = 257 pJ/B): instruction overhead is most of them.

S0 rounds the overhead per byte to 47 before adding; this module carries it unrounded (46.75), so the
bounds come out 299.75..435.75 and 306.75..442.75, which round to the printed numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from archline.formats.platforms.profiles import Platform

PJ = 1e-12

#: Keckler et al.'s energies as S0 §V-A quotes them (J).
KECKLER_DP_FMA_J = 50 * PJ                 # Q019
KECKLER_FLOP_J = KECKLER_DP_FMA_J / 2      # Q020: an FMA is 2 flops
KECKLER_MEM_J_PER_BYTE = (253 * PJ, 389 * PJ)   # Q023: DRAM access + interface + wires
KECKLER_SRAM_J_PER_BYTE = 1.75 * PJ        # Q026: per read or write, L1 or L2
KECKLER_WIRE_J_PER_BYTE = (10 * PJ, 20 * PJ)   # Q029: moving a byte over the wire (S1 §3.4.1)
SP_WORD_BYTES = 4                          # the overhead of one flop instruction, spread over a 4-byte word
CACHE_LEVELS = 2                           # L1 and L2
ACCESSES_PER_LEVEL = 2                     # one write (fill) and one read on the way up


@dataclass(frozen=True)
class Keckler:
    platform: str
    eps_flop_dp_j: float
    eps_mem_j_per_byte: float
    ratio_to_keckler_flop: float             # Q021: ~8
    overhead_per_flop_j: float               # Q022: 187 pJ
    overhead_per_byte_j: float               # Q024: ~47 pJ/B
    mem_with_overhead_j_per_byte: tuple[float, float]   # Q025: 300-436
    sram_j_per_byte: float                   # Q027: 7 pJ/B
    total_estimate_j_per_byte: tuple[float, float]      # Q028: 307-443
    fitted_minus_estimate_j_per_byte: tuple[float, float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def keckler_comparison(platform: Platform) -> Keckler:
    """S0 §V-A for a platform's fitted eps_flop_dp and eps_mem (the GTX 580: 212 pJ and 513 pJ/B)."""
    eps_d = platform.require("eps_flop_dp", "the Keckler comparison (Choi et al. §V-A)")
    eps_mem = platform.require("eps_mem", "the Keckler comparison (Choi et al. §V-A)")
    overhead = eps_d - KECKLER_FLOP_J
    per_byte = overhead / SP_WORD_BYTES
    mem = (KECKLER_MEM_J_PER_BYTE[0] + per_byte, KECKLER_MEM_J_PER_BYTE[1] + per_byte)
    sram = CACHE_LEVELS * ACCESSES_PER_LEVEL * KECKLER_SRAM_J_PER_BYTE
    total = (mem[0] + sram, mem[1] + sram)
    return Keckler(platform.name, eps_d, eps_mem, eps_d / KECKLER_FLOP_J, overhead, per_byte, mem, sram, total,
                   (eps_mem - total[1], eps_mem - total[0]))
