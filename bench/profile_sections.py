"""The bench layer's sections of a platform profile: ``[bench]``, ``[[meters]]``, ``[emulate]`` and ``[dvfs]``.

``fit/platforms/profiles.py`` reads the model constants and lets these four top-level tables through untouched; this
module gives them their meaning and checks them, naming any key it does not know (with the nearest known one).

Schema (every key optional unless marked)::

    [bench]
    backend = "cuda"                 # cpu_asm | opencl | cuda (what runs on real hardware; --emulate overrides)
    device = "0"                     # back-end device selector
    kernels = ["intensity", "cache"] # which kernels a run covers
    precisions = ["sp", "dp"]
    reps = 100                       # minimum repetitions per timed region (S0 §IV-A: 100)
    warmup_reps = 3
    min_samples = 200                # meter samples per point (at 128 Hz: >= 1.56 s)
    max_region_s = 10.0              # longest timed region before giving up on a tight CI
    ci_rel = 0.01                    # early stop once the 95% CI half-width of the median is below this
    min_regions = 3                  # regions (each: reps repetitions) before the early stop may fire
    max_regions = 9
    idle_s = 2.0                     # idle power before and after each point set
    power_caps_w = [150.0, 200.0]    # caps to sweep (NVML / RAPL); empty = leave the cap alone
    dvfs_settings = ["S1", "S4"]     # ids from [dvfs].settings to sweep
    [bench.sweep]                    # point ranges (defaults: model.md §6.4 counts)
    intensity_sp = { min = 0.25, max = 64.0, points = 25 }
    intensity_dp = { min = 0.0625, max = 64.0, points = 36 }

    [[meters]]
    name = "powermon"                # required, unique
    kind = "powermon2"               # required: powermon2 | rapl | nvml
    port = "/dev/ttyUSB0"            # powermon2: serial device or pyserial URL
    rate_hz = 128
    channels = [                     # powermon2: channel -> rail -> device
      { id = 0, rail = "pcie_slot_12v", device = "gpu", nominal_v = 12.0, r_sense_ohm = 0.00422, share = 0.25 },
    ]
    zones = ["package-0", "dram"]    # rapl
    index = 0                        # nvml

    [emulate]
    observed_flop_per_s_sp = 1398e9  # sustained rates the emulated device runs at (else the peaks)
    observed_flop_per_s_dp = 196e9
    observed_byte_per_s = 170e9
    idle_w = 39.6                    # else constants.idle_w, else 0.3 * pi0 (said in every row's note)
    time_compression = 50.0          # device seconds per wall second
    noise_rel = 0.002                # relative gaussian noise on every sample (0 = none)

A channel's ``share`` is the fraction of the device's power the emulator draws through it (they sum to 1 per
device); real hardware ignores it.
"""

from __future__ import annotations

import difflib
import math
import os
import platform as _platform
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.fit.errors import PlatformNotFoundError
from archline.fit.platforms.profiles import Constant, Platform, load_platform

METER_KINDS = ("powermon2", "rapl", "nvml")
BACKEND_NAMES = ("cpu_asm", "opencl", "cuda")
KERNEL_NAMES = ("intensity", "cache", "chase", "int")
PRECISION_NAMES = ("sp", "dp", "int32")

#: Stock PowerMon 2 shunt (powermon2_protocol.md) and its full-scale current.
STOCK_R_SENSE_OHM = 0.00422
ADC_FULL_SCALE_V = 0.10584
VOLTS_FULL_SCALE_V = 26.52


class ProfileSectionError(BenchError):
    """A [bench]/[meters]/[emulate]/[dvfs] section is malformed: the message names the key."""


def _unknown(keys: Sequence[str], known: Sequence[str], where: str) -> None:
    for k in keys:
        if k not in known:
            near = difflib.get_close_matches(k, known, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(sorted(known))})"
            raise ProfileSectionError(f"{where}: unknown key '{k}'{hint}")


