"""End to end on emulated platforms: bench run --emulate (the real PowerMon 2 driver over a pty talking to the
emulator, whose power follows the capped model), then archline fit recovers the coefficients put in (issue 7).

Input values: thesis Table 4 for the GTX 580 (S1 Table 4 = S0 Table IV: eps_s 99.7 pJ/flop, eps_d 212 pJ/flop,
eps_mem 513 pJ/B, pi0 122 W), and a user-written profile with other values.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from support.made_up_profile import VALUES, made_up_profile

from archline.bench.config.options import RunOptions
from archline.bench.run.session import run_once
from archline.cli.main import main

TOL_REL = 0.03

GTX580_TABLE4 = {"eps_flop_sp": 99.7e-12, "eps_flop_dp": 212e-12, "eps_mem": 513e-12, "pi0": 122.0}

USER_PROFILE = made_up_profile("mybox", "a user's made-up accelerator", """
[[meters]]
name = "pm"
kind = "powermon2"
channels = [
  { id = 0, rail = "main_12v", device = "card", nominal_v = 12.0, share = 0.7 },
  { id = 5, rail = "aux_5v", device = "card", nominal_v = 5.0, r_sense_ohm = 0.002, share = 0.3 },
]
""")
USER_VALUES = VALUES


def _read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _fit(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    capsys.readouterr()
    rc = main(["fit", *map(str, paths), "--model", "basic", "--format", "json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    costs = json.loads(out)
    assert costs["schema"] == "archline.costs/1"
    return {k: v["value"] for k, v in costs["coefficients"].items()}


def _run_and_fit(platform: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    out = run_once(RunOptions(platform=platform, emulate=True, kernels=("intensity",), precisions=("sp", "dp"),
                              quick=True, time_compression=100.0, seed=3), tmp)
    assert out.failed == 0 and out.rows > 0
    rows = _read_rows(out.results)
    assert len(rows) == out.rows
    for r in rows:
        assert r["schema"] == "archline.results/1"
        assert r["backend"] == "emulated" and r["emulated"] == "true"
        assert "emulated" in r["device"] and "powermon2-emulated" in r["meter"]
        assert int(r["n_samples"]) >= 128            # --quick: >= 1 s of 128 Hz samples per point
        assert float(r["energy_err_j"]) < 0.02 * float(r["energy_j"])
        assert r["trace"] and (tmp / r["trace"]).exists()
    assert not list(tmp.glob("*.partial"))
    return _fit([out.results], capsys)


def test_runner_emulated_gtx580_fit_recovers_table4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = _run_and_fit("gtx580", tmp_path, capsys)
    for k, want in GTX580_TABLE4.items():
        assert got[k] == pytest.approx(want, rel=TOL_REL), (k, got[k], want)


def test_runner_emulated_user_profile_fit_recovers_its_values(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "mybox.toml"
    prof.write_text(USER_PROFILE)
    got = _run_and_fit(str(prof), tmp_path / "out", capsys)
    for k, want in USER_VALUES.items():
        assert got[k] == pytest.approx(want, rel=TOL_REL), (k, got[k], want)


def test_runner_emulated_power_cap_follows_capped_model(tmp_path: Path) -> None:
    """Under a cap the emulated device throttles (eq.34): power stays at pi0 + delta_pi, time stretches."""
    from archline.bench.emulated.backend import EmulatedBackend
    from archline.bench.kernels import Counts

    cap_w = 200.0
    out = run_once(RunOptions(platform="gtx580", emulate=True, kernels=("intensity",), precisions=("sp",), quick=True,
                              time_compression=100.0, power_caps_w=(cap_w,)), tmp_path)
    rows = _read_rows(out.results)
    model = EmulatedBackend("gtx580", power_cap_w=cap_w).model
    cols = ("flops_sp", "flops_dp", "bytes_mem")
    for r in rows:
        assert float(r["power_cap_w"]) == cap_w and float(r["power_cap_requested_w"]) == cap_w
        assert float(r["power_w"]) <= cap_w * 1.005
        c = Counts(**{k: int(r[k]) for k in cols})
        assert float(r["time_s"]) == pytest.approx(model.time_s(c), rel=1e-9)
        assert float(r["energy_j"]) == pytest.approx(model.energy_j(c), rel=0.005)
    assert any(float(r["power_w"]) > cap_w * 0.99 for r in rows)   # the cap binds somewhere


def test_runner_bench_run_cli_emulate_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "run", "--platform", "gtx580", "--emulate", "--quick", "--kernel", "intensity",
               "--precision", "dp", "--time-compression", "100", "--out", str(tmp_path)])
    assert rc in (0, None)
    files = list(tmp_path.glob("*.csv"))
    assert len(files) == 1 and len(_read_rows(files[0])) == 11
    # errors: one line, no traceback, non-zero
    for argv, text in (
        (["bench", "run", "--platform", "nosuch", "--emulate"], "unknown platform 'nosuch'"),
        (["bench", "run", "--platform", "gtx580", "--emulate", "--power-cap", "5000"], "allowed range"),
    ):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert text in err and "Traceback" not in err


def test_runner_configured_meter_missing_is_a_clear_error(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "lab.toml"
    prof.write_text(USER_PROFILE.replace('name = "mybox"', 'name = "lab"')
                    .replace('kind = "powermon2"', 'kind = "powermon2"\nport = "/dev/ttyNOSUCH9"')
                    + '\n[bench]\nbackend = "cpu_asm"\n')
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--platform", str(prof), "--quick", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert e.value.code == 4, err
    assert "meter 'pm'" in err and "/dev/ttyNOSUCH9" in err and "does not exist" in err


def test_runner_profile_typo_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "typo.toml"
    prof.write_text(USER_PROFILE + "\n[bench]\nrepz = 5\n")
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--platform", str(prof), "--emulate", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "unknown key 'repz'" in err and "did you mean 'reps'" in err
