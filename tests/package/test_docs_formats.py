"""docs/formats.md documents every results column with its unit, and every format owner named there exists."""

from __future__ import annotations

import re
from pathlib import Path

from archline.fit.io.schema import CONTRACT, EXTRA

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
