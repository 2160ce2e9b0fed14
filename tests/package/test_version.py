"""--version's commit (archline.common.version): a modified checkout says (dirty); a stamped build says which commit
it was built from. And the README states the units rule the JSON outputs really follow. (Issue 26's review round.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from archline.common.version import STAMP_NAME, source_commit

REPO = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, capture_output=True, text=True, check=True, timeout=30).stdout.strip()


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text("x = 1\n")
    _git(tmp_path, "add", "pkg/mod.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return pkg


def test_a_clean_checkout_gives_its_commit(checkout: Path) -> None:
    head = _git(checkout, "rev-parse", "--short", "HEAD")
    assert source_commit(checkout) == head


def test_a_modified_checkout_is_dirty(checkout: Path) -> None:
    head = _git(checkout, "rev-parse", "--short", "HEAD")
    (checkout.parent / "untracked.txt").write_text("not part of the code\n")
    assert source_commit(checkout) == head           # an untracked file changes no running code
    (checkout / "mod.py").write_text("x = 2\n")
    assert source_commit(checkout) == f"{head} (dirty)"


def test_a_stamped_build_names_the_commit_it_was_built_from(tmp_path: Path) -> None:
    (tmp_path / STAMP_NAME).write_text("abc1234\n")
    assert source_commit(tmp_path) == "abc1234 (built from)"
    (tmp_path / STAMP_NAME).unlink()
    assert source_commit(tmp_path).startswith("unknown")     # tmp_path is no checkout


def test_the_readme_states_the_units_rule_the_json_keys_follow() -> None:
    readme = (REPO / "README.md").read_text()
    assert "JSON output uses SI units" not in readme
    out = subprocess.run([sys.executable, "-m", "archline.cli", "model", "predict", "gtx580", "-i", "1",
                          "--format", "json"], capture_output=True, text=True, timeout=60, check=True).stdout
    keys = {k for p in json.loads(out)["points"] for k in p}
    not_si = {k for k in keys if re.search(r"(^|_)g(flop|b)_per_", k)}
    assert not_si == {"gflop_per_s", "gflop_per_j"}
    assert all(f"`{k}`" in readme for k in (*sorted(not_si), "peaks_gflop_per_s", "bandwidths_gb_per_s"))


def test_errors_md_says_measure_passes_the_commands_code_through() -> None:
    text = " ".join((REPO / "docs" / "errors.md").read_text().split())
    assert "archline measure -- CMD" in text and "CMD's own exit code" in text
    assert "`--out -` is refused (exit 2" in text
