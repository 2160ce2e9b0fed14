"""What a run measures: its settings (from the profile's ``[bench]`` and the options), and its points (kernel
specs from the back end's sweep, with the options' overrides, times the caps and DVFS settings to sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archline.bench.config.options import RunOptions
from archline.bench.config.profile import BenchProfile, BenchSection, quick_ranges
from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import Backend, KernelSpec
from archline.powermon.errors import MAX_LOST_SHARE

#: without a meter (or with --min-time), a region lasts at least this long (device seconds); quick: QUICK_REGION_S
MIN_REGION_S = 0.1
QUICK_REGION_S = 0.03
#: --quick's whole roofline (:func:`quick_roofline`): shorter regions, more of them, so the early stop on a tight
#: CI can fire (3 regions need a spread under ~1% for a 2% CI; 8 allow ~2.4%) and a noisy point still ends soon
ROOFLINE_REGION_S = 0.03
ROOFLINE_REGIONS = (4, 12)
#: ... but its peak and DRAM points (the intensity kernel) get 100 ms regions: at 30 ms the DP peak read 0.89x
#: likwid-bench on the quiet 2-core Zen 3 VM, with 100 ms regions 95.3 against 90-97 GFLOP/s (issue 34)
ROOFLINE_INTENSITY_REGION_S = 0.1


@dataclass
class RunSettings:
    """Everything that shapes the measurement of a point; ``quick`` shrinks it to about a minute."""

    reps: int = 100                    #: minimum repetitions per region ([bench] reps; S0: 100)
    fixed_reps: int | None = None      #: --reps: exactly this many per region
    warmup_reps: int = 3
    min_samples: int = 200
    min_region_s: float = MIN_REGION_S
    max_region_s: float = 10.0
    ci_rel: float = 0.01
    min_regions: int = 3
    max_regions: int = 9
    idle_s: float = 2.0
    traces: bool = True
    max_lost: float = MAX_LOST_SHARE     #: a region whose meter lost more than this share of its samples fails
    intensity_region_s: float | None = None  #: the quick roofline's intensity points' region (None: min_region_s)

    @classmethod
    def from_section(cls, b: BenchSection, *, quick: bool = False, reps: int | None = None,
                     min_time_s: float | None = None, max_lost: float | None = None,
                     roofline: bool = False) -> RunSettings:
        s = cls(reps=b.reps, fixed_reps=reps, warmup_reps=b.warmup_reps, min_samples=b.min_samples,
                max_region_s=b.max_region_s, ci_rel=b.ci_rel, min_regions=b.min_regions, max_regions=b.max_regions,
                idle_s=b.idle_s, max_lost=MAX_LOST_SHARE if max_lost is None else max_lost)
        if quick:
            s.reps = min(s.reps, 20)
            s.min_samples = min(s.min_samples, 128)
            s.min_region_s = QUICK_REGION_S
            s.min_regions, s.max_regions = min(s.min_regions, 2), min(s.max_regions, 3)
            s.ci_rel = max(s.ci_rel, 0.02)
            s.idle_s = min(s.idle_s, 0.5)
            s.warmup_reps = 0   # the calibration run warms up; a meter still gets EDGE_SAMPLES periods of it
            if roofline:
                s.min_region_s = ROOFLINE_REGION_S
                s.min_regions, s.max_regions = ROOFLINE_REGIONS
                s.intensity_region_s = ROOFLINE_INTENSITY_REGION_S
        if min_time_s is not None:   # --min-time rules every point
            s.intensity_region_s = None
            s.min_region_s = min_time_s
            s.max_region_s = max(s.max_region_s, min_time_s)
        return s


@dataclass
class Point:
    """One sweep point with the settings it runs under."""

    spec: KernelSpec
    power_cap_w: float | None = None
    dvfs_id: str | None = None

    @property
    def point_id(self) -> str:
        parts = [self.spec.label]
        if self.power_cap_w is not None:
            parts.append(f"cap={self.power_cap_w:g}W")
        if self.dvfs_id is not None:
            parts.append(f"dvfs={self.dvfs_id}")
        return "|".join(parts)


def kernel_precisions(opts: RunOptions, bench: BenchSection) -> list[tuple[str, tuple[str, ...]]]:
    """The one default-precision rule, on every path: the intensity sweep runs the profile's [bench] precisions
    (sp and dp unless it says otherwise), ``int`` runs int32, the other kernels dp; ``--precision`` overrides."""
    kernels = bench.kernels if opts.all_kernels else (opts.kernels or ("intensity",))
    out = []
    for k in kernels:
        if opts.precisions:
            precs: tuple[str, ...] = tuple(opts.precisions)
        elif k == "intensity":
            precs = tuple(bench.precisions)
        else:
            precs = ("int32",) if k == "int" else ("dp",)
        out.append((k, precs))
    return out


def _applicable(backend: Backend, opts: RunOptions, kernel: str, precs: tuple[str, ...],
                notes: list[str]) -> tuple[str, ...]:
    """``precs`` less those the back end's ``kernel`` cannot run. A ``--precision`` given for a kernel named with
    ``--kernel`` that does not run at it is refused before any work (a run whose every point fails, or a chase
    that silently runs int32 rows, says nothing useful); with ``--all-kernels`` it is left out with a note."""
    allowed = backend.kernel_precisions(kernel)
    if not allowed or not opts.precisions:
        return precs
    bad = [p for p in precs if p not in allowed]
    if not bad:
        return precs
    why = (f"kernel '{kernel}' on {backend.name} runs at {' or '.join(allowed)}"
           + (" (it chases int32 indices: --precision does not apply)" if kernel == "chase" else ""))
    if not opts.all_kernels:
        raise BenchError(f"--precision {','.join(bad)} does not apply: {why}")
    keep = tuple(p for p in precs if p in allowed) or tuple(allowed[:1])
    notes.append(f"--precision {','.join(bad)} left out for '{kernel}': {why}")
    return keep


def quick_roofline(opts: RunOptions) -> bool:
    """``--quick`` with no kernel, precision, store or working set named (the main job): the whole roofline in few
    points (a back end's ``roofline``: SP and DP peaks, L1/L2/L3 and DRAM), not the intensity sweep, which any of
    those options still asks for. Only a back end with a ``roofline`` takes it: real kernels, measured or under
    ``--emulate``'s power schedule (localhost before a fit); the emulated device has none and runs its sweep."""
    return (opts.quick and opts.kernels is None and not opts.all_kernels and opts.store is None
            and opts.working_set_bytes is None and opts.precisions is None)


def roofline_precisions(profile: BenchProfile) -> tuple[str, ...]:
    """The quick roofline's peaks: SP and DP on the detected localhost (whose intensity sweep runs DP only, to
    keep it short); a profile file's [bench] precisions (default sp and dp) where one is used."""
    if profile.platform.origin == "<detected>":
        return ("sp", "dp")
    return tuple(p for p in profile.bench.precisions if p in ("sp", "dp")) or ("dp",)


def make_points(backend: Backend, opts: RunOptions, profile: BenchProfile, power_caps_w: Sequence[float | None],
                dvfs_ids: Sequence[str | None]) -> tuple[list[Point], list[str]]:
    """The sweep's points, and notes on what was left out and why (a variant the device cannot run)."""
    specs: list[KernelSpec] = []
    notes: list[str] = []
    if quick_roofline(opts) and backend.has_roofline:
        for t in opts.threads or (None,):     # a sweep over thread counts: each count its own points
            specs.extend(backend.roofline(roofline_precisions(profile), threads=t, cpus=opts.cpus))
        return [Point(s, cap, d) for d in dvfs_ids for cap in power_caps_w for s in specs], notes
    for kernel, precs in kernel_precisions(opts, profile.bench):
        for p in _applicable(backend, opts, kernel, precs, notes):
            kw: dict[str, Any] = {"quick": opts.quick}
            if backend.sweeps_profile_ranges:
                # --quick: never more points (nor a wider span) than the profile's own sweep
                kw["ranges"] = quick_ranges(profile.bench.ranges) if opts.quick else dict(profile.bench.ranges)
            if opts.store is not None:
                kw["store"] = opts.store     # the back end refuses it for a kernel without a store stream
            if opts.cpus is not None:
                kw["cpus"] = opts.cpus
            for t in opts.threads or (None,):     # a sweep over thread counts: each count its own points
                try:
                    specs.extend(backend.sweep(kernel, p, **kw, **({} if t is None else {"threads": t})))
                except UnsupportedError as e:
                    notes.append(str(e))
    over: dict[str, Any] = {}
    if opts.working_set_bytes is not None:
        over["working_set_bytes"] = opts.working_set_bytes
    if over or opts.isa is not None:
        specs = [KernelSpec(s.backend, s.kernel, s.precision, s.level,
                            {**s.params, **over, **({"isa": opts.isa} if opts.isa and "isa" in s.params else {})})
                 for s in specs]
    return [Point(s, cap, d) for d in dvfs_ids for cap in power_caps_w for s in specs], notes
