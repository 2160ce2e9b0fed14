"""`archline platforms` and `archline model`: output contracts and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _one_line_error(r) -> None:  # type: ignore[no-untyped-def]
    assert r.exit_code != 0
    assert "Traceback" not in r.stderr + r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("archline: error:") or lines[0].startswith("Error:")


def test_model_show_json_keys_are_symbols_in_si(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("model", "show", "fermi-sample", "--precision", "dp", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)["dp"]
    for key in ("B_tau", "B_eps", "eps_hat", "eta_flop", "pi0", "pi_flop", "pi_mem", "tau_flop", "tau_mem"):
        assert key in d
    assert d["B_eps"] == pytest.approx(14.4)
    assert d["tau_flop"] == pytest.approx(1 / 515e9)
    assert "delta_pi" not in d  # not known: omitted, never 0


def test_model_predict_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("model", "predict", "gtx580", "--intensity", "0.5,8.2176,64", "--format", "json")
    assert r.exit_code == 0, r.stderr
    pts = json.loads(r.stdout)["points"]
    assert [p["intensity"] for p in pts] == [0.5, 8.2176, 64]
    assert pts[0]["gflop_per_s"] == pytest.approx(0.5 * 192.4)
    assert pts[1]["power_w"] == pytest.approx(378.3, abs=0.2)  # peak at I = B_tau


def test_capped_predict_with_user_profile(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prof = tmp_path / "mybox.toml"
    prof.write_text('''name = "mybox"
[constants]
peak_flop_per_s_sp = { value = 1e12, source = "spec" }
peak_byte_per_s = { value = 1e11, source = "spec" }
eps_flop_sp = { value = 50e-12 }
eps_mem = { value = 500e-12 }
pi0 = { value = 40.0 }
delta_pi = { value = 60.0 }
''')
    r = run_cli("model", "predict", str(prof), "-i", "10", "--format", "json")
    assert r.exit_code == 0, r.stderr
    p = json.loads(r.stdout)["points"][0]
    assert p["cap_binds"] and p["power_w"] == pytest.approx(100.0)
    r2 = run_cli("model", "predict", str(prof), "-i", "10", "--cap-divisor", "2", "--format", "json")
    assert json.loads(r2.stdout)["points"][0]["power_w"] == pytest.approx(70.0)


@pytest.mark.parametrize("args", [
    ("model", "show", "no-such-platform"),
    ("model", "predict", "gtx580", "--intensity", "-1"),
    ("model", "predict", "gtx580", "--intensity", "0"),
    ("model", "predict", "gtx580", "--intensity", "abc"),
    ("model", "predict", "gtx580", "--intensity", "4", "--cap-divisor", "2"),  # needs delta_pi
    ("platforms", "show", "nope"),
])
def test_bad_input_one_line(run_cli, args) -> None:  # type: ignore[no-untyped-def]
    _one_line_error(run_cli(*args))


def test_missing_value_is_named(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Q097 (issue 17): the Titan's B_tau needs only its time constants (4.7 TFLOP/s, 288 GB/s: 16.3 flop/B), so
    `model show titan` shows it, and names eps_flop_sp, which the thesis does not give, for what it cannot."""
    r = run_cli("model", "show", "titan")
    assert r.exit_code == 0, r.stderr
    assert "B_tau" in r.stdout and "16.32" in r.stdout
    assert "cannot compute" in r.stdout and "eps_flop_sp" in r.stdout
    d = json.loads(run_cli("model", "show", "titan", "--format", "json").stdout)
    assert d["sp"]["B_tau"] == pytest.approx(4700 / 288)
    assert "B_eps" not in d["sp"] and "eps_flop_sp" in d["sp"]["missing"]["B_eps"]
    # issue 34: the time roofline answers (288 GB/s x 1 flop/B); energy and power are '-' and the note says why
    r = run_cli("model", "predict", "titan", "-i", "1")
    assert r.exit_code == 0, r.stderr
    assert "time roofline only" in r.stdout and "288" in r.stdout and "eps_flop_sp" in r.stdout
    assert "S1 Table 6" in r.stderr + r.stdout and "SEED" not in r.stderr + r.stdout


