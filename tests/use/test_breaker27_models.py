"""Regressions for a hostile tester's findings on the issue-27 model commands (power-bound, iso-power, powers and
their --set KEY=VALUE parsing): each reproducer must end as one line `archline: error: ...` with exit 2 (never a
traceback, a negative pi0 or an inf in a table), using fit/io/costs_units.implausible for non-physical values."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_MAIN = "import sys; from archline.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _run(*args: str) -> tuple[int, str, str]:
    """The real CLI in a subprocess (main exits and quiets its streams on an error)."""
    p = subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, check=False,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def _refused(*args: str, says: str) -> None:
    rc, out, err = _run(*args)
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archline: error: "), err
    assert says in lines[0], lines[0]
    assert "Traceback" not in err and "inf" not in out


# 1: a cap of exactly full/k gives pi0 = 0 (was ZeroDivisionError); 4: below full/k a negative pi0 (was exit 0)
@pytest.mark.parametrize("args", [["--capped-power-w", "35"], ["--capped-power-w", "30"], ["--divisor", "1.0000001"],
                                  ["--capped-power-w", "35.0000001"]])
def test_power_bound_refuses_a_cap_that_leaves_no_positive_pi0(args: list[str]) -> None:
    rc, out, err = _run("power-bound", *args)
    assert rc == 2 and "pi0 -" not in out and "Traceback" not in err
    assert err.startswith("archline: error: ") and len(err.strip().splitlines()) == 1
    assert "pi0" in err or "tau_mem" in err       # 35.0000001 W: pi0 1e-7 W, so tau_mem 5 ms/B is refused


# 2: 1e308 W overflowed floor(); a power above 1 MW is not a machine's (costs_units.implausible)
def test_power_bound_refuses_powers_above_a_megawatt() -> None:
    _refused("power-bound", "--full-power-w", "1e308", "--capped-power-w", "1e307",
             says="not a real machine's")


# 5: --boards-ratio 1e308 printed '= inf-infx'; a board count past float range overflowed
@pytest.mark.parametrize("args", [["--boards-ratio", "1e308"], ["--boards", "1" + "0" * 330]])
def test_power_bound_refuses_an_infinite_speedup(args: list[str]) -> None:
    _refused("power-bound", *args, says="finite speedup")


def test_power_bound_default_still_reproduces_the_thesis() -> None:
    rc, out, _ = _run("power-bound", "--format", "json")
    r = json.loads(out)
    assert rc == 0 and r["pi0_w"] == pytest.approx(120) and r["boards"] == 23


# 3: --power-b 1e-308 made N infinite (OverflowError in floor)
def test_iso_power_refuses_an_infinite_n() -> None:
    _refused("iso-power", "titan", "arndale-gpu", "--power-b", "1e-308", says="not a finite number")


# 5: a 1e308 W budget printed 'aggregate peak: infx' and a 300-digit N; --power-a/-b above 1 MW likewise
@pytest.mark.parametrize("args", [["--budget-w", "1e308"], ["--power-a", "1e308"], ["--power-b", "2e6"]])
def test_iso_power_refuses_powers_above_a_megawatt(args: list[str]) -> None:
    _refused("iso-power", "titan", "arndale-gpu", *args, says="not a real machine's")


# 5 and 11: --set-a eps_flop_sp=1e308 printed inf energies; 25 or 30 (pJ without e-12) was taken as J/flop
@pytest.mark.parametrize("opt,value", [("--set-a", "eps_flop_sp=1e308"), ("--set-b", "eps_flop_sp=25"),
                                       ("--set-b", "eps_mem=200"), ("--set-a", "pi0=2e6")])
def test_iso_power_set_refuses_implausible_values(opt: str, value: str) -> None:
    _refused("iso-power", "titan", "jetson-tk1", "--n", "22", opt, value, "--set-a", "eps_mem=200e-12",
             says="not a real machine's")


def test_iso_power_a_huge_n_is_refused_not_a_traceback() -> None:
    _refused("iso-power", "titan", "jetson-tk1", "--n", "1" + "0" * 330, says="overflows")


# 13: a key given twice was accepted silently (the later won)
@pytest.mark.parametrize("args,says", [
    (["iso-power", "titan", "jetson-tk1", "--n", "22", "--set-a", "pi0=120", "--set-a", "pi0=130"], "twice"),
    (["iso-power", "titan", "jetson-tk1", "--n", "22", "--set-b", "pi0=2", "--set-b", "pi0=2"], "twice"),
    (["powers", "titan", "--set", "titan:pi0=120", "--set", "titan:pi0=130"], "twice")])
def test_a_setting_given_twice_is_refused(args: list[str], says: str) -> None:
    _refused(*args, says=says)


# 11: powers --set titan:eps_flop_sp=30 (30 J/flop) was accepted
@pytest.mark.parametrize("value", ["titan:eps_flop_sp=30", "titan:eps_mem=267", "titan:delta_pi=1.6e8"])
def test_powers_set_refuses_implausible_values(value: str) -> None:
    _refused("powers", "titan", "--set", value, says="not a real machine's")


# 13: the given pi0 was shown as '-' (JSON null) when the model was incomplete
def test_powers_shows_a_given_pi0_without_a_full_model() -> None:
    rc, out, _ = _run("powers", "titan", "--set", "titan:pi0=120", "--format", "json")
    (titan,) = json.loads(out)["platforms"]
    assert rc == 0 and titan["pi0_w"] == 120.0 and "pi0" not in titan["missing"]
    rc, out, _ = _run("powers", "titan", "--set", "titan:pi0=120")
    row = next(line for line in out.splitlines() if line.startswith("titan"))
    assert rc == 0 and " 120 " in row
