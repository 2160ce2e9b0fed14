"""The bench layer's sections of a platform profile: ``[bench]``, ``[emulate]`` and ``[dvfs]`` (pydantic models on
the one input boundary, :mod:`archline.common.inputs`), and the profile as the runner sees it. The ``[[meters]]``
entries are powermon's schema (:mod:`archline.powermon.spec`); the model constants are fit's profile
(:mod:`archline.formats.platforms.profiles`), which lets these tables through untouched.

Schema (every key optional)::

    [bench]
    backend = "<back end>"           # one that runs on real hardware (archline bench list); --emulate overrides
    device = "0"                     # back-end device selector
    kernels = ["intensity", "cache"] # which kernels a run covers (bench run --all-kernels)
    precisions = ["sp", "dp"]        # of the intensity sweep
    reps = 100                       # minimum repetitions per timed region (S0 §IV-A: 100)
    warmup_reps = 3
    min_samples = 200                # meter samples per region (at 128 Hz: >= 1.56 s)
    max_region_s = 10.0              # longest timed region
    ci_rel = 0.01                    # early stop once the 95% CI half-width of the median is below this
    min_regions = 3                  # regions (each: reps repetitions) before the early stop may fire
    max_regions = 9
    idle_s = 2.0                     # idle power before the first point and after each
    power_caps_w = [150.0, 200.0]    # caps to sweep (NVML / RAPL); empty = leave the cap alone
    dvfs_settings = ["S1", "S4"]     # ids from [dvfs].settings to sweep
    [bench.sweep]                    # point ranges (defaults: model.md §6.4 counts)
    intensity_sp = { min = 0.25, max = 64.0, points = 25 }
    intensity_dp = { min = 0.0625, max = 64.0, points = 36 }

    [emulate]
    observed_flop_per_s_sp = 1398e9  # sustained rates the emulated device runs at (else the peaks)
    observed_byte_per_s = 170e9      # ... _dp, _l1/_l2/_l3/_shared_byte_per_s, _rand_per_s, _int_per_s
    idle_w = 39.6                    # else constants.idle_w, else 0.3 * pi0 (said in every row's note)
    time_compression = 50.0          # device seconds per wall second
    noise_rel = 0.002                # relative gaussian noise on every sample (0 = none)

    [dvfs]
    core_clock_files = ["/sys/kernel/debug/clock/override.gbus/rate", "/sys/kernel/debug/clock/override.gbus/state"]
    settings = [{ id = "S1", core_mhz = 852, mem_mhz = 924, core_v = 1.03, mem_v = 1.35 }]
"""

from __future__ import annotations

import math
import os
import platform as _platform
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from archline.bench.errors import BenchError
from archline.bench.registry import check_name, of_kind
from archline.common.inputs import Strict, validate
from archline.formats.platforms.profiles import Constant, Platform, find_profile, load_platform, load_profile
from archline.powermon.spec import MeterSpec, parse_meters

Kernel = Literal["intensity", "cache", "chase", "int", "ceilings", "ceil_flop", "ceil_mem"]
Precision = Literal["sp", "dp", "int32"]


class ProfileSectionError(BenchError):
    """A [bench]/[meters]/[emulate]/[dvfs] section is malformed: the message names the key."""


class SweepRange(Strict):
    min: float = Field(default=0.25, gt=0, allow_inf_nan=False)
    max: float = Field(default=64.0, gt=0, allow_inf_nan=False)
    points: int = Field(default=25, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SweepRange:
        if self.max < self.min:
            raise ValueError(f"max ({self.max:g}) is below min ({self.min:g})")
        return self

    def values(self) -> list[float]:
        if self.points == 1:
            return [self.min]
        lo, hi = math.log(self.min), math.log(self.max)
        return [math.exp(lo + (hi - lo) * i / (self.points - 1)) for i in range(self.points)]


#: model.md §6.4: 25 single-precision and 36 double-precision intensity samples per setting.
DEFAULT_RANGES: dict[str, SweepRange] = {"intensity_sp": SweepRange(min=0.25, max=64.0, points=25),
                                         "intensity_dp": SweepRange(min=0.0625, max=64.0, points=36)}
QUICK_RANGES: dict[str, SweepRange] = {"intensity_sp": SweepRange(min=0.25, max=64.0, points=9),
                                       "intensity_dp": SweepRange(min=0.0625, max=64.0, points=11)}



def quick_ranges(ranges: Mapping[str, SweepRange]) -> dict[str, SweepRange]:
    """``--quick``'s ranges for a profile whose sweep is ``ranges``: the profile's own span with at most the quick
    sweep's point count, so a quick sweep is never larger (nor wider) than the profile's own."""
    out = dict(QUICK_RANGES)
    for k, r in ranges.items():
        q = QUICK_RANGES.get(k)
        out[k] = r if q is None else SweepRange(min=r.min, max=r.max, points=min(q.points, r.points))
    return out


class Ranges(Strict):
    intensity_sp: SweepRange = DEFAULT_RANGES["intensity_sp"]
    intensity_dp: SweepRange = DEFAULT_RANGES["intensity_dp"]

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, data: Any) -> Any:
        """A range given in part keeps the other keys of its default range."""
        if not isinstance(data, dict):
            return data
        return {k: {**DEFAULT_RANGES[k].model_dump(), **v} if isinstance(v, dict) and k in DEFAULT_RANGES else v
                for k, v in data.items()}

    def as_dict(self) -> dict[str, SweepRange]:
        return {"intensity_sp": self.intensity_sp, "intensity_dp": self.intensity_dp}


