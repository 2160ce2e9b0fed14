"""What a ``[[meters]]`` entry's ``sensor_profile`` and ``calibration`` do to the meter opened from it
(:func:`apply_spec`, for ``open_meter``/``emulate_meter`` to call on what they return):

* ``sensor_profile``: :class:`LimitedMeter`: a window shorter than the sensor allows is refused (or widened with
  ``widen=True``) and every region's bound adds the sensor's share, with the reason in its warnings
  (:class:`~archline.powermon.record.integrate.SensorLimits`); without a calibration it also reads each window
  later by the profile's delay (lag + half the window);
* ``calibration``: :class:`~archline.powermon.sensor.calibration.CalibratedMeter` (read later by the calibrated lag
  plus half the profile's window, energy corrected, labelled calibrated).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.record.integrate import SensorLimits, sensor_window
from archline.powermon.record.meters import MeterRegion
from archline.powermon.sensor.calibration import CalibratedMeter, Calibration, WrappedMeter


class LimitedMeter(WrappedMeter):
    """A recorder meter held to a sensor's limits (see the module)."""

    def __init__(self, inner: Any, limits: SensorLimits, *, widen: bool = False, delay_s: float = 0.0) -> None:
        super().__init__(inner)
        self.limits = limits
        self.widen = widen
        self.delay_s = delay_s          #: device seconds a reading comes after the middle of what it averaged

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        return bool(self.inner.wait_until(t_s + self.delay_s / self._speed(), timeout_s))

    def samples(self) -> Any:
        return self.inner.samples()

    def info(self) -> dict[str, Any]:
        lim = self.limits
        return {**self.inner.info(), "sensor_limits": {"update_period_s": lim.update_period_s,
                                                       "window_s": lim.window_s, "lag_s": lim.lag_s,
                                                       "min_window_s": lim.min_window_s, "source": lim.source}}

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        speed = self._speed()
        a, b, why = sensor_window(t0_s, t1_s, self.limits, widen=self.widen, scale=speed)
        shift = self.delay_s / speed
        r = replace(self.inner.region(a + shift, b + shift), t_start_s=a, t_end_s=b)
        swing = max((abs(c.mean_power_w) for c in r.channels.values()), default=0.0)
        if r.samples is not None and len(r.samples):
            swing = float(r.samples.power_w.max() - r.samples.power_w.min()) or swing
        extra = self.limits.err_j(swing, r.duration_s)
        notes = [why] if why else []
        notes.append(f"bound includes {extra:.4g} J for the sensor ({self.limits.why()})")
        return replace(r, energy_err_j=r.energy_err_j + extra, warnings=[*r.warnings, *notes])


def apply_spec(meter: Any, spec: Any, *, widen: bool = False) -> Any:
    """``meter`` held to ``spec.sensor_profile``'s limits and corrected by ``spec.calibration`` (either may be
    absent)."""
    path = getattr(spec, "sensor_profile", None)
    cal = getattr(spec, "calibration", None)
    window_s = 0.0
    if path:
        from archline.formats.meters.sensor_profile import SensorProfile

        prof = SensorProfile.read(path)
        window_s = prof.window_s
        meter = LimitedMeter(meter, prof.limits(source=f"sensor profile {path}"), widen=widen,
                             delay_s=0.0 if cal else prof.lag_s + 0.5 * prof.window_s)
    if cal:
        c = Calibration.from_dict(dict(cal), f"meter '{spec.name}': calibration")
        if c.emulated and not getattr(meter, "emulated", False):
            raise MeterError(f"meter '{spec.name}': its calibration was made on emulated meters (meter calibrate "
                             "--emulate) and corrects no real sensor; calibrate it against a real reference or "
                             "remove the calibration line")
        meter = CalibratedMeter(meter, c, window_s=window_s)
    return meter