def test_malformed_profile_and_costs(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("name = 'x'\n[constants\n")
    _one_line_error(run_cli("model", "show", str(bad_toml)))
    typo = tmp_path / "typo.toml"
    typo.write_text("name = 'x'\n[constants]\neps_flop_spp = 1e-12\n")
    r = run_cli("model", "show", str(typo))
    _one_line_error(r)
    assert "eps_flop_spp" in r.stderr
    neg = tmp_path / "neg.toml"
    neg.write_text("name = 'x'\n[constants]\neps_mem = -1e-12\n")
    _one_line_error(run_cli("model", "show", str(neg)))
    bad_json = tmp_path / "c.json"
    bad_json.write_text("{not json")
    _one_line_error(run_cli("model", "show", str(bad_json)))
    wrong_schema = tmp_path / "w.json"
    wrong_schema.write_text('{"schema": "something/1"}')
    _one_line_error(run_cli("model", "show", str(wrong_schema)))
    _one_line_error(run_cli("model", "show", str(tmp_path / "missing.json")))


def test_costs_json_works_like_a_profile(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    costs = {"schema": "archline.costs/1", "platform": "gtx580-fit", "model": "basic", "emulated": True,
             "coefficients": {"eps_flop_sp": {"value": 99.7e-12, "unit": "J/flop"},
                              "eps_flop_dp": {"value": 212e-12, "unit": "J/flop"},
                              "eps_mem": {"value": 513e-12, "unit": "J/byte"}, "pi0": {"value": 122.0, "unit": "W"}},
             "tau": {"tau_flop_sp": {"value": 1 / 1581.06e9}, "tau_flop_dp": {"value": 1 / 197.63e9},
                     "tau_mem": {"value": 1 / 192.4e9}}}
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(costs))
    r = run_cli("model", "show", str(path), "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["emulated"] is True
    assert d["sp"]["B_tau"] == pytest.approx(8.2176, rel=1e-4)
    r = run_cli("model", "show", str(path))
    assert "[emulated]" in r.stdout
    out = tmp_path / "p.png"
    r = run_cli("plot", "gtx580", str(path), "--kind", "compare", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.stat().st_size > 10_000


def test_model_show_table_gives_each_fitted_constants_stderr(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 finding 12: a table that carries standard errors shows each beside its value, in the value's unit;
    a derived symbol and a constant without one show the value alone."""
    costs = {"schema": "archline.costs/1", "platform": "t", "model": "basic", "emulated": True,
             "coefficients": {"eps_flop_sp": {"value": 99.7e-12, "stderr": 1.2e-12, "unit": "J/flop"},
                              "eps_flop_dp": {"value": 212e-12, "unit": "J/flop"},
                              "eps_mem": {"value": 513e-12, "unit": "J/byte"}, "pi0": {"value": 122.0, "unit": "W"}},
             "tau": {"tau_flop_sp": {"value": 4.962e-12, "stderr": 0.034e-12},
                     "tau_flop_dp": {"value": 1 / 197.63e9}, "tau_mem": {"value": 1 / 192.4e9}}}
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(costs))
    r = run_cli("model", "show", str(path))
    assert r.exit_code == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.split()}
    assert "4.962 ± 0.034" in rows["tau_flop"] and "99.7 ± 1.2" in rows["eps_flop"]
    assert "±" not in rows["tau_mem"] and "±" not in rows["B_tau"] and "212 " in rows["eps_flop"]


def test_model_plot_writes_figure(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "g.png"
    r = run_cli("model", "plot", "gtx580", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_platforms_list_and_show(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("platforms", "list", "--format", "json")
    names = {p["name"] for p in json.loads(r.stdout)}
    assert {"gtx580", "gtx680", "i7-950", "fermi-sample", "titan", "xeon-phi", "arndale-gpu", "jetson-tk1"} <= names
    assert len(names) >= 14  # the 12 platforms of S1 Table 6 (GTX 580/680 and the i7-950 among them) + fermi + jetson
    r = run_cli("platforms", "show", "gtx580", "--format", "json")
    c = json.loads(r.stdout)["constants"]
    assert c["eps_flop_sp"]["source"].startswith("S1 Table 4")
    assert c["delta_pi"]["value"] is None


def test_plot_ceilings(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.png"
    r = run_cli("plot", "gtx580", "gtx680", "--kind", "ceilings", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def _time_only_results(path: Path) -> None:
    cols = ["schema", "run_id", "platform", "backend", "kernel", "precision", "level", "reps", "time_s", "energy_j",
            "flops_sp", "flops_dp", "bytes_mem", "checksum_ok"]
    rows = []
    for inten in (0.25, 1, 4, 16, 64):
        flops = int(inten * 1e9)
        t = max(flops / 50e9, 1e9 / 20e9)  # a 50 GFLOP/s, 20 GB/s machine
        rows.append(["archline.results/1", "r", "box", "cpu_asm", "intensity", "dp", "mem", 1, t, "", 0, flops,
                     int(1e9), "true"])
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")


def test_plot_time_only_results_draw_observed_roofline(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.fit.plots.inputs import load_plot_inputs

    csv_path = tmp_path / "r.csv"
    _time_only_results(csv_path)
    curves, _measured = load_plot_inputs([str(csv_path)], "dp")
    assert curves[0].time_only
    assert 1 / curves[0].machine.tau_flop_s == pytest.approx(50e9)
    assert 1 / curves[0].machine.tau_mem_s_per_byte == pytest.approx(20e9)
    out = tmp_path / "o.png"
    r = run_cli("plot", str(csv_path), "--precision", "dp", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.exists()
    r = run_cli("plot", str(csv_path), "--precision", "dp", "--kind", "archline", "--out", str(out))
    _one_line_error(r)
    assert "time only" in r.stderr
