"""measure polls a counter meter at each phase mark of the command (breaker 24e, counters): a phase's edges then sit
at polls, so a short phase's bound is a few per cent of its energy instead of the whole span between two polls, and
the truth stays inside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

GTX580 = Path(__file__).resolve().parents[2] / "fit" / "platforms" / "gtx580.toml"
PHASES = 'for d in 0.02 0.05 0.2; do echo "begin p$d" > $ARCHLINE_MARKS; sleep $d; echo "end p$d" > $ARCHLINE_MARKS; ' \
         'sleep 0.05; done'


@pytest.mark.parametrize("kind", ["amdsmi", "hwmon"])
def test_phase_edges_are_polled(run: Any, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.powermon.counters.base import CounterMeter

    text = GTX580.read_text()
    prof = tmp_path / f"{kind}.toml"
    prof.write_text(text[: text.index("[[meters]]")] + f'[[meters]]\nname = "{kind}"\nkind = "{kind}"\n')
    marked: list[float] = []
    mark = CounterMeter.mark

    def spy(self: CounterMeter, t_s: float) -> None:
        marked.append(t_s)
        mark(self, t_s)
    monkeypatch.setattr(CounterMeter, "mark", spy)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--format", "json", "--", "sh", "-c",
                         PHASES)
    assert code == 0, err
    (r,) = json.loads(out)["runs"]
    assert len(r["phases"]) == 3
    for p in r["phases"]:
        assert any(abs(t - p["t_start_s"]) < 1e-6 for t in marked) and any(abs(t - p["t_end_s"]) < 1e-6
                                                                           for t in marked)
        assert abs(p["energy_j"] - p["truth_energy_j"]) <= p["energy_err_j"], p
        assert p["energy_err_j"] < 0.5 * p["truth_energy_j"], p     # the edges are polls: not the whole span
