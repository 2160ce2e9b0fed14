"""The timing model inside Hong & Kim's IPP (S3 §4.1-4.2, eq.24-34; model.md §10.3-10.4).

S3 summarises the analytical GPU timing model of Hong & Kim (ISCA 2009, S3 reference [9]):

* MWP, the number of memory requests serviceable at once (eq.29-33):
  MWP = min(MWP_Without_BW, MWP_peak_BW, N), MWP_peak_BW = Mem_Bandwidth/(BW_per_warp*#ActiveSM),
  BW_per_warp = Freq*Load_bytes_per_warp/Mem_L, MWP_Without_BW = min(Mem_L/Departure_delay, N).
* CWP, "the number of warps that can finish one computational period during one memory access period"
  (S3 §4.1). S3 gives no formula; the one used here is that sentence written out, as the cited 2009 paper
  does: CWP_full = (Mem_cycles + Comp_cycles)/Comp_cycles, CWP = min(CWP_full, N).
* Execution cycles, three cases (eq.24-26), tested in S3's order:
  Case 1 (MWP == N and CWP == N): (Mem_cycles + Comp_cycles + Comp_cycles/#Mem_insts*(MWP-1))*#Repw
  Case 2 (CWP >= MWP or Comp_cycles > Mem_cycles): (Mem_cycles*N/MWP + Comp_cycles/#Mem_insts*(MWP-1))*#Repw
  Case 3 (MWP > CWP): (Mem_L + Comp_cycles*N)*#Repw
* The optimal number of active SMs (eq.34), with the readings archline takes where S3 contradicts itself
  (see :func:`optimal_active_sms`).

Comp_cycles defaults to Issue_cycles x instructions per warp (4 cycles per warp instruction on the GTX 280,
S3 §3.2) and Mem_cycles to Mem_L x #Mem_insts; both may be given directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from archline.model.errors import ArchlineFitError


class IppTimingError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class TimingInputs:
    """One kernel's timing-model inputs, per warp and per SM, at the GPU's full SM count."""

    comp_cycles: float              # execution cycles of all instructions of one warp (one repetition)
    mem_cycles: float               # memory waiting cycles of one warp
    mem_insts: float                # memory instructions per warp (#Mem_insts)
    n_warps: float                  # N: running warps per SM
    mem_latency_cycles: float       # Mem_L
    mwp_without_bw_full: float      # Mem_L / Departure_delay (eq.32)
    mwp_peak_bw_all_sms: float      # eq.30 with every SM active
    num_sms: int                    # SMs of the GPU
    repw_all_sms: float = 1.0       # #Repw with every SM active; the total work is fixed (S3 §6.4)

    def __post_init__(self) -> None:
        for name in ("comp_cycles", "mem_cycles", "n_warps", "mem_latency_cycles", "mwp_without_bw_full",
                     "mwp_peak_bw_all_sms", "repw_all_sms"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise IppTimingError(f"timing model: {name} must be a positive number, got {v:g}")
        if not self.mem_insts >= 0:
            raise IppTimingError(f"timing model: mem_insts must be >= 0, got {self.mem_insts:g}")
        if self.num_sms < 1:
            raise IppTimingError(f"timing model: num_sms must be >= 1, got {self.num_sms}")


@dataclass(frozen=True)
class TimingResult:
    active_sms: int
    mwp_peak_bw: float
    mwp_without_bw: float
    mwp: float
    cwp_full: float
    cwp: float
    case: int
    repw: float
    exec_cycles: float

    def as_dict(self) -> dict[str, float | int]:
        return {"active_sms": self.active_sms, "MWP_peak_BW": self.mwp_peak_bw, "MWP_Without_BW": self.mwp_without_bw,
                "MWP": self.mwp, "CWP_full": self.cwp_full, "CWP": self.cwp, "case": self.case,
                "Repw": self.repw, "exec_cycles": self.exec_cycles}


def mwp_peak_bw_at(mwp_peak_bw_all_sms: float, num_sms: int, active_sms: int) -> float:
    """eq.30 at ``active_sms``: Mem_Bandwidth/BW_per_warp is fixed, so MWP_peak_BW scales as 1/#ActiveSM."""
    return mwp_peak_bw_all_sms * num_sms / active_sms


def cwp(mem_cycles: float, comp_cycles: float, n_warps: float) -> tuple[float, float]:
    """(CWP_full, CWP): CWP_full = (Mem_cycles + Comp_cycles)/Comp_cycles, CWP = min(CWP_full, N)."""
    full = (mem_cycles + comp_cycles) / comp_cycles
    return full, min(full, n_warps)


def exec_cycles(t: TimingInputs, active_sms: int | None = None) -> TimingResult:
    """eq.24-26 at ``active_sms`` (default: all). #Repw grows as the SMs shrink: the work is fixed."""
    n_act = t.num_sms if active_sms is None else active_sms
    if not 1 <= n_act <= t.num_sms:
        raise IppTimingError(f"active SMs must be between 1 and {t.num_sms}, got {n_act}")
    n = t.n_warps
    peak = mwp_peak_bw_at(t.mwp_peak_bw_all_sms, t.num_sms, n_act)
    without = min(t.mwp_without_bw_full, n)                       # eq.33
    mwp_ = min(without, peak, n)                                   # eq.29
    cwp_full, cwp_ = cwp(t.mem_cycles, t.comp_cycles, n)
    repw = t.repw_all_sms * t.num_sms / n_act
    per_mem = t.comp_cycles / t.mem_insts if t.mem_insts > 0 else 0.0
    if math.isclose(mwp_, n) and math.isclose(cwp_, n):
        case, cycles = 1, (t.mem_cycles + t.comp_cycles + per_mem * (mwp_ - 1)) * repw          # eq.24
    elif cwp_ >= mwp_ or t.comp_cycles > t.mem_cycles:
        case, cycles = 2, (t.mem_cycles * n / mwp_ + per_mem * (mwp_ - 1)) * repw              # eq.25
    else:
        case, cycles = 3, (t.mem_latency_cycles + t.comp_cycles * n) * repw                   # eq.26
    return TimingResult(n_act, peak, without, mwp_, cwp_full, cwp_, case, repw, cycles)