#: a power cap from this value on is no machine's (docs/errors.md: profile values from 1 MW are refused)
MAX_POWER_CAP_W = 1e6


def check_power_caps(caps: tuple[float, ...]) -> None:
    """Power caps are positive, finite watts below :data:`MAX_POWER_CAP_W` (ValueError naming the value)."""
    for c in caps:
        if not (math.isfinite(c) and 0 < c < MAX_POWER_CAP_W):
            raise ValueError(f"power caps must be positive watts below {MAX_POWER_CAP_W:g} (1 MW), got {c:g}")



class BenchSection(Strict):
    backend: str | None = None       #: a registered back end not chosen by --emulate (archline.bench.registry)
    device: str | None = None

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str | None) -> str | None:
        return check_name(v, emulated=False)
    kernels: tuple[Kernel, ...] = ("intensity",)
    precisions: tuple[Precision, ...] = ("sp", "dp")
    reps: int = Field(default=100, ge=1)
    warmup_reps: int = Field(default=3, ge=0)
    min_samples: int = Field(default=200, ge=1)
    max_region_s: float = Field(default=10.0, gt=0)
    ci_rel: float = Field(default=0.01, gt=0)
    min_regions: int = Field(default=3, ge=1)
    max_regions: int = Field(default=9, ge=1)
    idle_s: float = Field(default=2.0, ge=0)
    power_caps_w: tuple[float, ...] = ()
    dvfs_settings: tuple[str, ...] = ()
    sweep: Ranges = Ranges()

    @model_validator(mode="after")
    def _consistent(self) -> BenchSection:
        if self.min_regions > self.max_regions:
            raise ValueError(f"min_regions ({self.min_regions}) exceeds max_regions ({self.max_regions})")
        try:
            check_power_caps(self.power_caps_w)
        except ValueError as e:
            raise ValueError(f"power_caps_w: {e}") from None
        return self

    @property
    def ranges(self) -> Mapping[str, SweepRange]:
        return self.sweep.as_dict()


#: [emulate] rates (operations per second): outside this range no device (the emulator's RATE_RANGE_PER_S says why;
#: a rate of 1e-300 made the emulator's sleep overflow)
RATE_MIN, RATE_MAX = 1e6, 1e18


class EmulateSection(Strict):
    observed_flop_per_s_sp: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_flop_per_s_dp: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_byte_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_l1_byte_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_l2_byte_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_l3_byte_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_shared_byte_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_rand_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    observed_int_per_s: float | None = Field(default=None, ge=RATE_MIN, le=RATE_MAX)
    idle_w: float | None = Field(default=None, ge=0, le=1e7)
    time_compression: float = Field(default=50.0, ge=1e-3, le=1e6)
    noise_rel: float = Field(default=0.0, ge=0, le=1.0)


class DvfsSetting(Strict):
    id: str
    core_mhz: float | None = Field(default=None, gt=0)
    mem_mhz: float | None = Field(default=None, gt=0)
    core_v: float | None = Field(default=None, gt=0)
    mem_v: float | None = Field(default=None, gt=0)


