"""A bench session's windows on a meter held to a sensor profile: every timed region and idle window made at
least the sensor's shortest window (the sensor as powermon finds it for every window: powermon/sensor/windows.py),
and the integrator's advice for a refused window worded for bench (see :mod:`archline.bench.run.session`)."""

from __future__ import annotations

from typing import Any

from archline.bench.run.points import RunSettings
from archline.powermon.sensor.windows import strictest_sensor

#: how much longer than the sensor's shortest window bench makes its windows: a region sized from a calibration
#: run may come out a little shorter than planned, and a window under the sensor's limit is refused
SENSOR_WINDOW_MARGIN = 1.1
#: the integrator's advice for a window refused on a sensor (powermon/record/integrate.py) is for a measured
#: command; a bench window is lengthened with bench's own options
_MEASURE_ADVICE = "(a measured command: loop its work inside the phase or run, or time a larger input)"
_BENCH_ADVICE = "(bench run: --min-time lengthens every timed window; with --reps, give more repetitions)"


def for_bench(message: str) -> str:
    return message.replace(_MEASURE_ADVICE, _BENCH_ADVICE)


def fit_sensor_windows(st: RunSettings, notes: list[str], meter: Any) -> None:
    """A meter held to a sensor profile (``sensor_profile`` in its ``[[meters]]`` entry) refuses a window shorter
    than the sensor allows: every timed region and idle window is made at least that long (device seconds, with a
    margin), and a note says so. ``--reps`` fixes the repetitions: its windows are left as asked."""
    sensor = strictest_sensor([meter])
    if sensor is None:
        return
    lim = sensor.limits
    need = lim.min_window_s * SENSOR_WINDOW_MARGIN     # device seconds, as the settings are
    if st.min_region_s >= need and (st.idle_s <= 0 or st.idle_s >= need):
        return
    st.min_region_s = max(st.min_region_s, need)
    st.max_region_s = max(st.max_region_s, need)
    if st.idle_s > 0:
        st.idle_s = max(st.idle_s, need)
    notes.append(f"timed and idle windows last at least {need:.4g} s: {lim.why()}"
                 + ("; --reps fixes the repetitions, so a region may still be too short" if st.fixed_reps else ""))
