"""Upper bounds on operational intensity from I/O lower bounds (Elango et al., TACO 2015 = S2; model.md
§12.2).

A bound is data plus a formula: ``OiBound`` holds the operation count, the I/O lower bound, the bound in flop
per word as a function of the fast-memory size S (in words), the smallest S its proof allows, its citation
and how sure the restatement is. ``register_bound`` adds one; ``BOUNDS`` holds the four of S2 §3 (matmul,
fft, cg, jacobi2d).

OI_max(S) = W / (word_bytes * Q_min(S)) flop/byte (S2 §2.2); the paper's words are 8-byte doubles, so its
flop/byte column is the flop/word bound divided by 8. With a cost table the bound becomes a floor on time and
energy per flop (energy roofline, S2 §2.1 / S0 eq.5), since both fall monotonically with intensity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from archline.formats.platforms.profiles import Platform
from archline.model.errors import ArchlineFitError


class UnknownAlgorithmError(ArchlineFitError):
    pass


class FastMemoryError(ArchlineFitError):
    """The fast-memory size is zero, negative, or too small for the bound's proof."""


@dataclass(frozen=True)
class OiBound:
    name: str
    title: str
    op_count: str                        # W, as printed (restated)
    io_lower_bound_words: str            # Q_min(S), words
    formula_flop_per_word: str           # W / Q_min
    oi_flop_per_word: Callable[[float], float]
    min_fast_memory_words: float         # smallest S the bound's assumptions allow
    min_reason: str
    citation: str
    certainty: str = "exact"             # "exact", "garbled-resolved" or "uncertain"
    notes: tuple[str, ...] = field(default_factory=tuple)
    depends_on_fast_memory: bool = True
    #: named readings of the bound: name -> (factor on the flop/word bound, why); the first is the default
    readings: tuple[tuple[str, float, str], ...] = (("full", 1.0, "as printed"),)

    def reading_factor(self, reading: str | None) -> tuple[str, float]:
        if reading is None:
            return self.readings[0][0], self.readings[0][1]
        for name, factor, _ in self.readings:
            if name == reading:
                return name, factor
        raise UnknownAlgorithmError(f"the {self.name} bound has no reading '{reading}' "
                                    f"(known: {', '.join(r[0] for r in self.readings)})")

    @property
    def uncertain(self) -> bool:
        return self.certainty == "uncertain"


BOUNDS: dict[str, OiBound] = {}


def register_bound(bound: OiBound) -> OiBound:
    """Add a bound to the registry (a later one of the same name replaces the earlier)."""
    BOUNDS[bound.name] = bound
    return bound


register_bound(OiBound(
    name="matmul", title="matrix-matrix multiply, N x N",
    op_count="2*N^3", io_lower_bound_words="N^3 / (2*sqrt(2*S))  (Irony et al.)",
    formula_flop_per_word="4*sqrt(2*S)", oi_flop_per_word=lambda s: 4.0 * math.sqrt(2.0 * s),
    min_fast_memory_words=3, min_reason="one element each of A, B and C must be in fast memory to compute",
    citation="S2 Sec. 3.1 and Sec. 5 (Elango et al., TACO 2015)",
    certainty="garbled-resolved",
    notes=("the square roots are lost in the paper's text; 4*sqrt(2S) restored from the printed 181.02 flop/B "
           "at S = 2^16 words",),
))
register_bound(OiBound(
    name="fft", title="FFT, N-point (radix-2 butterfly CDAG)",
    op_count="2*N*log2(N)", io_lower_bound_words="2*N*log2(N) / log2(S)  (Theorem 3.1, leading term)",
    formula_flop_per_word="log2(S)", oi_flop_per_word=lambda s: math.log2(s),
    min_fast_memory_words=4, min_reason="a butterfly needs its 2 inputs and 2 outputs in fast memory "
    "(and log2(S) > 1)",
    citation="S2 Theorem 3.1, Sec. 3.2 and Sec. 5",
    certainty="garbled-resolved",
    notes=("log base 2, consistent with 2.0 flop/B at S = 2^16 words and 1.125..2.875 for S = 2^9..2^23",
           "the lower-order term O(N log N / log^2 S) is dropped: the bound holds for N >> S"),
    readings=(("full", 1.0, "log2(S) flop/word = 0.125*log2(S) flop/B: S2 Theorem 3.1 and the Sec. 5 formula; it "
                            "gives Sec. 5's printed 2.0 (alpha = 0.01), 1.125..2.875 and 45 GFLOP/s"),
              ("half", 0.5, "0.5*log2(S) flop/word = 0.0625*log2(S) flop/B: the reading that gives Fig. 4's "
                            "'between 0.5 and 2', Sec. 5's 'compute-bound when alpha > 75%, cores < 6' and Sec. 6's "
                            "optimum (8 MB, P = 10, 1.26 GHz)")),
))
register_bound(OiBound(
    name="cg", title="conjugate gradient on a 2-D grid N^2, T iterations",
    op_count="20*N^2*T", io_lower_bound_words="6*N^2*T  (Theorem 3.2, valid when N^2 >> S)",
    formula_flop_per_word="20/6", oi_flop_per_word=lambda s: 20.0 / 6.0,
    min_fast_memory_words=1, min_reason="one word",
    citation="S2 Theorem 3.2, Sec. 3.3 and Sec. 5",
    certainty="uncertain",
    notes=("UNCERTAIN: the paper prints the operation count as '20N 3 T'; 20*N^2*T is required for the stated "
           "ratio 20/6 (0.417 flop/B)",
           "independent of S; valid only while the grid is much larger than fast memory (N^2 >> S)"),
    depends_on_fast_memory=False,
))
register_bound(OiBound(
    name="jacobi2d", title="9-point Jacobi 2-D, N x N, T time steps",
    op_count="9*N^2*T", io_lower_bound_words="0.75*N^2*T / sqrt(S)  (Theorem 3.3, leading term)",
    formula_flop_per_word="12*sqrt(S)", oi_flop_per_word=lambda s: 12.0 * math.sqrt(s),
    min_fast_memory_words=10, min_reason="a 9-point update needs its 9 inputs and 1 output in fast memory",
    citation="S2 Theorem 3.3, Sec. 3.4 and Sec. 5",
    certainty="garbled-resolved",
    notes=("lower-order terms O(N^2/sqrt(S) + N*T/sqrt(S)) dropped: the bound holds for N^2 >> S",),
))


