"""The Q-id table (tests/qids/qid_coverage.csv): every quantitative result of the papers (Q001-Q153 of the
reference's quantitative_results.csv), its status and the test that checks it.

Statuses: reproduced (a test computes the paper's number from its inputs), inconsistent (computable, but the
inputs give another number than the one printed; the test asserts the inputs' value and says why), input (a
stated value archline carries in its data; the test checks it), context (a number no model or data of archline
uses) and not_computable (measured results, or values of tables absent from the papers' text)."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
TABLE = Path(__file__).resolve().parent / "qid_coverage.csv"
STATUSES = {"reproduced", "inconsistent", "input", "context", "not_computable"}


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
        if r["status"] in ("inconsistent", "not_computable", "context"):
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
    """The counts by paper the report quotes: S0 13 reproduced + 1 inconsistent of 14 computable; S1 18 + 3 of
    21; S2 1 + 1 of 2; S3 7 + 2 of 9; S4 none computable."""
    c = Counter((r["paper"], r["status"]) for r in _rows())
    computable = {p: (c[(p, "reproduced")], c[(p, "inconsistent")]) for p in ("S0", "S1", "S2", "S3", "S4")}
    assert computable == {"S0": (13, 1), "S1": (18, 3), "S2": (1, 1), "S3": (7, 2), "S4": (0, 0)}