def _num(v: Any, where: str, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ProfileSectionError(f"{where}: expected a number, got {v!r}")
    f = float(v)
    if positive and f <= 0:
        raise ProfileSectionError(f"{where}: must be positive, got {v!r}")
    if minimum is not None and f < minimum:
        raise ProfileSectionError(f"{where}: must be at least {minimum:g}, got {v!r}")
    return f


def _int(v: Any, where: str, *, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProfileSectionError(f"{where}: expected an integer, got {v!r}")
    if v < minimum:
        raise ProfileSectionError(f"{where}: must be at least {minimum}, got {v}")
    return v


def _str_list(v: Any, where: str, allowed: Sequence[str] | None = None) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ProfileSectionError(f"{where}: expected a list of strings, got {v!r}")
    if allowed is not None:
        for x in v:
            if x not in allowed:
                raise ProfileSectionError(f"{where}: unknown value '{x}' (known: {', '.join(allowed)})")
    return tuple(v)


def _table(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ProfileSectionError(f"{where}: must be a table")
    return v


# --- [bench] ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepRange:
    min_flop_per_byte: float
    max_flop_per_byte: float
    points: int

    def values(self) -> list[float]:
        if self.points == 1:
            return [self.min_flop_per_byte]
        lo, hi = math.log(self.min_flop_per_byte), math.log(self.max_flop_per_byte)
        return [math.exp(lo + (hi - lo) * i / (self.points - 1)) for i in range(self.points)]


#: model.md §6.4: 25 single-precision and 36 double-precision intensity samples per setting.
DEFAULT_RANGES: dict[str, SweepRange] = {
    "intensity_sp": SweepRange(0.25, 64.0, 25),
    "intensity_dp": SweepRange(0.0625, 64.0, 36),
}
QUICK_RANGES: dict[str, SweepRange] = {
    "intensity_sp": SweepRange(0.25, 64.0, 9),
    "intensity_dp": SweepRange(0.0625, 64.0, 11),
}


@dataclass(frozen=True)
class BenchSection:
    backend: str | None = None
    device: str | None = None
    kernels: tuple[str, ...] = ("intensity",)
    precisions: tuple[str, ...] = ("sp", "dp")
    reps: int = 100
    warmup_reps: int = 3
    min_samples: int = 200
    max_region_s: float = 10.0
    ci_rel: float = 0.01
    min_regions: int = 3
    max_regions: int = 9
    idle_s: float = 2.0
    power_caps_w: tuple[float, ...] = ()
    dvfs_settings: tuple[str, ...] = ()
    ranges: Mapping[str, SweepRange] = field(default_factory=lambda: dict(DEFAULT_RANGES))


_BENCH_KEYS = ("backend", "device", "kernels", "precisions", "reps", "warmup_reps", "min_samples", "max_region_s",
               "ci_rel", "min_regions", "max_regions", "idle_s", "power_caps_w", "dvfs_settings", "sweep")
_RANGE_KEYS = ("min", "max", "points")


def parse_bench(table: Any, origin: str) -> BenchSection:
    where = f"{origin}: [bench]"
    t = _table(table, where)
    _unknown(list(t), _BENCH_KEYS, where)
    kw: dict[str, Any] = {}
    if "backend" in t:
        if t["backend"] not in BACKEND_NAMES:
            raise ProfileSectionError(f"{where}: backend must be one of {', '.join(BACKEND_NAMES)}, "
                                      f"got {t['backend']!r}")
        kw["backend"] = t["backend"]
    if "device" in t:
        kw["device"] = str(t["device"])
    if "kernels" in t:
        kw["kernels"] = _str_list(t["kernels"], f"{where} kernels", KERNEL_NAMES)
    if "precisions" in t:
        kw["precisions"] = _str_list(t["precisions"], f"{where} precisions", PRECISION_NAMES)
    for k in ("reps", "min_samples", "min_regions", "max_regions"):
        if k in t:
            kw[k] = _int(t[k], f"{where} {k}", minimum=1)
    if "warmup_reps" in t:
        kw["warmup_reps"] = _int(t["warmup_reps"], f"{where} warmup_reps", minimum=0)
    for k in ("max_region_s", "ci_rel"):
        if k in t:
            kw[k] = _num(t[k], f"{where} {k}", positive=True)
    if "idle_s" in t:
        kw["idle_s"] = _num(t["idle_s"], f"{where} idle_s", minimum=0.0)
    if "power_caps_w" in t:
        caps = t["power_caps_w"]
        if not isinstance(caps, list):
            raise ProfileSectionError(f"{where} power_caps_w: expected a list of watts")
        kw["power_caps_w"] = tuple(_num(c, f"{where} power_caps_w", positive=True) for c in caps)
    if "dvfs_settings" in t:
        kw["dvfs_settings"] = _str_list(t["dvfs_settings"], f"{where} dvfs_settings")
    if "sweep" in t:
        sw = _table(t["sweep"], f"{where}.sweep")
        _unknown(list(sw), tuple(DEFAULT_RANGES), f"{where}.sweep")
        ranges = dict(DEFAULT_RANGES)
        for name, r in sw.items():
            w = f"{where}.sweep.{name}"
            rt = _table(r, w)
            _unknown(list(rt), _RANGE_KEYS, w)
            lo = _num(rt.get("min", DEFAULT_RANGES[name].min_flop_per_byte), f"{w}.min", positive=True)
            hi = _num(rt.get("max", DEFAULT_RANGES[name].max_flop_per_byte), f"{w}.max", positive=True)
            if hi < lo:
                raise ProfileSectionError(f"{w}: max ({hi:g}) is below min ({lo:g})")
            ranges[name] = SweepRange(lo, hi, _int(rt.get("points", DEFAULT_RANGES[name].points), f"{w}.points",
                                                   minimum=1))
        kw["ranges"] = ranges
    out = BenchSection(**kw)
    if out.min_regions > out.max_regions:
        raise ProfileSectionError(f"{where}: min_regions ({out.min_regions}) exceeds max_regions ({out.max_regions})")
    return out


# --- [[meters]] -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChannelSpec:
    id: int
    rail: str
    device: str
    nominal_v: float
    r_sense_ohm: float = STOCK_R_SENSE_OHM
    share: float | None = None

    @property
    def full_scale_a(self) -> float:
        return ADC_FULL_SCALE_V / self.r_sense_ohm


@dataclass(frozen=True)
class MeterSpec:
    name: str
    kind: str
    port: str | None = None
    rate_hz: float = 128.0
    channels: tuple[ChannelSpec, ...] = ()
    zones: tuple[str, ...] = ()
    index: int = 0

    def devices(self) -> list[str]:
        return sorted({c.device for c in self.channels})


_METER_KEYS = ("name", "kind", "port", "rate_hz", "channels", "zones", "index")
_CHANNEL_KEYS = ("id", "rail", "device", "nominal_v", "r_sense_ohm", "share")


def parse_meters(value: Any, origin: str) -> tuple[MeterSpec, ...]:
    if isinstance(value, dict):  # a single [meters] table is accepted as a one-element list
        value = [value]
    if not isinstance(value, list):
        raise ProfileSectionError(f"{origin}: [[meters]] must be an array of tables")
    out: list[MeterSpec] = []
    names: set[str] = set()
    for i, m in enumerate(value):
        where = f"{origin}: meters[{i}]"
        t = _table(m, where)
        _unknown(list(t), _METER_KEYS, where)
        for req in ("name", "kind"):
            if req not in t:
                raise ProfileSectionError(f"{where}: missing '{req}'")
        name, kind = str(t["name"]), t["kind"]
        where = f"{origin}: meters.{name}"
        if name in names:
            raise ProfileSectionError(f"{where}: meter name used twice")
        names.add(name)
        if kind not in METER_KINDS:
            raise ProfileSectionError(f"{where}: kind must be one of {', '.join(METER_KINDS)}, got {kind!r}")
        chans: list[ChannelSpec] = []
        for j, c in enumerate(t.get("channels", [])):
            cw = f"{where}.channels[{j}]"
            ct = _table(c, cw)
            _unknown(list(ct), _CHANNEL_KEYS, cw)
            for req in ("id", "rail", "nominal_v"):
                if req not in ct:
                    raise ProfileSectionError(f"{cw}: missing '{req}'")
            cid = _int(ct["id"], f"{cw}.id")
            if cid > 7:
                raise ProfileSectionError(f"{cw}.id: PowerMon 2 has channels 0-7, got {cid}")
            nominal_v = _num(ct["nominal_v"], f"{cw}.nominal_v", positive=True)
            if nominal_v > VOLTS_FULL_SCALE_V:
                raise ProfileSectionError(f"{cw}.nominal_v: {nominal_v:g} V is above the meter's "
                                          f"{VOLTS_FULL_SCALE_V} V full scale")
            share = _num(ct["share"], f"{cw}.share", minimum=0.0) if "share" in ct else None
            chans.append(ChannelSpec(cid, str(ct["rail"]), str(ct.get("device", "device")), nominal_v,
                                     _num(ct.get("r_sense_ohm", STOCK_R_SENSE_OHM), f"{cw}.r_sense_ohm",
                                          positive=True), share))
        ids = [c.id for c in chans]
        if len(set(ids)) != len(ids):
            raise ProfileSectionError(f"{where}.channels: channel id used twice ({sorted(ids)})")
        if kind == "powermon2" and not chans:
            raise ProfileSectionError(f"{where}: a powermon2 meter needs 'channels' (channel -> rail -> device)")
        for dev in {c.device for c in chans}:
            shares = [c.share for c in chans if c.device == dev]
            if any(s is not None for s in shares):
                if any(s is None for s in shares):
                    raise ProfileSectionError(f"{where}: give 'share' on every channel of device '{dev}' or none")
                tot = sum(s for s in shares if s is not None)
                if abs(tot - 1.0) > 1e-6:
                    raise ProfileSectionError(f"{where}: the shares of device '{dev}' sum to {tot:g}, not 1")
        out.append(MeterSpec(
            name=name, kind=kind, port=None if "port" not in t else str(t["port"]),
            rate_hz=_num(t.get("rate_hz", 128.0), f"{where}.rate_hz", positive=True), channels=tuple(chans),
            zones=_str_list(t["zones"], f"{where}.zones") if "zones" in t else (),
            index=_int(t.get("index", 0), f"{where}.index"),
        ))
    return tuple(out)


# --- [emulate] --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EmulateSection:
    observed_flop_per_s_sp: float | None = None
    observed_flop_per_s_dp: float | None = None
    observed_byte_per_s: float | None = None
    observed_l1_byte_per_s: float | None = None
    observed_l2_byte_per_s: float | None = None
    observed_l3_byte_per_s: float | None = None
    observed_shared_byte_per_s: float | None = None
    observed_rand_per_s: float | None = None
    observed_int_per_s: float | None = None
    idle_w: float | None = None
    time_compression: float = 50.0
    noise_rel: float = 0.0


_EMULATE_KEYS = tuple(EmulateSection.__dataclass_fields__)


def parse_emulate(table: Any, origin: str) -> EmulateSection:
    where = f"{origin}: [emulate]"
    t = _table(table, where)
    _unknown(list(t), _EMULATE_KEYS, where)
    kw: dict[str, Any] = {}
    for k, v in t.items():
        kw[k] = _num(v, f"{where} {k}", minimum=0.0 if k in ("noise_rel", "idle_w") else None,
                     positive=k not in ("noise_rel", "idle_w"))
    return EmulateSection(**kw)


# --- [dvfs] -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DvfsSetting:
    id: str
    core_mhz: float | None = None
    mem_mhz: float | None = None
    core_v: float | None = None
    mem_v: float | None = None


@dataclass(frozen=True)
class DvfsSection:
    core_clock_files: tuple[str, ...] = ()
    mem_clock_files: tuple[str, ...] = ()
    settings: tuple[DvfsSetting, ...] = ()
    source: str = ""


_DVFS_KEYS = ("core_clock_files", "mem_clock_files", "settings", "source")
_SETTING_KEYS = ("id", "core_mhz", "mem_mhz", "core_v", "mem_v")


def parse_dvfs(table: Any, origin: str) -> DvfsSection:
    where = f"{origin}: [dvfs]"
    t = _table(table, where)
    _unknown(list(t), _DVFS_KEYS, where)
    settings: list[DvfsSetting] = []
    for i, s in enumerate(t.get("settings", [])):
        sw = f"{where}.settings[{i}]"
        st = _table(s, sw)
        _unknown(list(st), _SETTING_KEYS, sw)
        if "id" not in st:
            raise ProfileSectionError(f"{sw}: missing 'id'")
        settings.append(DvfsSetting(str(st["id"]), **{k: _num(st[k], f"{sw}.{k}", positive=True)
                                                     for k in _SETTING_KEYS[1:] if k in st}))
    for k in ("core_clock_files", "mem_clock_files"):
        if k in t:
            files = _str_list(t[k], f"{where} {k}")
            if len(files) != 2:
                raise ProfileSectionError(f"{where} {k}: expected [rate_file, state_file] (S1 §5.2.2)")
    return DvfsSection(
        core_clock_files=tuple(t.get("core_clock_files", ())), mem_clock_files=tuple(t.get("mem_clock_files", ())),
        settings=tuple(settings), source=str(t.get("source", "")))


# --- the whole bench view of a profile -------------------------------------------------------------------

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


def bench_profile(platform: Platform) -> BenchProfile:
    raw = platform.raw
    origin = platform.origin
    bench = parse_bench(raw.get("bench", {}), origin)
    prof = BenchProfile(
        platform=platform, bench=bench,
        meters=parse_meters(raw.get("meters", []), origin),
        emulate=parse_emulate(raw.get("emulate", {}), origin),
        dvfs=parse_dvfs(raw.get("dvfs", {}), origin),
    )
    for sid in bench.dvfs_settings:
        prof.dvfs_setting(sid)
    return prof


def load_bench_profile(name_or_path: str) -> BenchProfile:
    """A profile by name or path; ``localhost`` is generated from this machine unless a file shadows it."""
    if name_or_path == "localhost":
        try:
            return bench_profile(load_platform("localhost"))
        except PlatformNotFoundError:
            return localhost_profile()
    return bench_profile(load_platform(name_or_path))


# --- localhost --------------------------------------------------------------------------------------------

def _rapl_zones(root: Path) -> list[str]:
    zones: list[str] = []
    if not root.is_dir():
        return zones
    for d in sorted(root.glob("intel-rapl:*")):
        try:
            name = (d / "name").read_text().strip()
            (d / "energy_uj").read_text()
        except OSError:
            continue
        zones.append(name)
    return zones


def detect_rapl(root: Path | None = None) -> tuple[list[str], str]:
    """(readable zone names, reason): the reason says why there is no RAPL when the list is empty."""
    root = root or Path(os.environ.get("ARCHLINE_POWERCAP_ROOT", "/sys/class/powercap"))
    if not root.is_dir():
        return [], f"no RAPL: {root} does not exist (not an Intel/AMD Linux host, or a container without it)"
    found = sorted(root.glob("intel-rapl:*"))
    if not found:
        return [], f"no RAPL: {root} has no intel-rapl zones"
    zones = _rapl_zones(root)
    if not zones:
        return [], (f"no RAPL: {root}/intel-rapl:*/energy_uj is not readable by this user "
                    f"(fix: sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj)")
    return zones, f"RAPL zones: {', '.join(zones)}"


def localhost_profile(powercap_root: Path | None = None) -> BenchProfile:
    """This machine: CPU kernels through cpu_asm, RAPL if it is readable, otherwise time only (said plainly)."""
    zones, rapl_reason = detect_rapl(powercap_root)
    meters: tuple[MeterSpec, ...] = ()
    if zones:
        meters = (MeterSpec(name="rapl", kind="rapl", zones=tuple(zones)),)
        note = f"localhost: CPU kernels (cpu_asm); energy from {rapl_reason}"
    else:
        note = f"localhost: CPU kernels (cpu_asm); time only, no energy: {rapl_reason}"
    host = socket.gethostname()
    plat = Platform(
        name="localhost", title=f"this machine ({host}, {_platform.machine()}, {os.cpu_count()} CPUs)",
        constants={"pi0": Constant(None, "unknown until fitted")}, origin="<detected>", device_kind="cpu",
        notes=note, raw={"name": "localhost"},
    )
    return BenchProfile(platform=plat, bench=BenchSection(backend="cpu_asm"), meters=meters,
                        emulate=EmulateSection(), dvfs=DvfsSection(), detected_note=note)
