"""archline powers: power across platforms (S1 Ch. 4): S1 Fig. 12's comparison, S1 Fig. 14's throttling spread and
the pi0-share correlation (S1 §4.4.3). S1 Table 6 (every platform's pi0, delta_pi, eps_flop) is absent from the
thesis's text, so what the shipped profiles can reproduce is the streaming energies of S1 §4.4.3; the Titan's
capped model is the one S1 §4.4.4's own numbers determine (docs/analyses.md, power-bound), given with --set."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archline.fit.analyses.choi import powers as pw

#: S1 §4.4.4's Titan: 140 W = pi0 + delta_pi/8, 280 W = pi0 + delta_pi -> pi0 120 W, delta_pi 160 W;
#: tau_mem = 515 pJ/B / pi0 (S1 §4.4.3); eps_hat = 1/(16 Gflop/J) = 62.5 pJ split as 30 pJ + pi0*tau_flop
TITAN = ["--set", "titan:pi0=120", "--set", "titan:delta_pi=160", "--set", "titan:eps_flop_sp=30e-12",
         "--set", f"titan:peak_flop_per_s_sp={120 / 32.5e-12!r}", "--set", f"titan:peak_byte_per_s={120 / 515e-12!r}"]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str], str]]]:
    from matplotlib.figure import Figure

    from archline.fit.figure_layout import overlaps

    seen: list[tuple[str, list[str], str]] = []
    orig = Figure.savefig

    def savefig(self: Any, fname: Any, *a: Any, **k: Any) -> Any:
        seen.append((Path(str(fname)).name, overlaps(self), self._suptitle.get_text()))
        return orig(self, fname, *a, **k)

    monkeypatch.setattr(Figure, "savefig", savefig)
    yield seen


def test_streaming_energy_per_byte_s1_4_4_3(run_cli: Callable[..., Any]) -> None:
    """S1 §4.4.3: eps_mem + tau_mem*pi0 is 782 pJ/B (GTX Titan), 671 pJ/B (Arndale GPU), 1.13 nJ/B (Xeon Phi); the
    "memory" efficiencies 1.3 and 1.5 Gflop/J. From the shipped profiles alone."""
    r = run_cli("powers", "xeon-phi", "titan", "arndale-gpu", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = {p["platform"]: p for p in json.loads(r.stdout)["platforms"]}
    assert d["titan"]["streaming_j_per_byte"] == pytest.approx(782e-12, rel=1e-9)
    assert d["arndale-gpu"]["streaming_j_per_byte"] == pytest.approx(671e-12, rel=1e-9)
    assert d["xeon-phi"]["streaming_j_per_byte"] == pytest.approx(1.13e-9, rel=1e-9)
    assert round(d["titan"]["memory_flop_per_j"] / 1e9, 1) == 1.3
    assert round(d["arndale-gpu"]["memory_flop_per_j"] / 1e9, 1) == 1.5
    # the Table 6 constants are absent: no peak efficiency, no pi0 share, and the output says which are missing
    assert d["titan"]["peak_flop_per_j"] is None and "pi0" in d["titan"]["missing"]


def test_compare_order_and_titan_peak_s1_fig12(run_cli: Callable[..., Any], tmp_path: Path,
                                               drawn: list[tuple[str, list[str], str]]) -> None:
    """S1 Fig. 12 orders platforms by decreasing peak energy efficiency, the Titan first at 16 Gflop/J and the
    desktop CPU (Nehalem) last (620 Mflop/J; archline's i7-950 from S1 Table 4 gives 0.66)."""
    out = tmp_path / "f12.png"
    r = run_cli("powers", "i7-950", "titan", "gtx580", "xeon-phi", *TITAN, "--format", "json", "--plot", str(out))
    assert r.exit_code == 0, r.stderr
    ps = json.loads(r.stdout)["platforms"]
    assert [p["platform"] for p in ps] == ["titan", "gtx580", "i7-950", "xeon-phi"]
    assert ps[0]["peak_flop_per_j"] == pytest.approx(16e9, rel=1e-3)
    assert round(ps[2]["peak_flop_per_j"] / 1e9, 2) == pytest.approx(0.62, abs=0.05)
    # within a platform the power spans less than 2x (S1 §4.4.3: "less than 2x")
    for p in ps[:3]:
        assert max(p["power_w"]) / min(p["power_w"]) < 2
    assert out.exists() and drawn and drawn[-1][1] == [] and "S1 Fig. 12" in drawn[-1][2]


def test_throttle_spread_s1_fig14(run_cli: Callable[..., Any], tmp_path: Path,
                                  drawn: list[tuple[str, list[str], str]]) -> None:
    """S1 §4.4.4 / Fig. 14: at delta_pi/8 the Titan runs at about 0.31x at I = 0.25; power falls by less than k
    (pi0 > 0); every platform with delta_pi is drawn, those without are named."""
    out = tmp_path / "f14.png"
    r = run_cli("powers", "titan", "gtx580", "i7-950", *TITAN, "--set", "gtx580:delta_pi=150", "--kind",
                "throttle-spread", "-i", "0.25,4,64", "--format", "json", "--plot", str(out))
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    by = {p["platform"]: p for p in d["platforms"]}
    assert by["titan"]["rel_perf"][0] == pytest.approx(0.31, abs=0.01)
    for p in by.values():
        assert all(1 / 8 < x < 1 for x in p["rel_power"])             # "reduces overall power by less than k"
        assert all(1 / 8 - 1e-9 <= x < 1 for x in p["rel_perf"] + p["rel_eff"])
    assert d["skipped"] == {"i7-950": ["delta_pi"]}
    assert drawn[-1][1] == [] and "S1 Fig. 14" in drawn[-1][2]
    r = run_cli("powers", "gtx580", "--kind", "throttle-spread")
    assert r.exit_code == 2 and "gtx580: no delta_pi" in r.stderr and "--set" in r.stderr


def test_pi0_share_s1_4_4_3(run_cli: Callable[..., Any], tmp_path: Path,
                            drawn: list[tuple[str, list[str], str]]) -> None:
    """S1 §4.4.3: pi0/(pi0 + delta_pi) above 50% on 7 of 12, correlation about -0.6 with peak efficiency. Not
    computable from the shipped profiles (no delta_pi anywhere: the command says so); the Titan's share from
    S1 §4.4.4 is 120/280; the correlation is Pearson's on archline's own peak efficiencies."""
    r = run_cli("powers", "--kind", "pi0-share")
    assert r.exit_code == 0, r.stderr
    assert "above 50%: 0 of 0" in r.stdout and "correlation with peak energy efficiency: not computable" in r.stdout
    out = tmp_path / "share.png"
    r = run_cli("powers", "titan", "gtx580", "gtx680", "i7-950", *TITAN, "--set", "gtx580:delta_pi=150",
                "--set", "gtx680:delta_pi=120", "--set", "i7-950:delta_pi=40", "--kind", "pi0-share",
                "--format", "json", "--plot", str(out))
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    share = {p["platform"]: p["pi0_share"] for p in d["platforms"]}
    assert share["titan"] == pytest.approx(120 / 280)
    assert share["i7-950"] == pytest.approx(122 / 162)
    assert d["above_half"] == 1
    xs = [p["pi0_share"] for p in d["platforms"]]
    ys = [p["peak_flop_per_j"] for p in d["platforms"]]
    assert d["correlation"] == pytest.approx(float(np.corrcoef(xs, ys)[0, 1]))
    assert drawn[-1][1] == [] and "4.4.3" in drawn[-1][2]


def test_set_must_name_an_argument() -> None:
    with pytest.raises(pw.PowersError, match="not among the arguments"):
        pw.settings_by_platform(["gtx580"], [("titan", "pi0", 1.0)])


# --- folded from test_breaker27_models.py (a review round's regression tests) ------------------------------------
# Regressions for a hostile tester's findings on the issue-27 model commands (power-bound, iso-power, powers and
# their --set KEY=VALUE parsing): each reproducer must end as one line `archline: error: ...` with exit 2 (never a
# traceback, a negative pi0 or an inf in a table), using formats/costs_units.implausible for non-physical values.


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
