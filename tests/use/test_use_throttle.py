"""archline throttle and archline power-bound: power-cap throttling (S1 §4.4.4, Fig. 13; model.md §4) and the
thesis's power-bounding scenario (S1 §4.4.4: 140 W, delta_pi/8, 0.31x, 23 Arndale GPUs, 2.8x)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from archline.fit.analyses.choi import throttling as th
from archline.formats.platforms.profiles import load_platform
from archline.model.machine import Machine

GTX580 = load_platform("gtx580").machine("sp")


def test_throttle_sweep_keeps_pi0_and_divides_delta_pi() -> None:
    """S1 §4.4.4: delta_pi/k, every other constant kept. Where the cap binds the power is pi0 + delta_pi/k
    (eq.38) and the time is the dynamic energy over delta_pi/k (eq.35), so performance falls as 1/k there."""
    m = th.with_power(GTX580, delta_pi_w=150.0)
    sw = th.throttle_sweep(m, [0.25, 4.0, 64.0])
    assert sw.divisors == (1, 2, 3, 4, 5, 6, 7, 8)
    assert sw.power_w[7] == pytest.approx(122 + 150 / 8)                   # bound at every I at k = 8
    assert sw.rel_perf[1:, 2] == pytest.approx([1 / k for k in range(2, 9)], rel=1e-9)   # pi_flop 158 > 150 W
    assert np.all(sw.rel_eff[1:] < 1)                                      # pi0 kept: throttling costs energy
    assert np.all(sw.power_w <= m.peak_power_w + 1e-9)


def test_throttle_needs_delta_pi() -> None:
    with pytest.raises(th.ThrottleError, match="no delta_pi"):
        th.require_cap(GTX580, "gtx580")


def test_split_power() -> None:
    """140 W = pi0 + delta_pi/8 and 280 W = pi0 + delta_pi (S1 §4.4.4): pi0 120 W, delta_pi 160 W."""
    assert th.split_power(280.0, 140.0, 8) == (pytest.approx(120.0), pytest.approx(160.0))


def test_power_bound_rate_from_machines() -> None:
    """The rate the scenario reports is the capped model's own (eq.35) at I = 0.25 for one split of eps_hat."""
    pi0, dpi = 120.0, 160.0
    tau_mem = 515e-12 / pi0
    m = Machine((62.5e-12 - 30e-12) / pi0, tau_mem, 30e-12, 267e-12, pi0, dpi)
    rate = float(m.throttled(8).performance_flop_per_s(0.25) / m.performance_flop_per_s(0.25))
    lo, hi = th.titan_power_bound().throttled_rate
    assert lo <= rate <= hi and rate == pytest.approx(0.31, abs=0.005)


def test_cli_throttle_and_power_bound(run_cli: Callable[..., Any], tmp_path: Any) -> None:
    r = run_cli("throttle", "gtx580", "--delta-pi-w", "150", "-i", "0.25,64", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["delta_pi_w"] == 150 and d["power_w"][7][1] == pytest.approx(122 + 150 / 8)
    r = run_cli("throttle", "gtx580")
    assert r.exit_code == 2 and "no delta_pi" in r.stderr
    r = run_cli("power-bound")
    assert r.exit_code == 0 and "= 23" in r.stdout and "0.304-0.321" in r.stdout and "2.44-2.58x" in r.stdout
    r = run_cli("power-bound", "--format", "json")
    assert json.loads(r.stdout)["boards"] == 23
