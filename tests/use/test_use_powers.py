"""archline powers: power across platforms (S1 Ch. 4): S1 Fig. 12's comparison, S1 Fig. 14's throttling spread and
the pi0-share correlation (S1 §4.4.3). S1 Table 6 (every platform's pi0, delta_pi, eps_flop) is absent from the
thesis's text, so what the shipped profiles can reproduce is the streaming energies of S1 §4.4.3; the Titan's
capped model is the one S1 §4.4.4's own numbers determine (docs/analyses.md, power-bound), given with --set."""

from __future__ import annotations

import json
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

    from archline.fit.plots.layout import overlaps

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
