"""The Q-id table (tests/qids/qid_coverage.csv): every quantitative result of the papers (Q001-Q153 of the
reference's quantitative_results.csv), its status and the test that checks it.

Statuses (issue 27's audit rules):

* reproduced: computed by archline's code (a command or a library function, named in the ``calls`` column) from
  the papers' inputs and equal to the printed value within the tolerance its test states;
* inconsistent: the papers' own inputs cannot give the printed value; the note says which input and shows both,
  the test asserts the inputs' value;
* measured: a value from the authors' hardware that no input determines (a test may compare the model with it);
* not_computable: needs a value the papers' text does not give (S1 Table 6 is absent);
* input: a stated value archline carries in its data or defaults (the test checks it);
* context: a number no model or data of archline uses."""

from __future__ import annotations

import ast
import csv
import importlib
import inspect
import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
TABLE = Path(__file__).resolve().parent / "qid_coverage.csv"
STATUSES = {"reproduced", "inconsistent", "measured", "input", "context", "not_computable"}


def _rows() -> list[dict[str, str]]:
    with TABLE.open() as f:
        return list(csv.DictReader(f))


def _ids_in_name(name: str) -> set[int]:
    """q001_q002 -> {1, 2}; q043_to_q047 -> {43..47}."""
    out: set[int] = set()
    for a, b in re.findall(r"q(\d{3})_to_q(\d{3})", name):
        out |= set(range(int(a), int(b) + 1))
    return out | {int(x) for x in re.findall(r"q(\d{3})", name)}


def test_every_q_id_once_with_a_status() -> None:
    rows = _rows()
    assert [r["id"] for r in rows] == [f"Q{k:03d}" for k in range(1, 154)]
    assert {r["status"] for r in rows} <= STATUSES
    for r in rows:
        if r["status"] in ("inconsistent", "measured", "not_computable", "context"):
            assert r["note"], f"{r['id']}: say why"


def test_each_computable_q_id_names_its_test() -> None:
    """Every reproduced, inconsistent or input id points at a test function that exists and names the id."""
    for r in _rows():
        if r["status"] not in ("reproduced", "inconsistent", "input"):
            continue
        path, _, func = r["test"].partition("::")
        text = (TESTS.parent / path).read_text()
        assert re.search(rf"^def {func}\(", text, re.M), f"{r['id']}: {r['test']} not found"
        assert int(r["id"][1:]) in _ids_in_name(func), f"{r['id']}: {func} does not name it"


def test_coverage_counts() -> None:
    """The counts by paper and status the issue-27 report quotes (before the audit: S0 13 reproduced + 1
    inconsistent, S1 18 + 3, S2 1 + 1, S3 7 + 2), after issue 37: Q122/Q123 are inputs (their test did S3's
    subtraction and division in a function only it called), Q147 not computable like Q136."""
    c = Counter((r["paper"], r["status"]) for r in _rows())
    computable = {p: (c[(p, "reproduced")], c[(p, "inconsistent")]) for p in ("S0", "S1", "S2", "S3", "S4")}
    assert computable == {"S0": (13, 1), "S1": (17, 1), "S2": (2, 0), "S3": (6, 0), "S4": (0, 0)}
    assert sum(v for (_, s), v in c.items() if s == "measured") == 34


def _function_node(path: Path, func: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == func)


def _names_used(fn: ast.FunctionDef, module: ast.Module) -> set[str]:
    """Every identifier and attribute the test function reads, and those of the module-level assignments it
    uses (``GPU = load_gpu(...)`` makes ``GPU.x`` a call into archline)."""
    def names(node: ast.AST) -> set[str]:
        out: set[str] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                out.add(n.value)
        return out

    used = names(fn)
    for stmt in module.body:
        if isinstance(stmt, (ast.Assign, ast.FunctionDef)):
            targets = [stmt.name] if isinstance(stmt, ast.FunctionDef) else [
                t.id for t in stmt.targets if isinstance(t, ast.Name)]
            if set(targets) & used:
                used |= names(stmt)
    return used


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_every_reproduced_q_id_calls_archline() -> None:
    """No reproduced id rests on arithmetic with printed numbers alone: each names in ``calls`` the archline
    function (or method, property, command) that computes it, the name resolves to code in the archline package,
    and its test function (or a module-level value it uses) refers to it."""
    for r in _rows():
        if r["status"] != "reproduced":
            assert not r["calls"], f"{r['id']}: calls is for reproduced ids"
            continue
        assert r["calls"], f"{r['id']}: reproduced, but no archline function is named in calls"
        path, _, func = r["test"].partition("::")
        file = TESTS.parent / path
        module = ast.parse(file.read_text())
        used = _names_used(_function_node(file, func), module)
        for dotted in r["calls"].split(";"):
            assert dotted.startswith("archline."), f"{r['id']}: {dotted} is not archline's"
            obj = _resolve(dotted)
            target = obj.fget if isinstance(obj, property) else obj
            mod = getattr(inspect.getmodule(target), "__name__", "")
            assert mod.startswith("archline."), f"{r['id']}: {dotted} is defined outside archline ({mod})"
            assert dotted.rsplit(".", 1)[1] in used, f"{r['id']}: {func} never refers to {dotted}"


def test_the_call_check_catches_arithmetic() -> None:
    """The check above fails a test that only does arithmetic on printed numbers."""
    src = ast.parse("def test_q999_x() -> None:\n    assert 14 - 4 == 10\n")
    fn = next(n for n in ast.walk(src) if isinstance(n, ast.FunctionDef))
    assert "static_power_increase_w" not in _names_used(fn, src)