# --- optimal number of active SMs (eq.34) ------------------------------------------------------------------

#: How eq.34 is read where S3 contradicts itself. archline's defaults reproduce S3 §6.4.1 for all 11 kernels.
READINGS = {
    "cond1": {"and": "Case 1 of eq.24: MWP == N and CWP == N (archline)",
              "or": "eq.34 as printed: MWP == N or CWP == N"},
    "cond2": {">=": "MWP >= CWP, as S3 §6.4 says of Sepia (CWP 'equal to or less than' MWP) (archline)",
              ">": "eq.34 as printed: MWP > CWP"},
}


@dataclass(frozen=True)
class OptimalSms:
    active_sms: int
    condition: str          # "(1)", "(2)", "(3)" or "bandwidth"
    reason: str
    exact: float = math.nan  # Mem_Bandwidth/(BW_per_warp*N) before rounding down, for "bandwidth"
    notes: tuple[str, ...] = field(default_factory=tuple)


def optimal_active_sms(mwp_: float, cwp_: float, n_warps: float | None, mwp_peak_bw_all_sms: float | None,
                       num_sms: int, *, cond1: str = "and", cond2: str = ">=") -> OptimalSms:
    """eq.34: all SMs if (1) or (2) or (3) holds, else Mem_Bandwidth/(BW_per_warp*N) SMs, rounded down.

    Mem_Bandwidth/BW_per_warp = MWP_peak_BW(all SMs) * Num_SMs (eq.30). ``n_warps`` may be None when S3 does
    not give N (the Merge kernels of Table 4): condition (1) is then not evaluated, and the bandwidth formula,
    which needs N, raises. ``mwp_peak_bw_all_sms`` may be None when not known (it is only needed by (3))."""
    if cond1 not in READINGS["cond1"] or cond2 not in READINGS["cond2"]:
        raise IppTimingError(f"unknown eq.34 reading cond1={cond1!r} cond2={cond2!r}")
    notes: list[str] = []
    if n_warps is None:
        notes.append("N not given: condition (1) not evaluated")
    else:
        eq_mwp, eq_cwp = math.isclose(mwp_, n_warps), math.isclose(cwp_, n_warps)
        if (eq_mwp and eq_cwp) if cond1 == "and" else (eq_mwp or eq_cwp):
            return OptimalSms(num_sms, "(1)", "(1) " + READINGS["cond1"][cond1].split(" (")[0]
                              + ": too few warps to reach peak bandwidth", notes=tuple(notes))
    if (mwp_ >= cwp_) if cond2 == ">=" else (mwp_ > cwp_):
        return OptimalSms(num_sms, "(2)", f"(2) MWP {cond2} CWP: compute-bound", notes=tuple(notes))
    if mwp_peak_bw_all_sms is None:
        raise IppTimingError("eq.34 condition (3) needs MWP_peak_BW (give mwp_peak_bw, or load_bytes_per_warp "
                             "with the GPU's freq_hz and mem_bandwidth_b_per_s)")
    if mwp_ < mwp_peak_bw_all_sms and not math.isclose(mwp_, mwp_peak_bw_all_sms, rel_tol=1e-9):
        return OptimalSms(num_sms, "(3)", "(3) MWP < MWP_peak_BW: below peak bandwidth", notes=tuple(notes))
    if n_warps is None:
        raise IppTimingError("eq.34 reaches Mem_Bandwidth/(BW_per_warp*N), which needs N (n_warps)")
    exact = mwp_peak_bw_all_sms * num_sms / n_warps
    n = max(1, min(num_sms, math.floor(exact + 1e-9)))
    return OptimalSms(n, "bandwidth", f"bandwidth-limited: Mem_Bandwidth/(BW_per_warp*N) = {exact:.4g}", exact,
                      tuple(notes))


# --- relative time from S3 Table 4's MWP, CWP and N alone (S3 Fig. 13) -------------------------------------

def relative_time(mwp_all_sms: float, cwp_: float, n_warps: float, mwp_peak_bw_all_sms: float, num_sms: int,
                  active_sms: int, mwp_without_bw_full: float | None = None) -> tuple[float, int]:
    """Execution time at ``active_sms`` relative to all SMs, from MWP, CWP and N only, and the case used.

    S3 Table 4 prints MWP and CWP but not the cycle counts behind them, so only the shape of S3 Fig. 13 can be
    computed. Case 2 (CWP >= MWP): the memory term Mem_cycles*N/MWP dominates (CWP = N: memory cycles are at
    least N-1 times the compute cycles), so time ~ #Repw*N/MWP(n). Case 3 (MWP > CWP): time ~ #Repw. #Repw
    grows as 1/n (fixed work, S3 §6.4). MWP_Without_BW, not printed, is taken as not limiting (>= N) unless
    given."""
    def mwp_at(n: int) -> float:
        peak = mwp_peak_bw_at(mwp_peak_bw_all_sms, num_sms, n)
        without = n_warps if mwp_without_bw_full is None else min(mwp_without_bw_full, n_warps)
        return min(without, peak, n_warps)

    if mwp_all_sms > cwp_:
        return num_sms / active_sms, 3
    t_n = (num_sms / active_sms) * n_warps / mwp_at(active_sms)
    t_all = n_warps / mwp_at(num_sms)
    return t_n / t_all, 2
