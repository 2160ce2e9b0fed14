"""The cost table (archline.costs/1) has one owner, formats/costs.py: units honoured or refused, non-physical values
refused with one line naming the key, read once (a pipe works), written and read back unchanged."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archline.formats.costs import COSTS_SCHEMA, CostTable
from archline.formats.costs_units import UNITS, UnitError, parse_unit, si_factor
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ProfileFormatError

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "results" / "sample" / "gtx580.costs.json"

#: a small table in SI
SI: dict[str, Any] = {
    "schema": COSTS_SCHEMA, "platform": "toy", "model": "basic", "emulated": True, "n_points": 10,
    "coefficients": {"eps_flop_sp": {"value": 100e-12, "stderr": 1e-12, "ci95": [98e-12, 102e-12], "unit": "J/flop"},
                     "eps_flop_dp": {"value": 200e-12, "unit": "J/flop"},
                     "eps_mem": {"value": 500e-12, "unit": "J/byte"},
                     "pi0": {"value": 120.0, "unit": "W"}},
    "tau": {"tau_flop_sp": {"value": 0.7e-12, "unit": "s/flop"}, "tau_flop_dp": {"value": 5e-12, "unit": "s/flop"},
            "tau_mem": {"value": 6e-12, "unit": "s/byte"}},
    "quality": {"r2": 0.99},
}


def _doc(**changes: Any) -> dict[str, Any]:
    """SI with ``section.name.key=value`` changes (value None deletes)."""
    d = json.loads(json.dumps(SI))
    for dotted, v in changes.items():
        *path, last = dotted.split("__")
        node = d
        for k in path:
            node = node.setdefault(k, {})
        if v is None:
            node.pop(last, None)
        else:
            node[last] = v
    return d


def _write(tmp_path: Path, doc: Any, name: str = "c.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


# --- 1. units --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "unit", "factor"), [
    ("eps_flop_sp", "pJ/flop", 1e-12), ("eps_flop_sp", "nJ/flop", 1e-9), ("eps_flop_sp", "fJ/flop", 1e-15),
    ("eps_mem", "pJ/B", 1e-12), ("eps_mem", "pJ/byte", 1e-12), ("eps_mem", "J/byte", 1.0),
    ("eps_rand", "nJ/access", 1e-9), ("eps_int", "pJ/op", 1e-12), ("pi0", "W", 1.0), ("pi0", "mW", 1e-3),
    ("pi0", "kW", 1e3), ("tau_flop_sp", "ps/flop", 1e-12), ("tau_mem", "ns/B", 1e-9), ("tau_mem", "s/byte", 1.0),
    ("c0_mem", "pJ/(B V^2)", 1e-12), ("c0_core_single", "J/(flop*V^2)", 1.0), ("c1_core", "mW/V", 1e-3),
])
def test_known_units_convert_to_si(name: str, unit: str, factor: float) -> None:
    assert si_factor(name, unit) == pytest.approx(factor)


@pytest.mark.parametrize(("name", "unit"), [("eps_mem", "W"), ("eps_mem", "pJ/flop"), ("pi0", "J"),
                                            ("tau_mem", "pJ/B"), ("eps_flop_sp", "furlongs"), ("pi0", "")])
def test_wrong_or_unknown_units_are_refused(name: str, unit: str) -> None:
    with pytest.raises(UnitError, match=f"'{unit}'"):
        si_factor(name, unit)


def test_every_si_unit_parses_as_itself() -> None:
    for si in set(UNITS.values()):
        assert parse_unit(si)[0] == 1.0


def test_pj_per_flop_table_predicts_what_the_si_table_does(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """The bug: "pJ/flop" was read as J/flop and `model predict` showed 1.5e14 W."""
    si = _write(tmp_path, SI, "si.json")
    pj = _write(tmp_path, _doc(coefficients__eps_flop_sp={"value": 100.0, "stderr": 1.0, "unit": "pJ/flop"},
                               coefficients__eps_mem={"value": 0.5, "unit": "nJ/B"},
                               coefficients__pi0={"value": 120000.0, "unit": "mW"},
                               tau__tau_mem={"value": 6.0, "unit": "ps/byte"}), "pj.json")
    a = run_cli("model", "predict", str(si), "-i", "0.5,4", "--format", "json")
    b = run_cli("model", "predict", str(pj), "-i", "0.5,4", "--format", "json")
    assert a.exit_code == 0 and b.exit_code == 0, a.stderr + b.stderr
    for x, y in zip(json.loads(a.stdout)["points"], json.loads(b.stdout)["points"], strict=True):
        assert y["power_w"] == pytest.approx(x["power_w"], rel=1e-9) and y["power_w"] < 1000
    t = CostTable.load(pj)
    assert t.coefficients["eps_flop_sp"].unit == "J/flop" and t.coefficients["eps_flop_sp"].stderr == \
        pytest.approx(1e-12)


def test_mismatched_unit_is_one_line_naming_file_coefficient_and_unit(run_cli: Callable[..., Any],
                                                                       tmp_path: Path) -> None:
    p = _write(tmp_path, _doc(coefficients__eps_mem={"value": 5.0, "unit": "W"}))
    r = run_cli("model", "predict", str(p), "-i", "1")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "c.json" in r.stderr and "eps_mem" in r.stderr and "'W'" in r.stderr


# --- 2. numbers that cannot be physical ------------------------------------------------------------------------

@pytest.mark.parametrize(("text_or_change", "key"), [
    ('"value": NaN', "coefficients.pi0.value"),
    ('"value": Infinity', "coefficients.pi0.value"),
    ('"value": -Infinity', "coefficients.pi0.value"),
    ('"value": 1e999', "coefficients.pi0.value"),
    ({"coefficients__pi0__value": -1.0}, "coefficients.pi0.value"),
    ({"coefficients__eps_mem__value": -1e-12}, "coefficients.eps_mem.value"),
    ({"coefficients__eps_mem__value": None}, "coefficients.eps_mem"),
    ({"coefficients__eps_mem__value": "big"}, "coefficients.eps_mem.value"),
    ({"coefficients__eps_mem__stderr": -1.0}, "coefficients.eps_mem.stderr"),
    ({"coefficients__delta_pi": {"value": 0.0, "unit": "W"}}, "coefficients.delta_pi.value"),
    ({"coefficients__delta_pi": {"value": -5.0, "unit": "W"}}, "coefficients.delta_pi.value"),
    ({"tau__tau_mem__value": 0.0}, "tau.tau_mem.value"),
    ({"tau__tau_flop_sp__value": -1e-12}, "tau.tau_flop_sp.value"),
    ({"settings": [{"core_mhz": 0, "mem_mhz": 900, "eps_mem": 1e-10}]}, "settings[0].core_mhz"),
    ({"settings": [{"core_mhz": 800, "mem_mhz": 900, "pi0": -3.0}]}, "settings[0].pi0"),
])
def test_non_physical_values_are_refused_naming_the_key(run_cli: Callable[..., Any], tmp_path: Path,
                                                       text_or_change: str | dict[str, Any], key: str) -> None:
    if isinstance(text_or_change, str):
        text = json.dumps(SI).replace('"value": 120.0', text_or_change)
        assert text_or_change in text
        p = _write(tmp_path, text)
    else:
        p = _write(tmp_path, _doc(**text_or_change))
    with pytest.raises(ProfileFormatError, match=key.replace("[", r"\[").replace("]", r"\]")):
        CostTable.load(p)
    r = run_cli("model", "show", str(p))
    assert r.exit_code == 2 and key in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_zero_where_physical_and_absent_delta_pi_are_accepted(tmp_path: Path) -> None:
    """A free operation (eps = 0), no constant power (pi0 = 0), a difference below 0 and no cap are physical."""
    p = _write(tmp_path, _doc(coefficients__eps_l1={"value": 0.0, "unit": "J/byte"},
                              coefficients__pi0={"value": 0.0, "unit": "W"},
                              coefficients__delta_eps_dp={"value": -1e-12, "unit": "J/flop"}))
    pl = load_platform(str(p))
    m = pl.machine("sp")
    assert m.pi0_w == 0.0 and math.isinf(m.delta_pi_w) and pl.value("eps_l1") == 0.0


def test_a_newer_schema_and_a_list_of_tables_say_so(tmp_path: Path) -> None:
    with pytest.raises(ProfileFormatError, match=r"archline\.costs/2"):
        CostTable.load(_write(tmp_path, _doc(schema="archline.costs/2")))
    with pytest.raises(ProfileFormatError, match="holds 2 cost tables"):
        CostTable.load(_write(tmp_path, [SI, SI]))
    # issue 34 finding 9: a platform's real and emulated tables are two tables of one platform, said so
    real, emu = {**SI, "platform": "localhost", "emulated": False}, {**SI, "platform": "localhost", "emulated": True}
    with pytest.raises(ProfileFormatError, match=r"one per platform and source.*localhost, localhost \(emulated\)"):
        CostTable.load(_write(tmp_path, [real, emu]))


# --- the owner: written and read back; every reader goes through it ----------------------------------------

def test_sample_table_round_trips(tmp_path: Path) -> None:
    t = CostTable.load(SAMPLE)
    out = t.dump(tmp_path / "again.json")
    assert json.loads(out.read_text()) == json.loads(SAMPLE.read_text())
    assert CostTable.load(out).to_dict() == t.to_dict()


def test_cost_tables_are_parsed_only_by_their_owner() -> None:
    """No other module names the schema or loads JSON for a cost table (profiles calls CostTable.load)."""
    offenders = []
    for room in ("cli", "fit", "bench", "powermon", "formats", "model", "common"):
        for p in (REPO / room).rglob("*.py"):
            rel = str(p.relative_to(REPO))
            if rel.startswith("formats/costs"):
                continue
            text = p.read_text()
            if '"archline.costs/' in text:
                offenders.append(rel)
    assert not offenders, offenders


def _fifo_with(tmp_path: Path, data: bytes) -> tuple[Path, threading.Thread]:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return fifo, t


@pytest.mark.parametrize("what", ["costs", "profile"])
def test_model_show_reads_a_pipe_once(run_cli: Callable[..., Any], tmp_path: Path, what: str) -> None:
    """`archline model show <(cat costs.json)`: the name says nothing, the content says which; read once."""
    data = SAMPLE.read_bytes() if what == "costs" else (REPO / "formats" / "platforms" / "gtx580.toml").read_bytes()
    fifo, t = _fifo_with(tmp_path, data)
    r = run_cli("model", "show", str(fifo))
    t.join(5)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("gtx580")
