"""docs/formats.md documents every results column with its unit, and every format owner named there exists."""

from __future__ import annotations

import re
from pathlib import Path

from archline.formats.schema import CONTRACT, EXTRA

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "formats.md").read_text()


def test_every_results_column_is_documented_with_its_unit() -> None:
    for c in CONTRACT + EXTRA:
        m = re.search(rf"^\| `{re.escape(c.name)}` \| ([^|]*) \|", DOC, re.M)
        assert m, f"docs/formats.md does not document column {c.name}"
        assert m.group(1).strip() == (c.unit or "—"), f"{c.name}: unit {m.group(1).strip()!r} != {c.unit!r}"


def test_owner_modules_named_in_the_doc_exist() -> None:
    for path in re.findall(r"`((?:fit|bench|powermon|common)/[\w/]+(?:\.py|/))`", DOC):
        assert (ROOT / path).exists(), f"docs/formats.md names {path}, which does not exist"


def test_contributing_stands_on_its_own() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert "../shared" not in text
    for doc in re.findall(r"`(docs/\w+\.md)`", text):
        assert (ROOT / doc).exists(), doc


def test_design_page_names_files_that_exist() -> None:
    """docs/design.md (the architecture on one page) names only files and folders that exist, so it cannot go
    stale silently when one moves."""
    text = (ROOT / "docs" / "design.md").read_text()
    named = set(re.findall(r"\b((?:cli|fit|bench|powermon|formats|model|common|tests|pkg)/[\w/]*\w(?:\.py|/)?)", text))
    assert len(named) > 40
    missing = sorted(p for p in named if not (ROOT / p).exists() and not (ROOT / "tests" / p).exists())
    assert not missing, f"docs/design.md names {missing}, which do not exist"


def test_code_cites_the_design_page_by_its_sections() -> None:
    """The code cites docs/design.md (in the repository), never a DESIGN.md outside it, and each cited section
    exists."""
    sections = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "design.md").read_text(), re.M))
    cited: list[tuple[str, str]] = []
    for room in ("cli", "fit", "bench", "powermon", "formats", "model", "common", "pkg"):
        for path in (ROOT / room).rglob("*.py"):
            text = path.read_text()
            assert "DESIGN.md" not in text, f"{path.relative_to(ROOT)} cites DESIGN.md: cite docs/design.md"
            cited += [(str(path.relative_to(ROOT)), s) for s in re.findall(r"docs/design\.md §(\d+)", text)]
    assert len(cited) >= 6 and all(s in sections for _, s in cited), cited