class DvfsSection(Strict):
    core_clock_files: tuple[str, ...] = Field(default=(), min_length=0, max_length=2)
    mem_clock_files: tuple[str, ...] = Field(default=(), min_length=0, max_length=2)
    settings: tuple[DvfsSetting, ...] = ()
    source: str = ""

    @model_validator(mode="after")
    def _pairs(self) -> DvfsSection:
        for k in ("core_clock_files", "mem_clock_files"):
            if len(getattr(self, k)) not in (0, 2):
                raise ValueError(f"{k}: expected [rate_file, state_file] (S1 §5.2.2)")
        return self


def parse_bench(table: object, origin: str) -> BenchSection:
    return validate(BenchSection, table, f"{origin}: [bench]", error=ProfileSectionError)


def parse_emulate(table: object, origin: str) -> EmulateSection:
    return validate(EmulateSection, table, f"{origin}: [emulate]", error=ProfileSectionError)


def parse_dvfs(table: object, origin: str) -> DvfsSection:
    return validate(DvfsSection, table, f"{origin}: [dvfs]", error=ProfileSectionError)


@dataclass
class BenchProfile:
    """A platform profile as the runner sees it: the model constants plus the bench sections."""

    platform: Platform
    bench: BenchSection
    meters: tuple[MeterSpec, ...]
    emulate: EmulateSection
    dvfs: DvfsSection
    detected_note: str = ""          # localhost: what was detected and what is missing, in words

    @property
    def name(self) -> str:
        return self.platform.name

    def meter(self, name: str) -> MeterSpec:
        for m in self.meters:
            if m.name == name:
                return m
        raise ProfileSectionError(f"platform '{self.name}' has no meter '{name}' "
                                  f"(configured: {', '.join(m.name for m in self.meters) or 'none'})")

    def dvfs_setting(self, sid: str) -> DvfsSetting:
        for s in self.dvfs.settings:
            if s.id == sid:
                return s
        raise ProfileSectionError(f"platform '{self.name}': no [dvfs] setting '{sid}' "
                                  f"(known: {', '.join(s.id for s in self.dvfs.settings) or 'none'})")


def bench_profile(platform: Platform, detected_note: str = "") -> BenchProfile:
    raw, origin = platform.raw, platform.origin
    prof = BenchProfile(platform=platform, bench=parse_bench(raw.get("bench", {}), origin),
                        meters=parse_meters(raw.get("meters", []), origin, ProfileSectionError),
                        emulate=parse_emulate(raw.get("emulate", {}), origin),
                        dvfs=parse_dvfs(raw.get("dvfs", {}), origin), detected_note=detected_note)
    for sid in prof.bench.dvfs_settings:
        prof.dvfs_setting(sid)
    return prof


def load_bench_profile(name_or_path: str) -> BenchProfile:
    """A profile by name or path; ``localhost`` is generated from this machine unless a user's file shadows it."""
    if name_or_path == "localhost":       # a user's file, else detected (not the measured-peaks platform)
        found = find_profile("localhost")
        return bench_profile(load_profile(found)) if found is not None else localhost_profile()
    return bench_profile(load_platform(name_or_path))


def localhost_profile(powercap_root: str | os.PathLike[str] | None = None) -> BenchProfile:
    """This machine: CPU kernels through cpu_asm (intensity in dp), RAPL if it is readable, otherwise time only
    (said plainly). A user's ``localhost.toml`` among the platform profiles replaces it."""
    from archline.powermon.kinds import detected

    cpu = of_kind("cpu")[0]   # the registry's first CPU back end runs this machine's kernels
    kind, keys, found = detected(powercap_root=powercap_root)     # RAPL, where this user can read it
    meters: tuple[MeterSpec, ...] = ()
    if kind is not None:
        meters = (MeterSpec(name=kind.name, kind=kind.name, **keys),)
        note = f"localhost: energy from {found}"
    else:
        note = f"localhost: time only, no energy: {found}"
    # the profile's notes name its default kernels; the rows' note only the meter (a run may pick another back end)
    plat = Platform(
        name="localhost",
        title=f"this machine ({socket.gethostname()}, {_platform.machine()}, {os.cpu_count()} CPUs)",
        constants={"pi0": Constant(None, "unknown until fitted")}, origin="<detected>", device_kind="cpu",
        notes=note.replace("localhost: ", f"localhost: CPU kernels ({cpu}); ", 1), raw={"name": "localhost"},
    )
    # the intensity sweep in dp only: a user's localhost.toml (platforms dir) asks for sp as well
    return BenchProfile(platform=plat, bench=BenchSection(backend=cpu, precisions=("dp",)), meters=meters,
                        emulate=EmulateSection(), dvfs=DvfsSection(), detected_note=note)
