"""`archline meter emulate --platform`: the emulator plays the platform's model power on its profile's rails."""

from __future__ import annotations

import pytest

from archline.bench.emulated.backend import steady_power_script
from archline.formats.platforms.profiles import load_platform


def _total_w(script) -> float:  # type: ignore[no-untyped-def]
    return float((script.volts_v[0] * script.amps_a[0]).sum())


def test_steady_power_is_the_model_power_on_the_gtx580_rails() -> None:
    script, what = steady_power_script("gtx580", 8.0, "sp")
    m = load_platform("gtx580").machine("sp")
    # emulated rates are the observed ones of S0 §IV-B ([emulate] table), so compare against E/T with those
    obs_flop, obs_mem = 1398e9, 170e9
    t_per_flop = max(1 / obs_flop, 1 / (8.0 * obs_mem))
    expect_w = m.pi0_w + (m.eps_flop_j + m.eps_mem_j_per_byte / 8.0) / t_per_flop
    assert _total_w(script) == pytest.approx(expect_w, rel=1e-6)
    # slot 12 V, slot 3.3 V, 6-pin, 8-pin (gtx580.toml [[meters]])
    assert sorted(script.channels) == [0, 1, 2, 3]
    assert "emulated" in what


def test_steady_power_idle_and_errors() -> None:
    script, what = steady_power_script("gtx580")
    assert "idle" in what
    assert _total_w(script) == pytest.approx(39.6)  # S0 §V-A idle power
    with pytest.raises(Exception, match="pi0"):
        steady_power_script("titan")
    with pytest.raises(Exception, match="intensity"):
        steady_power_script("gtx580", -1.0)
