"""The emulated back end (``emulated``): kernels that take the time the capped model says on an emulated device,
with exact counts; and the steady power ``archline meter emulate --platform`` plays. Labelled ``emulated``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from archline.bench.config.profile import DEFAULT_RANGES, QUICK_RANGES, BenchProfile, SweepRange, load_bench_profile
from archline.bench.emulated.device import EmulatedDevice, check_range, rail_split, readings
from archline.bench.emulated.model import EmulatedModel, EmulationError
from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import BackendBase, Counts, KernelSpec, RunResult
from archline.powermon.spec import MeterSpec

if TYPE_CHECKING:
    from pathlib import Path

    from archline.powermon.emulator import Script

BACKEND_NAME = "emulated"
#: Device seconds one repetition of a sweep point takes, about (the runner picks the repetitions).
TARGET_REP_S = 0.01
#: Cache kernels: (level, count column).
CACHE_LEVELS: tuple[tuple[str, str], ...] = (("l1", "bytes_l1"), ("l2", "bytes_l2"), ("l3", "bytes_l3"),
                                             ("shared", "bytes_shared"))


@dataclass
class EmulatedKernel:
    spec: KernelSpec
    counts_per_rep: Counts
    device: EmulatedDevice

    def run(self, reps: int) -> RunResult:
        if reps < 1:
            raise BenchError(f"repetitions must be at least 1, got {reps}")
        counts = self.counts_per_rep.scaled(reps)
        t_dev, t0, t1 = self.device.run_counts(counts)
        return RunResult(time_s=t_dev, reps=reps, counts=counts, checksum_ok=True,
                         extra={"emulated": True, "checksum_computed": False,   # nothing computed: no checksum
                                "power_w": self.device.model.power_w(counts),
                                "t0_host_s": t0, "t1_host_s": t1})

    def close(self) -> None:
        pass


def intensity_counts(precision: str, intensity_flop_per_byte: float, bytes_per_rep: int) -> Counts:
    """Exact counts of one repetition: ``bytes_per_rep`` streamed, round(I * bytes) flops (integers)."""
    flops = round(intensity_flop_per_byte * bytes_per_rep)
    if precision == "sp":
        return Counts(flops_sp=flops, bytes_mem=bytes_per_rep)
    if precision == "dp":
        return Counts(flops_dp=flops, bytes_mem=bytes_per_rep)
    if precision == "int32":
        return Counts(int_ops=flops, bytes_mem=bytes_per_rep)
    raise BenchError(f"unknown precision '{precision}'")


class EmulatedBackend(BackendBase):
    """Back end ``emulated``: kernels that take the model's time on an emulated device."""

    name = BACKEND_NAME
    sweeps_profile_ranges = True

    def __init__(self, profile: BenchProfile | str = "gtx580", *, power_cap_w: float | None = None,
                 time_compression: float | None = None, meter: MeterSpec | None = None, seed: int = 0,
                 noise_rel: float | None = None) -> None:
        self.profile = load_bench_profile(profile) if isinstance(profile, str) else profile
        self.model = EmulatedModel.from_profile(self.profile, power_cap_w)
        from archline.bench.emulated.meters import check_emulatable, choose

        #: what was made of the profile's meters (a default PowerMon 2 where it has none)
        self.meter_notes: list[str] = []
        if meter is None:   # --meter's, else the profile's PowerMon 2, else its first with an emulator; else refused
            meter, self.meter_notes = choose(self.profile, None)
        else:               # a meter named: played as it is, or refused (never replaced by another)
            check_emulatable(meter, self.profile.name)
        emu = self.profile.emulate
        self.device = EmulatedDevice(
            self.model, time_compression=time_compression or emu.time_compression, meter=meter,
            noise_rel=emu.noise_rel if noise_rel is None else noise_rel, seed=seed)
        self.meter = self.device.meter

    # -- what bench run's emulated path asks (bench.kernels.Emulator) -----------------------------------------
    def check_caps(self, caps_w: Sequence[float]) -> None:
        for c in caps_w:
            self.model.with_cap(c)  # raises with the allowed range

    def open_meter(self, *, seed: int, raw_dir: Path | None, notes: list[str]) -> tuple[Any, str, str, float]:
        meter, label, what = emulated_meter(self, seed=seed, raw_dir=raw_dir, notes=notes)
        return meter, label, what, self.meter.rate_hz

    def emulation_note(self) -> str:
        return (f"emulated {self.profile.name}: time compression {self.device.time_compression:g}x, idle "
                f"{self.model.idle_w:g} W ({self.model.idle_source})")

    def set_cap(self, power_cap_w: float | None) -> None:
        self.device.set_cap(power_cap_w)

    def idle(self, device_s: float) -> None:
        self.device.idle(device_s)

    def availability(self) -> tuple[bool, str]:
        return True, f"emulated {self.profile.name} (capped model with the profile's constants; no hardware)"

    def _precisions(self) -> list[str]:
        out = []
        if "flops_sp" in self.model.eps_j:
            out.append("sp")
        if "flops_dp" in self.model.eps_j:
            out.append("dp")
        if "int_ops" in self.model.eps_j:
            out.append("int32")
        return out

    def describe(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for p in ("sp", "dp"):
            ok = p in self._precisions()
            out.append({"name": "intensity", "precision": p, "level": "mem", "available": ok,
                        "reason": "emulated" if ok else f"profile has no eps_flop_{p}"})
        for level, col in CACHE_LEVELS:
            ok = col in self.model.eps_j
            out.append({"name": "cache", "precision": "sp", "level": level, "available": ok,
                        "reason": "emulated" if ok else f"profile has no eps_{level}"})
        ok = "rand_accesses" in self.model.eps_j
        out.append({"name": "chase", "precision": "int32", "level": "mem", "available": ok,
                    "reason": "emulated" if ok else "profile has no eps_rand"})
        ok = "int_ops" in self.model.eps_j
        out.append({"name": "int", "precision": "int32", "level": "mem", "available": ok,
                    "reason": "emulated" if ok else "profile has no eps_int"})
        return out

    def _bytes_per_rep(self, precision: str, intensity: float) -> int:
        """Streamed bytes so that one repetition takes about TARGET_REP_S device seconds (a multiple of 4 KiB)."""
        col = "flops_sp" if precision == "sp" else "flops_dp" if precision == "dp" else "int_ops"
        per_byte_s = max(1.0 / self.model.rate_per_s["bytes_mem"], intensity / self.model.rate_per_s[col])
        return max(4096, int(TARGET_REP_S / per_byte_s) // 4096 * 4096)

    def sweep(self, kernel: str, precision: str, *, quick: bool = False,
              ranges: dict[str, SweepRange] | None = None) -> list[KernelSpec]:
        ranges = ranges or (QUICK_RANGES if quick else DEFAULT_RANGES)
        if kernel == "intensity":
            if precision not in self._precisions() or precision == "int32":
                raise UnsupportedError(f"emulated {self.profile.name}: no intensity kernel at precision "
                                       f"'{precision}' (profile has no eps_flop_{precision})")
            rng = ranges.get(f"intensity_{precision}", DEFAULT_RANGES[f"intensity_{precision}"])
            specs = []
            for i in rng.values():
                q = self._bytes_per_rep(precision, i)
                specs.append(KernelSpec(self.name, "intensity", precision, "mem",
                                        {"intensity": round(i, 6), "bytes_per_rep": q}))
            return specs
        if kernel == "cache":
            specs = []
            for level, col in CACHE_LEVELS:
                if col not in self.model.eps_j:
                    continue
                rate = self.model.rate_per_s[col]
                # a few working points per level: pure cache reads, and with some flops on top
                for fpb in ((0.0, 0.5) if quick else (0.0, 0.25, 1.0)):
                    q = max(4096, int(TARGET_REP_S * rate) // 4096 * 4096)
                    specs.append(KernelSpec(self.name, "cache", "sp", level,
                                            {"bytes_per_rep": q, "flops_per_byte": fpb}))
            return specs
        if kernel == "chase":
            if "rand_accesses" not in self.model.eps_j:
                return []
            n = max(1024, int(TARGET_REP_S * self.model.rate_per_s["rand_accesses"]))
            return [KernelSpec(self.name, "chase", "int32", "mem", {"accesses_per_rep": n * k})
                    for k in ((1, 4) if quick else (1, 2, 4))]
        if kernel == "int":
            if "int_ops" not in self.model.eps_j:
                return []
            return [KernelSpec(self.name, "int", "int32", "mem",
                               {"intensity": round(i, 6), "bytes_per_rep": self._bytes_per_rep("int32", i)})
                    for i in (ranges.get("intensity_sp", DEFAULT_RANGES["intensity_sp"]).values())]
        raise UnsupportedError(f"emulated back end has no kernel '{kernel}' (known: intensity, cache, chase, int)")

    def counts(self, spec: KernelSpec) -> Counts:
        p = spec.params
        if spec.kernel in ("intensity", "int"):
            return intensity_counts(spec.precision, float(p["intensity"]), int(p["bytes_per_rep"]))
        if spec.kernel == "cache":
            col = dict(CACHE_LEVELS)[spec.level]
            q = int(p["bytes_per_rep"])
            return Counts(**{col: q, "flops_sp": round(float(p.get("flops_per_byte", 0.0)) * q)})
        if spec.kernel == "chase":
            return Counts(rand_accesses=int(p["accesses_per_rep"]))
        raise UnsupportedError(f"emulated back end has no kernel '{spec.kernel}'")

    def prepare(self, spec: KernelSpec, device: str | None = None) -> EmulatedKernel:
        counts = self.counts(spec)
        if not self.model.supports(counts):
            raise UnsupportedError(f"emulated {self.profile.name} cannot run {spec.label}: a cost is missing")
        return EmulatedKernel(spec, counts, self.device)


def steady_power_script(profile: BenchProfile | str, intensity_flop_per_byte: float | None = None,
                        precision: str = "sp") -> tuple[Script, str]:
    """A constant power for ``archline meter emulate --platform``: the platform's model power while a kernel of
    the given intensity runs (idle power when none is given), split onto the profile's PowerMon 2 rails."""
    from archline.powermon.emulator import Script

    prof = load_bench_profile(profile) if isinstance(profile, str) else profile
    model = EmulatedModel.from_profile(prof)
    if intensity_flop_per_byte is None:
        power_w, what = model.idle_w, f"idle, {model.idle_w:.4g} W ({model.idle_source})"
    else:
        if not intensity_flop_per_byte > 0:
            raise EmulationError(f"intensity must be > 0 flop/byte, got {intensity_flop_per_byte:g}")
        counts = intensity_counts(precision, intensity_flop_per_byte, 1 << 24)
        if not model.supports(counts):
            raise EmulationError(f"platform '{model.platform}' has no {precision} flop cost to emulate")
        power_w = model.power_w(counts)
        what = f"{precision} kernel at I = {intensity_flop_per_byte:g} flop/B, {power_w:.4g} W (capped model)"
    from archline.powermon.kinds import default_emulated  # meter emulate serves a PowerMon 2

    meter = next((m for m in prof.meters if m.kind == default_emulated().name), None)
    split = rail_split(meter, model.free_peak_power_w)
    check_range(split, power_w, model.platform)
    return Script([(0.0, readings(split, power_w))]), f"{model.platform} [emulated]: {what}"


#: host seconds each BMC reading must stay on show for the meter's polls to see it: one poll round trip on a loaded
#: host takes up to 50 ms (docs/meters.md, BMC section); at 100x a reading shows for 10 ms and readings are missed
BMC_MIN_SHOW_HOST_S = 0.05


def bmc_max_time_compression(update_period_s: float) -> int:
    """The largest whole time compression at which each reading of a BMC updating every ``update_period_s`` device
    seconds stays on show for :data:`BMC_MIN_SHOW_HOST_S` host seconds (the 1 s BMC: 20x)."""
    return max(1, int(update_period_s / BMC_MIN_SHOW_HOST_S + 1e-9))


def _check_bmc_speed(spec: MeterSpec, tc: float) -> None:
    from archline.powermon.bmc.bmc_meter import POLLS_PER_PERIOD
    from archline.powermon.bmc.meter import DEFAULT_SENSOR

    period_s = DEFAULT_SENSOR.update_period_s       # what emulate_from_spec plays: a reading every 1 device s
    if period_s / tc >= BMC_MIN_SHOW_HOST_S - 1e-12:
        return
    show_ms = 1e3 * period_s / tc
    raise EmulationError(
        f"time compression {tc:g}x shows each emulated {spec.kind} BMC reading (one per {period_s:g} device s) for "
        f"{show_ms:.3g} ms of host time, polled over HTTP every {show_ms / POLLS_PER_PERIOD:.3g} ms; a poll's round "
        f"trip takes up to {1e3 * BMC_MIN_SHOW_HOST_S:g} ms on a loaded host, so readings would be missed: lower "
        f"--time-compression to {bmc_max_time_compression(period_s)} or less")


def emulated_meter(be: EmulatedBackend, *, seed: int = 0, raw_dir: Path | None = None,
                   notes: list[str] | None = None) -> tuple[Any, str, str]:
    """(meter, label, description) of the back end's meter of any emulatable kind, built by powermon's
    ``emulate_meter`` playing the device's power, with the faults its port's emulator URL asks for
    (bench/emulated/meters.emulate_entry, as measure's; what was made of the URL is appended to ``notes``);
    refused when its stream at this time compression is more than the emulator carries (weighed per kind: a
    kind's module may give ``records_per_device_s``, and ``emulated_limit`` when its limit is not the pty's)."""
    import importlib

    from archline.bench.emulated.device import ModelPowerSource
    from archline.formats.meters.versions import MAX_EMULATED_RECORDS_PER_S, slower_advice
    from archline.powermon import kinds

    spec = be.meter
    kind = kinds.get(spec.kind)
    tc = be.device.time_compression
    if kind.bmc:        # read by HTTP/IPMI polls of an emulated BMC (no pty, no stream)
        _check_bmc_speed(spec, tc)
    weigh = getattr(importlib.import_module(kind.module), "records_per_device_s", None) if kind.module else None
    per_tc = float(weigh(spec)) if callable(weigh) else spec.rate_hz * len(spec.channels)
    if not kind.bmc and per_tc * tc > MAX_EMULATED_RECORDS_PER_S:
        over = "over the pty" if kind.serial else "from its emulator"
        raise EmulationError(
            f"time compression {tc:g}x would stream {per_tc * tc:.0f} {spec.kind} records per second {over} "
            f"(limit {MAX_EMULATED_RECORDS_PER_S}); "
            + slower_advice(per_tc, spec.rate_hz, "--time-compression", f"rate_hz of meter '{spec.name}'"))
    from archline.bench.emulated.meters import emulate_entry

    meter = emulate_entry(spec, ModelPowerSource(be.device), speed=tc, seed=seed, raw_dir=raw_dir, notes=notes)
    rails = ", ".join(f"{c.id}={c.rail}" for c in spec.channels)
    how = "emulated on a pty" if kind.serial else "emulated"
    return meter, f"{spec.name}:{spec.kind}-emulated", f"{kind.title} ({how}), channels {rails}"
