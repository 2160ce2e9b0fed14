"""A sensor's calibration against a reference (what ``archline meter calibrate`` fits and a platform profile's meter
entry keeps as ``calibration = {gain = ..., offset_w = ..., lag_s = ..., gain_err = ..., ...}``), and the meter
wrapper that applies it, so that a machine without the reference still gets corrected energy, labelled calibrated.

A reading is ``gain * true + offset_w``, ``lag_s`` late, so the true energy of a window [t0, t1] is
``(E_sensor(t0 + lag, t1 + lag) - offset_w * T) / gain``; its bound adds the calibration's own uncertainty:
``|E| * gain_err / gain + offset_w_err * T / gain`` on top of the sensor's bound divided by the gain.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.record.meters import ChannelResult, DeviceResult, MeterRegion

KEYS = ("gain", "gain_err", "offset_w", "offset_w_err", "lag_s", "lag_s_err", "emulated")


@dataclass(frozen=True)
class Calibration:
    gain: float
    gain_err: float
    offset_w: float
    offset_w_err: float
    lag_s: float = 0.0
    lag_s_err: float = 0.0
    emulated: bool = False      #: made by `meter calibrate --emulate`: it corrects no real sensor

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if k != "emulated" and not math.isfinite(v):
                raise MeterError(f"calibration: {k} is not a finite number ({v!r})")
        if self.gain <= 0:
            raise MeterError(f"calibration: gain must be positive, got {self.gain:g}")
        if min(self.gain_err, self.offset_w_err, self.lag_s_err) < 0:
            raise MeterError("calibration: an uncertainty is negative")

    def as_dict(self) -> dict[str, float | bool]:
        d: dict[str, float | bool] = asdict(self)
        if not self.emulated:
            d.pop("emulated")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, float], where: str = "calibration") -> Calibration:
        missing = [k for k in ("gain", "offset_w") if k not in d]
        unknown = sorted(set(d) - set(KEYS))
        if missing or unknown:
            raise MeterError(f"{where}: " + (f"missing {', '.join(missing)}" if missing else
                                             f"unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})"))
        emulated = d.get("emulated", False)
        if not isinstance(emulated, bool):
            raise MeterError(f"{where}: emulated must be true or false, got {emulated!r}")
        return cls(**{k: float(v) for k, v in d.items() if k != "emulated"}, emulated=emulated)

    def correct(self, energy_j: float, energy_err_j: float, duration_s: float) -> tuple[float, float]:
        """(corrected energy, its bound) of a window of ``duration_s`` device seconds."""
        e = (energy_j - self.offset_w * duration_s) / self.gain
        err = energy_err_j / self.gain + abs(e) * self.gain_err / self.gain + self.offset_w_err * duration_s / self.gain
        return e, err

    def text(self) -> str:
        return (f"calibrated{' (emulated calibration)' if self.emulated else ''}: gain {self.gain:.5g} ± "
                f"{self.gain_err:.2g}, offset {self.offset_w:.4g} ± {self.offset_w_err:.2g} W, lag {self.lag_s:.4g} ± "
                f"{self.lag_s_err:.2g} s")


def calibrate_region(r: MeterRegion, cal: Calibration) -> MeterRegion:
    """The region with every channel's and device's energy corrected (the offset split evenly over the channels)."""
    dur = r.duration_s
    n = max(len(r.channels), 1)
    per = Calibration(cal.gain, cal.gain_err, cal.offset_w / n, cal.offset_w_err / n, cal.lag_s, cal.lag_s_err)
    chans: dict[str, ChannelResult] = {}
    for k, c in r.channels.items():
        e, err = per.correct(c.energy_j, c.energy_err_j, dur)
        chans[k] = ChannelResult(e, err, e / dur if dur > 0 else float("nan"), c.n_samples, c.rail)
    devices: dict[str, DeviceResult] = {}
    for name, d in r.devices.items():
        parts = [c for c in chans.values() if c.rail in d.rails]
        e = sum(c.energy_j for c in parts)
        devices[name] = DeviceResult(e, sum(c.energy_err_j for c in parts), e / dur if dur > 0 else float("nan"),
                                     list(d.rails))
    total, err = cal.correct(r.energy_j, r.energy_err_j, dur)
    return replace(r, channels=chans, devices=devices, energy_j=total, energy_err_j=err,
                   mean_power_w=total / dur if dur > 0 else float("nan"), warnings=[*r.warnings, cal.text()])


class WrappedMeter:
    """A recorder meter around another: start, stop, marks and everything else pass through to ``inner``;
    subclasses change how windows are read."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.emulated = inner.emulated
        self.kind = getattr(inner, "kind", "sampling")

    def __getattr__(self, name: str) -> Any:       # update_hz, speed, error, segment, live_power_w ...
        return getattr(self.inner, name)

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    def mark(self, t_s: float) -> None:
        self.inner.mark(t_s)

    def _speed(self) -> float:
        """Emulated device seconds per host second (1 on hardware)."""
        return float(getattr(self.inner, "speed", 1.0) or 1.0)


class CalibratedMeter(WrappedMeter):
    """Any recorder meter with a calibration applied: windows read later by the sensor's delay (the lag plus half
    its averaging window, ``window_s`` from its sensor profile, when known: the middle of what a reading averaged),
    energies corrected, the region's warnings saying ``calibrated: ...`` and ``info()`` carrying ``calibrated`` and
    the calibration."""

    calibrated = True

    def __init__(self, inner: Any, cal: Calibration, *, window_s: float = 0.0) -> None:
        super().__init__(inner)
        self.cal = cal
        self.window_s = window_s

    def _shift_s(self) -> float:
        delay_s = self.cal.lag_s + 0.5 * self.window_s
        return delay_s / self._speed()   # device seconds -> host

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        return bool(self.inner.wait_until(t_s + self._shift_s(), timeout_s))

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        shift = self._shift_s()
        r = self.inner.region(t0_s + shift, t1_s + shift)
        out = calibrate_region(r, self.cal)
        return replace(out, t_start_s=r.t_start_s - shift, t_end_s=r.t_end_s - shift)   # as asked (or widened)

    def samples(self) -> Any:
        return self.inner.samples()

    def info(self) -> dict[str, Any]:
        return {**self.inner.info(), "calibrated": True, "calibration": self.cal.as_dict()}
