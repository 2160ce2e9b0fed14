"""What `archline ipp` reports: a kernel's power, temperature, timing, perf/W over active SMs, optimal SM count
and energy savings (S3 §3-§6.4), composed from ``ipp`` (power, temperature) and ``ipp_timing`` (eq.24-34).

Two kinds of kernel: one with counts (instructions per warp, timing inputs) gets absolute watts, cycles and
instructions per second; one with only S3 Table 4's MWP, CWP and N gets the optimal SM count and the *shape*
of time and perf/W against active SMs (relative to all SMs), which is all Table 4 determines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from archline.fit.analyses.hongkim import ipp
from archline.fit.analyses.hongkim.files import Kernel
from archline.fit.analyses.hongkim.ipp import GpuParams, IppInputError, IppPower
from archline.fit.analyses.hongkim.timing import (
    OptimalSms,
    TimingResult,
    exec_cycles,
    optimal_active_sms,
    relative_time,
)

NO_ACCESS = Kernel("no-access", {}, "S3 eq.9: only RP_Const_SM is drawn without any access")


# --- power (S3 eq.5-16, 27) -------------------------------------------------------------------------------

@dataclass
class KernelPower:
    kernel: str
    power: IppPower
    exec_cycles: float | None
    cycles_source: str                 # "measured", "predicted (case N)", "rates given", "no access"
    rates: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        p = self.power
        return {"kernel": self.kernel, "active_sms": p.active_sms, "gpu_power_w": p.gpu_power_w,
                "runtime_power_w": p.runtime_power_w, "idle_power_w": p.idle_power_w,
                "max_sm_w": p.max_sm_w, "rp_memory_w": p.rp_memory_w, "log_factor": p.log_factor,
                "per_sm_component_w": {k: v for k, v in p.component_w.items() if k not in ipp.MEMORY_UNITS},
                "memory_component_w": {k: v for k, v in p.component_w.items() if k in ipp.MEMORY_UNITS},
                "breakdown_w": breakdown_w(p),
                "access_rates": self.rates, "exec_cycles": self.exec_cycles, "cycles_source": self.cycles_source}


def breakdown_w(p: IppPower) -> dict[str, float]:
    """Each unit's share of the GPU power, in W: idle; on-chip units x Num_SMs (eq.8, 15) and memory units, both
    x log10(alpha*Active_SMs + beta) (eq.16). The shares add up to the GPU power (eq.5)."""
    on_chip = sum(w for u, w in p.component_w.items() if u not in ipp.MEMORY_UNITS)
    num_sms = p.max_sm_w / on_chip if on_chip else 0.0
    out = {"idle": p.idle_power_w}
    for u, w in p.component_w.items():
        out[u] = w * p.log_factor * (1.0 if u in ipp.MEMORY_UNITS else num_sms)
    return out


def _warps_per_sm(k: Kernel, gpu: GpuParams, active_sms: int, timing: TimingResult | None) -> float:
    if "warps_per_sm" in k.values:
        return k.values["warps_per_sm"] * gpu.num_sms / active_sms
    tpb, blocks = k.get("threads_per_block"), k.get("blocks")
    if tpb is not None and blocks is not None:
        return ipp.warps_per_sm(int(tpb), int(blocks), active_sms)
    if timing is not None:
        return k.values["n_warps"] * timing.repw        # every warp an SM runs over the whole kernel
    raise IppInputError(f"{k.where()}: access rates (eq.10) need threads_per_block and blocks, or warps_per_sm")


def kernel_power(k: Kernel, gpu: GpuParams, active_sms: int | None = None, predicted: bool = False) -> KernelPower:
    """GPU power of a kernel at ``active_sms`` (default all): from its access rates, or from its instructions per
    warp with measured exec_cycles (S3 §3; all SMs, unless ``predicted``) or cycles predicted by the timing
    model (S3 §4.1, eq.27)."""
    n = gpu.num_sms if active_sms is None else active_sms
    if k is NO_ACCESS:
        return KernelPower(k.name, ipp.power_from_rates({}, gpu, n), None, "no access", {})
    if k.rates:
        return KernelPower(k.name, ipp.power_from_rates(k.rates, gpu, n), None, "rates given", dict(k.rates))
    if not k.instructions:
        raise IppInputError(f"{k.where()}: power needs [kernel.instructions] (per warp) or [kernel.rates]; "
                            "S3 Table 4 prints neither for its kernels")
    timing = exec_cycles(k.timing_inputs(gpu), n) if k.has_timing() else None
    if "exec_cycles" in k.values and n == gpu.num_sms and not predicted:
        cycles, source = k.values["exec_cycles"], "measured"
    elif timing is not None:
        cycles, source = timing.exec_cycles, f"predicted (case {timing.case})"
    else:
        raise IppInputError(f"{k.where()}: access rates need exec_cycles (measured, all SMs) or the timing-model "
                            "inputs (n_warps, mwp_peak_bw, ...) to predict them")
    acc = ipp.unit_accesses(k.instructions, gpu)
    wps = _warps_per_sm(k, gpu, n, timing)
    rates = {u: ipp.access_rate(c, wps, cycles) for u, c in acc.items()}
    return KernelPower(k.name, ipp.power_from_rates(rates, gpu, n), cycles, source, rates)


# --- temperature (S3 eq.17-23) -----------------------------------------------------------------------------

def mem_access_intensity(k: Kernel, gpu: GpuParams) -> float:
    """eq.20, given or from the instruction mix (global + local memory instructions over the others)."""
    if "mem_access_intensity" in k.values:
        return k.values["mem_access_intensity"]
    if k is NO_ACCESS:
        return 0.0
    mem = k.mem_insts(gpu)
    if not k.instructions or mem is None:
        raise IppInputError(f"{k.where()}: eq.20 needs mem_access_intensity or [kernel.instructions]")
    return ipp.mem_access_intensity(mem, sum(k.instructions.values()) - mem)


def temperature(k: Kernel, gpu: GpuParams, times_s: Sequence[float]) -> dict[str, Any]:
    """Peak temperature (eq.19, read as a rise above Idle_temp), its rise over time (eq.17) and the static power
    it adds (eq.21-23, sigma = 10/22 W/degC) for a run started cold."""
    p0 = kernel_power(k, gpu).power
    mi = mem_access_intensity(k, gpu)
    rise = ipp.max_temp_rise_degc(p0.runtime_power_w, mi, gpu)
    rows = []
    for t in times_s:
        d = ipp.temperature_rise_degc(t, rise, gpu)
        rows.append({"time_s": t, "temperature_degc": gpu.idle_temp_degc + d, "delta_temp_degc": d,
                     "static_power_increase_w": ipp.static_power_increase_w(d, gpu),
                     "runtime_power_w": p0.runtime_power_w + ipp.static_power_increase_w(d, gpu),
                     "gpu_power_w": p0.gpu_power_w + ipp.static_power_increase_w(d, gpu)})
    return {"kernel": k.name, "runtime_power0_w": p0.runtime_power_w, "mem_access_intensity": mi,
            "max_temp_rise_degc": rise, "max_temp_degc": gpu.idle_temp_degc + rise,
            "idle_temp_degc": gpu.idle_temp_degc, "sigma_w_per_degc": gpu.sigma_w_per_degc,
            "max_static_power_increase_w": ipp.static_power_increase_w(rise, gpu), "over_time": rows}


# --- timing and the optimal SM count (S3 eq.24-34) ---------------------------------------------------------

def mwp_cwp(k: Kernel, gpu: GpuParams) -> tuple[float, float, str]:
    """(MWP, CWP) with all SMs: as printed (S3 Table 4) or from the timing model; and which."""
    if k.get("mwp") is not None and k.get("cwp") is not None:
        return k.values["mwp"], k.values["cwp"], "given"
    if k.has_timing():
        r = exec_cycles(k.timing_inputs(gpu))
        return r.mwp, r.cwp, "timing model"
    raise IppInputError(f"{k.where()}: needs mwp and cwp (as S3 Table 4 prints them) or the timing-model inputs")


def optimal(k: Kernel, gpu: GpuParams, cond1: str = "and", cond2: str = ">=") -> OptimalSms:
    m, c, _ = mwp_cwp(k, gpu)
    return optimal_active_sms(m, c, k.get("n_warps"), k.mwp_peak_bw(gpu), gpu.num_sms, cond1=cond1, cond2=cond2)


def timing(k: Kernel, gpu: GpuParams, active_sms: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kernel": k.name}
    if k.has_timing():
        r = exec_cycles(k.timing_inputs(gpu), active_sms)
        out.update(r.as_dict(), source="timing model")
        if gpu.freq_hz:
            out["time_s"] = r.exec_cycles / gpu.freq_hz
    else:
        m, c, _ = mwp_cwp(k, gpu)
        out.update(active_sms=active_sms or gpu.num_sms, MWP=m, CWP=c, source="given (S3 Table 4)",
                   case=3 if m > c else 2)
    return out


# --- perf/W over active SMs and energy savings (S3 eq.28, §6.4) -------------------------------------------

@dataclass
class Sweep:
    kernel: str
    absolute: bool                        # False: times and perf relative to all SMs (S3 Table 4 only)
    active_sms: list[int]
    time: list[float]                     # s (absolute) or T(n)/T(all)
    perf: list[float]                     # warp instructions/s (absolute) or 1/time
    runtime_w: list[float]                # W (absolute) or the log factor (relative)
    gpu_w: list[float] = field(default_factory=list)   # absolute only
    notes: list[str] = field(default_factory=list)
    time_unit: str = "relative"          # "s", "cycles" (no freq_hz in the GPU file) or "relative"

    def perf_per_watt(self, which: str) -> list[float]:
        """eq.28 with runtime power, runtime + idle, or power gating (linear in SMs, S3 §6.4.2)."""
        n_all = self.active_sms[-1]
        if which == "runtime":
            power = self.runtime_w
        elif which == "runtime+idle":
            if not self.gpu_w:
                raise IppInputError(f"kernel '{self.kernel}': runtime+idle perf/W needs its runtime power "
                                    "(instructions or rates)")
            power = self.gpu_w
        else:
            full = self.gpu_w[-1] if self.gpu_w else self.runtime_w[-1]
            power = [full * n / n_all for n in self.active_sms]
        return [p / w for p, w in zip(self.perf, power, strict=True)]

    def best(self, which: str) -> int:
        ppw = self.perf_per_watt(which)
        return self.active_sms[max(range(len(ppw)), key=lambda i: (round(ppw[i], 12), -i))]


def sweep(k: Kernel, gpu: GpuParams) -> Sweep:
    grid = list(range(1, gpu.num_sms + 1))
    if k.has_timing() and k.instructions:
        t_in = k.timing_inputs(gpu)
        clock = gpu.freq_hz or 1.0
        work = sum(k.instructions.values()) * t_in.n_warps * t_in.repw_all_sms * gpu.num_sms
        times = [exec_cycles(t_in, n).exec_cycles / clock for n in grid]
        powers = [kernel_power(k, gpu, n, predicted=True).power for n in grid]
        notes = [] if gpu.freq_hz else ["the GPU file has no freq_hz: time in cycles, performance per cycle"]
        return Sweep(k.name, True, grid, times, [work / t for t in times], [p.runtime_power_w for p in powers],
                     [p.gpu_power_w for p in powers], notes, "s" if gpu.freq_hz else "cycles")
    m, c, _ = mwp_cwp(k, gpu)
    peak = k.mwp_peak_bw(gpu)
    n_w = k.get("n_warps")
    notes = ["relative to all SMs: S3 Table 4 gives MWP, CWP and N, not the cycle counts"]
    if m > c:
        rel = [relative_time(m, c, 1.0, 1.0, gpu.num_sms, n)[0] for n in grid]     # case 3: ~ #Repw
    elif peak is not None and m < peak and not math.isclose(m, peak):
        # below the bandwidth limit with every SM, MWP is set by MWP_Without_BW or N, which fewer SMs do not
        # change (MWP_peak_BW only grows): time ~ #Repw, whatever N is
        rel = [gpu.num_sms / n for n in grid]
        notes.append("MWP below MWP_peak_BW: MWP does not change with the SM count")
    else:
        if peak is None or n_w is None:
            raise IppInputError(f"{k.where()}: the SM sweep of a memory-bound kernel needs n_warps and mwp_peak_bw")
        rel = [relative_time(m, c, n_w, peak, gpu.num_sms, n)[0] for n in grid]
    factors = [math.log10(gpu.alpha * n + gpu.beta) for n in grid]
    return Sweep(k.name, False, grid, rel, [1.0 / t for t in rel], factors, [], notes)


def sweep_many(kernels: Sequence[Kernel], gpu: GpuParams, cond1: str = "and",
               cond2: str = ">=") -> tuple[list[Sweep], dict[str, int], list[str]]:
    """Sweeps and eq.34 counts of several kernels; one that lacks an input is skipped with the reason (all of
    them lacking one is an error)."""
    sweeps: list[Sweep] = []
    opt: dict[str, int] = {}
    skipped: list[str] = []
    for k in kernels:
        try:
            opt[k.name] = optimal(k, gpu, cond1, cond2).active_sms
            sweeps.append(sweep(k, gpu))
        except IppInputError as e:
            if len(kernels) == 1:
                raise
            skipped.append(f"{k.name} skipped: {e}")
    if not sweeps:
        raise IppInputError(skipped[0] if len(skipped) == 1 else
                            f"no kernel can be swept ({len(skipped)} skipped; first: {skipped[0]})")
    return sweeps, opt, skipped


def savings(sw: Sweep, n_opt: int, runtime_power_w: float | None = None,
            idle_power_w: float | None = None) -> dict[str, float | None]:
    """Energy saved by running on ``n_opt`` SMs instead of all (S3 §6.4.1-6.4.2), E = P*T:
    Runtime (runtime power only), Runtime+Idle (needs the kernel's runtime and the idle power) and Power gating
    (power linear in active SMs: 30 SMs at 120 W is 4 W per SM)."""
    i_opt, i_all = sw.active_sms.index(n_opt), len(sw.active_sms) - 1
    t_ratio = sw.time[i_opt] / sw.time[i_all]
    f_ratio = sw.runtime_w[i_opt] / sw.runtime_w[i_all]
    out: dict[str, float | None] = {"active_sms": n_opt, "time_ratio": t_ratio,
                                    "runtime": 1 - f_ratio * t_ratio,
                                    "power_gating": 1 - (n_opt / sw.active_sms[i_all]) * t_ratio,
                                    "runtime+idle": None}
    if sw.gpu_w:
        out["runtime+idle"] = 1 - sw.gpu_w[i_opt] * t_ratio / sw.gpu_w[i_all]
    elif runtime_power_w is not None and idle_power_w is not None:
        out["runtime+idle"] = 1 - (idle_power_w + runtime_power_w * f_ratio) * t_ratio / (idle_power_w
                                                                                          + runtime_power_w)
    return out
