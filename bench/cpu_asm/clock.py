"""The core clock a run reports, and whether a second source confirms it.

The native probes (src/module.cpp) time dependency chains of known latency on each thread, right before and after
its timed region: a register-register ``add`` chain (1 cycle on every x86-64 and AArch64 core; the register operand
defeats the add-immediate folding of recent Intel renamers) and, on x86-64, an ``imul`` chain (3 cycles on every
core since Core 2 and Zen 1). They also read the TSC rate. Second sources, in the order they are trusted:

1. perf's cycle counter (when the kernel exposes it; many VMs do not): the cycles the add chain really took;
2. cpufreq's range for the cpu (``cpuinfo_min_freq``..``cpuinfo_max_freq``);
3. the two chains against each other, with the TSC's fixed nominal rate reported beside them: under turbo the core
   legitimately runs above the TSC rate, so the TSC bounds nothing; the imul chain is the independent check there.

When two sources disagree by more than ``TOLERANCE`` the verdict has no clock (``core_hz`` None) and says why: the
row then carries no ``core_mhz`` and no cycles per access, rather than a number nobody can trust.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOLERANCE = 0.20
SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class ClockVerdict:
    core_hz: float | None   # None: the sources disagree (``check`` says how)
    method: str             # how core_hz was measured and what checked it
    check: str              # one sentence for the row's clock_check column


def _off(a: float, b: float) -> float:
    return abs(a / b - 1.0)


def _mhz(hz: float) -> str:
    return f"{hz / 1e6:.0f} MHz"


def cpufreq_range_hz(cpu: int, root: Path = SYS_CPU) -> tuple[float, float] | None:
    """(min, max) from cpufreq in Hz, or None where the kernel has no cpufreq for this cpu (typical in VMs)."""
    d = root / f"cpu{max(cpu, 0)}" / "cpufreq"
    try:
        lo = float((d / "cpuinfo_min_freq").read_text()) * 1e3
        hi = float((d / "cpuinfo_max_freq").read_text()) * 1e3
    except (OSError, ValueError):
        return None
    return (lo, hi) if 0 < lo <= hi else None


@functools.cache
def perf_reading(cpu: int) -> Mapping[str, Any]:
    """perf's cycles over the add chain on ``cpu`` (perf_hz, cycles_per_add), or {'error': why}; read once."""
    from archline.bench.cpu_asm import _kernels

    return dict(_kernels.perf_clock(cpu))


def reconcile(add_hz: float, mul_hz: float = 0.0, tsc_hz: float = 0.0, *, perf: Mapping[str, Any] | None = None,
              cpufreq_hz: tuple[float, float] | None = None) -> ClockVerdict:
    """The verdict for one run's probes (a pure function: every source is an argument)."""
    if not add_hz > 0:
        return ClockVerdict(None, "none", "the clock probe did not run")
    chains = "add chain" + (" + imul chain" if mul_hz > 0 else "")
    if mul_hz > 0 and _off(add_hz, mul_hz) > TOLERANCE:
        return ClockVerdict(None, chains, f"no clock: add chain {_mhz(add_hz)} and imul chain {_mhz(mul_hz)} "
                                          f"disagree by {_off(add_hz, mul_hz):.0%} (a renamer folds one of them)")
    if perf and "perf_hz" in perf:
        p = float(perf["perf_hz"])
        if _off(add_hz, p) > TOLERANCE:
            return ClockVerdict(None, f"{chains}; perf cycles",
                                f"no clock: add chain {_mhz(add_hz)} but perf counts {_mhz(p)} "
                                f"({float(perf.get('cycles_per_add', 0)):.2f} cycles per add)")
        return ClockVerdict(add_hz, f"{chains}; perf cycles",
                            f"perf cycle counter agrees within {_off(add_hz, p):.0%} "
                            f"({float(perf.get('cycles_per_add', 0)):.2f} cycles per add)")
    if cpufreq_hz is not None:
        lo, hi = cpufreq_hz
        if not (1 - TOLERANCE) * lo <= add_hz <= (1 + TOLERANCE) * hi:
            return ClockVerdict(None, f"{chains}; cpufreq range",
                                f"no clock: add chain {_mhz(add_hz)} is outside cpufreq's {_mhz(lo)}-{_mhz(hi)}")
        return ClockVerdict(add_hz, f"{chains}; cpufreq range", f"within cpufreq's {_mhz(lo)}-{_mhz(hi)}")
    if tsc_hz > 0 and _off(add_hz, tsc_hz) <= TOLERANCE:
        return ClockVerdict(add_hz, f"{chains}; tsc", f"within {_off(add_hz, tsc_hz):.0%} of the TSC ({_mhz(tsc_hz)})")
    if mul_hz > 0:
        tsc = (f"; the TSC counts a fixed nominal {_mhz(tsc_hz)}, the core runs {add_hz / tsc_hz:.2f}x that "
               "(turbo or power saving)") if tsc_hz > 0 else ""
        return ClockVerdict(add_hz, f"{chains}; tsc" if tsc_hz > 0 else chains,
                            f"add and imul chains agree within {_off(add_hz, mul_hz):.0%}{tsc}")
    return ClockVerdict(add_hz, chains, "unverified: no perf counter, cpufreq or second chain on this machine")


def verdict_for_run(native_out: Mapping[str, Any], cpu: int) -> ClockVerdict:
    """The verdict for a native run's result dict (effective_clock_hz, mul_chain_hz, tsc_hz) on ``cpu``."""
    perf = perf_reading(cpu)
    return reconcile(float(native_out.get("effective_clock_hz", 0.0)), float(native_out.get("mul_chain_hz", 0.0)),
                     float(native_out.get("tsc_hz", 0.0)), perf=perf, cpufreq_hz=cpufreq_range_hz(cpu))