def get_bound(name: str) -> OiBound:
    try:
        return BOUNDS[name]
    except KeyError:
        raise UnknownAlgorithmError(
            f"unknown algorithm '{name}' (known: {', '.join(sorted(BOUNDS))})") from None


@dataclass(frozen=True)
class BoundResult:
    algorithm: str
    fast_memory_bytes: float
    word_bytes: int
    fast_memory_words: float
    oi_upper_flop_per_word: float
    oi_upper_flop_per_byte: float
    bound: OiBound
    # with a cost table (None without one)
    reading: str = "full"
    platform: str | None = None
    precision: str | None = None
    min_time_per_flop_s: float | None = None
    min_energy_per_flop_j: float | None = None
    max_flop_per_j: float | None = None
    max_flop_per_s: float | None = None
    emulated: bool = False

    def as_dict(self) -> dict[str, object]:
        b = self.bound
        d: dict[str, object] = {
            "algorithm": self.algorithm, "title": b.title,
            "fast_memory_bytes": self.fast_memory_bytes, "word_bytes": self.word_bytes,
            "fast_memory_words": self.fast_memory_words,
            "oi_upper_flop_per_word": self.oi_upper_flop_per_word,
            "oi_upper_flop_per_byte": self.oi_upper_flop_per_byte,
            "op_count": b.op_count, "io_lower_bound_words": b.io_lower_bound_words,
            "formula_flop_per_word": b.formula_flop_per_word,
            "formula_flop_per_byte": f"({b.formula_flop_per_word}) / word_bytes",
            "citation": b.citation, "certainty": b.certainty, "uncertain": b.uncertain,
            "reading": self.reading, "readings": {n: why for n, _, why in b.readings},
            "notes": list(b.notes),
        }
        if self.platform is not None:
            d.update({"platform": self.platform, "precision": self.precision, "emulated": self.emulated,
                      "min_time_per_flop_s": self.min_time_per_flop_s,
                      "min_energy_per_flop_j": self.min_energy_per_flop_j,
                      "max_flop_per_j": self.max_flop_per_j, "max_flop_per_s": self.max_flop_per_s})
        return d


def oi_upper_bound(algorithm: str, fast_memory_bytes: float, word_bytes: int = 8,
                   reading: str | None = None) -> BoundResult:
    """The bound at a fast memory of ``fast_memory_bytes`` (S = fast_memory_bytes / word_bytes words), in the
    named ``reading`` (FFT: "full" or "half", see its ``readings``; None: the bound's default)."""
    b = get_bound(algorithm)
    reading, factor = b.reading_factor(reading)
    if word_bytes <= 0:
        raise FastMemoryError(f"word size must be positive, got {word_bytes} bytes")
    if not math.isfinite(fast_memory_bytes) or fast_memory_bytes <= 0:
        raise FastMemoryError(
            f"fast-memory size must be a positive number of bytes, got {fast_memory_bytes:g}")
    s_words = fast_memory_bytes / word_bytes
    if s_words < b.min_fast_memory_words:
        raise FastMemoryError(
            f"fast memory of {fast_memory_bytes:g} B = {s_words:g} words of {word_bytes} B is too small for "
            "the "
            f"{algorithm} bound: it assumes S >= {b.min_fast_memory_words:g} words ({b.min_reason})")
    per_word = factor * float(b.oi_flop_per_word(s_words))
    return BoundResult(algorithm=algorithm, reading=reading, fast_memory_bytes=float(fast_memory_bytes),
                       word_bytes=word_bytes,
                       fast_memory_words=s_words, oi_upper_flop_per_word=per_word,
                       oi_upper_flop_per_byte=per_word / word_bytes, bound=b)


def with_costs(result: BoundResult, platform: Platform) -> BoundResult:
    """Floors on time and energy per flop at the bounded intensity (energy roofline; S2 §2.1, S0 eq.3-5).

    Precision follows the word: 8-byte words use the double-precision costs, 4-byte words single precision.
    """
    precision = "dp" if result.word_bytes >= 8 else "sp"
    m = platform.machine(precision,
                         needed_for=f"the {result.algorithm} time/energy bound ({precision} words)")
    i = result.oi_upper_flop_per_byte
    t = float(m.time_per_flop_s(i))
    e = float(m.energy_per_flop_j(i))
    return BoundResult(**{**result.__dict__, "platform": platform.name, "precision": precision,
                          "min_time_per_flop_s": t, "min_energy_per_flop_j": e, "max_flop_per_j": 1.0 / e,
                          "max_flop_per_s": 1.0 / t, "emulated": platform.emulated})


def parse_bytes(text: str) -> float:
    """'65536', '512K', '512KiB', '8MB' -> bytes (archline.common.sizes), as this module's error type."""
    from archline.common.sizes import parse_bytes as _parse

    try:
        return float(_parse(text))
    except ValueError as e:
        raise FastMemoryError(f"fast-memory size: {e}") from None
