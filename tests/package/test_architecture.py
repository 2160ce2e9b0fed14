"""THE statement of archline's import rules (CONTRIBUTING.md points here instead of restating them), checked on
every module's syntax tree (imports inside functions count too):

* rooms (``ALLOWED``): cli -> everything; bench -> powermon, common and fit's model, results schema, results file
  and lab data set formats, profiles and errors (never fit's regressions, analyses, plots or other file readers);
  fit -> nothing of bench or powermon; powermon -> nothing of bench or fit; common -> none of the rooms;
* sub-folders: within a room, imports between two sub-folders go one way (no pair imports each other); the pairs
  that still do are listed in ``KNOWN_SUBFOLDER_CYCLES`` with their owner, and the list may only shrink;
* size: no module in cli/, bench/, powermon/, fit/, common/ is over 400 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("cli", "bench", "powermon", "fit", "common")
ALLOWED: dict[str, tuple[str, ...]] = {
    "cli": ("archline",),
    "bench": ("archline.bench", "archline.powermon", "archline.common", "archline.fit.model",
              "archline.fit.io.schema", "archline.fit.io.results_file", "archline.fit.io.dataset",
              "archline.fit.platforms", "archline.fit.errors"),
    "fit": ("archline.fit", "archline.common"),
    "powermon": ("archline.powermon", "archline.common"),
    "common": ("archline.common",),
}
#: the version (pkg/archline/_version.py, a leaf with no imports) may be read by every room
for _room in ALLOWED:
    ALLOWED[_room] += ("archline._version",)
#: sub-folder pairs that import each other today, each to be cut by the named owner; a new pair fails, and a pair
#: that no longer imports both ways must leave this list
KNOWN_SUBFOLDER_CYCLES: dict[tuple[str, str], str] = {
    ("fit/analyses", "fit/plots"): "fit's owner (issue 27: analyses by paper)",
    ("fit/io", "fit/regress"): "fit's owner",
    ("fit/model", "fit/platforms"): "fit's owner",
    ("powermon/emulator", "powermon/powermon2"): "powermon's owner (powermon2 is being changed)",
    ("powermon/powermon2", "powermon/record"): "powermon's owner (record is being changed)",
}
MAX_LINES = 400
#: modules another issue owns right now (they may not be edited here); each names who and why
OWNED_ELSEWHERE: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(p for room in ROOMS for p in (ROOT / room).rglob("*.py") if "build" not in p.parts)


def _package(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).with_suffix("")
    return ["archline", *rel.parts][:-1]   # the package a module (or an __init__) sits in


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything ``path`` imports, relative imports resolved; ``from a import b`` gives
    ``a.b`` (b may be a module)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = _package(path)
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    if not name.startswith("archline.") and name != "archline":
        return True   # the standard library and third-party packages
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_import_rule_holds_for_every_module() -> None:
    broken = []
    for path in _modules():
        room = path.relative_to(ROOT).parts[0]
        for line, name in _imports(path):
            if not _allowed(name, ALLOWED[room]):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports {name} ({room} may import "
                              f"{', '.join(ALLOWED[room])})")
    assert not broken, "\n".join(broken)


def _subfolder_edges() -> set[tuple[str, str]]:
    """(a, b): a module of sub-folder a imports one of sub-folder b, both directories of the same room."""
    edges = set()
    for path in _modules():
        rel = path.relative_to(ROOT).parts
        if len(rel) < 3:
            continue
        a = f"{rel[0]}/{rel[1]}"
        for _, name in _imports(path):
            parts = name.split(".")
            if len(parts) >= 3 and parts[:2] == ["archline", rel[0]] and (ROOT / parts[1] / parts[2]).is_dir():
                if (b := f"{parts[1]}/{parts[2]}") != a:
                    edges.add((a, b))
    return edges


def test_subfolders_import_one_way() -> None:
    edges = _subfolder_edges()
    pairs = {tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges}
    new = sorted(p for p in pairs if p not in KNOWN_SUBFOLDER_CYCLES)
    gone = sorted(p for p in KNOWN_SUBFOLDER_CYCLES if p not in pairs)
    assert not new, f"sub-folders importing each other (make the import go one way): {new}"
    assert not gone, f"no longer a cycle, remove from KNOWN_SUBFOLDER_CYCLES: {gone}"


def test_import_rule_catches_a_violation(tmp_path: Path) -> None:
    """The checker itself: a fit module importing bench, even inside a function, is caught."""
    bad = tmp_path / "mod.py"
    bad.write_text("def f():\n    from archline.bench.run import session\n    import archline.powermon.spec\n")
    names = [n for _, n in _imports(bad)]
    assert names == ["archline.bench.run.session", "archline.powermon.spec"]
    assert not any(_allowed(n, ALLOWED["fit"]) for n in names)
    assert _allowed("numpy.linalg", ALLOWED["powermon"])


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_400_lines(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    n = len(path.read_text().splitlines())
    if rel in OWNED_ELSEWHERE and n > MAX_LINES:
        pytest.xfail(f"{rel}: {n} lines; {OWNED_ELSEWHERE[rel]}")
    assert n <= MAX_LINES, f"{rel} has {n} lines (limit {MAX_LINES}): split it by job"
