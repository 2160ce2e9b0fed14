"""A fit through the node's BMC (issue 24 acceptance): ``bench run --emulate`` on the shipped ``emulated-node``
profile, whose meter is ``kind = "redfish"`` served by archline's emulated Redfish service (a real HTTP server on
127.0.0.1; a new reading every device second, each the mean of the last second, at 20x), then ``archline fit``:
pi0, eps_flop_dp and eps_mem recovered within the tolerance the slow averaged readings allow.

The tolerance is derived, not picked: each row's energy comes with the BMC meter's bound ``energy_err_j`` (the
straddling reading at each edge spread over a period plus a poll, 1 W resolution over the window, unseen or lost
readings); the fit is linear in the rows' energies, E = pi0 T + eps_flop W + eps_mem Q, so the largest change of a
coefficient that energies anywhere within their bounds can make is sum_j |A_ij| err_j, with A the least-squares
solution operator of that design. The recovered coefficients must lie within it of the profile's values.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from archline.bench.config.options import RunOptions
from archline.bench.run.session import run_once
from archline.cli.main import main

GIVEN = {"pi0": 150.0, "eps_flop_dp": 500e-12, "eps_mem": 1000e-12}   # formats/platforms/emulated-node.toml


def _bmc_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "redfish server" or t.name.endswith(" poll")]


def _fit(results: Path) -> dict[str, float]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["fit", str(results), "--model", "basic", "--one-precision", "--format", "json"])
    assert rc in (0, None), buf.getvalue()
    return {k: v["value"] for k, v in json.loads(buf.getvalue())["coefficients"].items()}


def tolerance(rows: list[dict[str, str]]) -> dict[str, float]:
    """Worst-case coefficient change from row energies anywhere within their stated bounds (see the module)."""
    x = np.array([[float(r["time_s"]), float(r["flops_dp"]), float(r["bytes_mem"])] for r in rows])
    err = np.array([float(r["energy_err_j"]) for r in rows])
    a = np.linalg.pinv(x)
    worst = np.abs(a) @ err
    return dict(zip(("pi0", "eps_flop_dp", "eps_mem"), (float(w) for w in worst), strict=True))


@pytest.mark.slow          # about 30 s: 5 points, each 2 regions of 10 BMC readings plus the runner's edges
def test_fit_through_the_emulated_redfish_bmc_recovers_the_node(tmp_path: Path) -> None:
    before = _bmc_threads()
    res = run_once(RunOptions(platform="emulated-node", emulate=True, seed=3), tmp_path / "out")
    assert res.failed == 0 and res.rows == 5
    with open(res.results, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        assert r["emulated"] == "true" and r["meter"].startswith("bmc:redfish-emulated")
        assert int(r["lost_samples"]) == 0
        assert 9.5 < float(r["time_s"]) < 10.5          # device seconds (10 readings), not host seconds (0.5 s)
        assert int(r["n_samples"]) >= 10
    got = _fit(res.results)
    tol = tolerance(rows)
    for k, want in GIVEN.items():
        assert 0 < tol[k] < 0.02 * abs(want), (k, tol[k])          # the bounds pin each within 2%
        assert abs(got[k] - want) <= tol[k], (k, got[k], want, tol[k])
    deadline = time.monotonic() + 2
    while _bmc_threads() != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _bmc_threads() == before                       # the Redfish server and the poller stopped


def test_tolerance_is_the_worst_case_of_the_bounds() -> None:
    """The derivation on made-up rows: exact energies shifted by their bounds, signs chosen by A, move the least-
    squares coefficient by exactly the stated tolerance (so the tolerance is attained, not loose)."""
    rows = [{"time_s": str(t), "flops_dp": str(w), "bytes_mem": str(q), "energy_err_j": str(e)}
            for t, w, q, e in ((10, 1e11, 1e12, 5), (10, 4e11, 5e11, 5), (10, 2e12, 2e11, 6), (10, 3e12, 1e11, 5))]
    tol = tolerance(rows)
    x = np.array([[float(r["time_s"]), float(r["flops_dp"]), float(r["bytes_mem"])] for r in rows])
    err = np.array([float(r["energy_err_j"]) for r in rows])
    a = np.linalg.pinv(x)
    c = np.array([150.0, 500e-12, 1e-9])
    for i, k in enumerate(("pi0", "eps_flop_dp", "eps_mem")):
        y = x @ c + np.sign(a[i]) * err
        moved = (a @ y)[i] - c[i]
        assert moved == pytest.approx(tol[k], rel=1e-6)
