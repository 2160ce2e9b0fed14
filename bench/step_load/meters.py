"""The real set-up of ``meter probe`` / ``meter calibrate``: METER and its reference from a platform profile's
``[[meters]]``, opened through the one opening path (:func:`archline.powermon.spec.open_meter`, as ``bench run``
does), and the step load for the device METER measures (:func:`.load.step_load_for`). Every refusal is one line.

Both meters are opened bare: a ``sensor_profile`` or ``calibration`` already in the entry is left out, since the
probe measures the sensor itself (a calibrated reading calibrated again would compound the correction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.step_load.load import KernelStepLoad, step_load_for
from archline.common.exits import EXIT_DEVICE
from archline.powermon import kinds
from archline.powermon.errors import MeterError
from archline.powermon.spec import MeterSpec

#: meters that measure the rails themselves: what a reference is (the sensor is usually an on-board one)
REFERENCE_KINDS = kinds.where(reference=True)
#: cumulative energy counters, polled: ``poll_s`` sets how often (a probe polls well inside the update period)
COUNTER_KINDS = kinds.where(counter=True)
PROBE_POLL_S = 0.002


class ProbeMeterMissing(BenchError):
    """A meter the profile names cannot be opened here (no RAPL, no hwmon, no port): exit 4, a device missing."""

    exit_code = EXIT_DEVICE


@dataclass
class RealProbe:
    """What a real probe runs: the two meters (not started: the Recorder starts them), the load, their entries."""

    reference: Any
    sensor: Any
    load: KernelStepLoad
    reference_spec: MeterSpec
    sensor_spec: MeterSpec
    platform: str

    def close(self) -> None:
        self.load.close()


def pick_reference(meters: Sequence[MeterSpec], meter: str, reference: str | None, platform: str) -> MeterSpec:
    """The reference entry: the one named, else the profile's only external meter other than METER."""
    if reference is not None:
        if reference == meter:
            raise BenchError(f"--reference {reference}: METER and its reference are the same meter; a sensor is "
                             "measured against another one")
        spec = next((m for m in meters if m.name == reference), None)
        if spec is None:
            raise BenchError(f"platform '{platform}' has no meter '{reference}' (configured: "
                             f"{', '.join(m.name for m in meters) or 'none'})")
        return spec
    cands = [m for m in meters if m.kind in REFERENCE_KINDS and m.name != meter]
    if len(cands) != 1:
        have = ", ".join(f"{m.name} ({m.kind})" for m in cands) or "none"
        raise BenchError(f"meter {meter}: name its reference meter with --reference (a {'/'.join(REFERENCE_KINDS)} "
                         f"entry of platform '{platform}'; candidates: {have})")
    return cands[0]


def _bare(spec: MeterSpec) -> MeterSpec:
    return spec.model_copy(update={"sensor_profile": None, "calibration": None})


def _open(spec: MeterSpec, platform: str, **kw: Any) -> Any:
    from archline.powermon.spec import open_meter

    try:
        return open_meter(_bare(spec), **kw)
    except MeterError as e:
        raise ProbeMeterMissing(f"meter '{spec.name}' ({spec.kind}) of platform '{platform}' cannot be opened here: "
                                f"{e}") from None


def open_probe(platform: str, meter: str, *, reference: str | None = None, backend: str | None = None,
               threads: int | None = None, cpus: Sequence[int] | None = None, device: str | None = None,
               poll_s: float | None = None) -> RealProbe:
    """METER and its reference from ``platform``'s profile, opened, and the step load for METER's device (built
    last: nothing runs until the meters could be opened). ``poll_s`` polls a counter meter (RAPL, NVML, AMD SMI,
    hwmon) that often."""
    from archline.bench.config.profile import load_bench_profile

    prof = load_bench_profile(platform)
    sensor_spec = prof.meter(meter)
    ref_spec = pick_reference(prof.meters, meter, reference, prof.name)
    if poll_s is not None and sensor_spec.kind not in COUNTER_KINDS:
        raise BenchError(f"--poll sets how often a counter sensor ({', '.join(COUNTER_KINDS)}) is read; meter "
                         f"'{meter}' is a {sensor_spec.kind} meter")
    ref = _open(ref_spec, prof.name)
    kw = {"poll_s": PROBE_POLL_S if poll_s is None else poll_s} if sensor_spec.kind in COUNTER_KINDS else {}
    sensor = _open(sensor_spec, prof.name, **kw)
    load = step_load_for(sensor_spec, backend=backend, profile_backend=prof.bench.backend, threads=threads,
                         cpus=cpus, device=device)
    return RealProbe(ref, sensor, load, ref_spec, sensor_spec, prof.name)
