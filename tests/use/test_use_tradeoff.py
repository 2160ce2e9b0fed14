"""archline tradeoff: S1 §3.5.4 and Fig. 8, the speedups and greenups of doing f times the work with 1/m of the
traffic, and their per-case bounds (eq.15-23), on S0 Table II's Fermi example (B_tau 3.6, B_eps 14.4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from archline.fit.analyses.choi.tradeoff import tradeoff_grid
from archline.formats.platforms.profiles import load_platform

FERMI = load_platform("fermi-sample").machine("dp")


def test_every_greenup_within_its_case_bounds() -> None:
    """Fig. 8's lines bound its points: each greenup lies within its case's bounds (eq.18-23)."""
    g = tradeoff_grid(FERMI)
    assert np.all(g.greenup >= g.greenup_lo * (1 - 1e-9)) and np.all(g.greenup <= g.greenup_hi * (1 + 1e-9))
    assert set(np.unique(g.case)) == {1, 2, 3}


def test_faster_but_less_efficient_is_unlikely() -> None:
    """S1 §3.5.4: "it is unlikely that one will improve time (dT > 1) while incurring a loss in energy efficiency
    (dE < 1)": none of Fig. 8's grid does, while the converse (dE > 1 with dT < 1) is common in cases 2 and 3."""
    g = tradeoff_grid(FERMI)
    assert g.as_dict()["faster_but_less_efficient"] == 0
    converse = (g.speedup < 1) & (g.greenup > 1)
    assert converse[g.case == 3].sum() > 10 and converse[g.case == 2].sum() > 0


def test_case3_greenup_bound_is_q006() -> None:
    """Both compute-bound with m -> large: a greenup needs f < 1 + B_eps/I, at most 1 + B_eps/B_tau = 5.03 at
    I = B_tau (Q006, S1 §3.5.2)."""
    g = tradeoff_grid(FERMI, fs=(1.5, 2.0, 3.0, 4.0, 5.0, 5.1), ms=(1e6,))
    sel = g.intensity >= FERMI.B_tau
    assert np.array_equal(g.greenup[sel] > 1, g.f[sel] < 1 + FERMI.B_eps / g.intensity[sel])
    assert not np.any(g.greenup[sel & (g.f == 5.1)] > 1)


def test_cli_tradeoff(run_cli: Callable[..., Any]) -> None:
    r = run_cli("tradeoff", "fermi-sample", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["B_eps"] == pytest.approx(14.4) and d["faster_but_less_efficient"] == 0
    r = run_cli("tradeoff", "fermi-sample", "--f", "0.5")
    assert r.exit_code == 2 and ">= 1" in r.stderr
    r = run_cli("tradeoff", "titan")
    assert r.exit_code == 2
