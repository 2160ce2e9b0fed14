import numpy as np
import pytest

from archline.powermon.emulator.sensor import SensorModel


def step(t):
    return np.where(np.asarray(t) >= 1.0, 200.0, 100.0)


def test_step_readings_exact():
    m = SensorModel(update_period_s=0.5, window_s=0.5, lag_s=0.25)
    t, v = m.readings(step, 0.0, 2.0)
    assert list(t) == [0.0, 0.5, 1.0, 1.5, 2.0]
    # reading at 1.5 averages [0.75, 1.25]: half 100 W, half 200 W
    assert list(v) == pytest.approx([100.0, 100.0, 100.0, 150.0, 200.0])
    assert m.reading_at(step, 1.6) == pytest.approx(150.0)


def test_gain_offset_quantum():
    m = SensorModel(update_period_s=1.0, window_s=0.0, quantum_w=10.0, gain=1.1, offset_w=3.0)
    assert m.reading_at(step, 2.0) == 220.0  # 1.1*200+3=223 -> 220


def test_invalid():
    with pytest.raises(ValueError):
        SensorModel(update_period_s=0.0, window_s=1.0)
