"""THE statement of archline's import rules (CONTRIBUTING.md points here instead of restating them), checked on
every module's syntax tree (imports inside functions count too):

* rooms (``ALLOWED``): cli -> everything; bench -> powermon, formats, model, common (never fit); fit -> formats,
  model, common (never bench or powermon); powermon -> formats, common; formats -> model, common; model -> common;
  common -> none of the rooms;
* modules: no import circle inside a room (``KNOWN_MODULE_CYCLES`` lists those that remain, and may only shrink);
* sub-folders, at every depth: imports between two sibling folders (``fit/io`` and ``fit/regress``,
  ``fit/analyses/a`` and ``fit/analyses/b``) go one way, so no pair imports each other; the pairs that still do are
  listed in ``KNOWN_SUBFOLDER_CYCLES`` with their owner, and the list may only shrink (a pair that no longer imports
  both ways must leave it);
* size: no module in a room is over 400 lines.

CONTRIBUTING.md names this file as the statement and restates none of it (checked below).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("cli", "bench", "powermon", "fit", "formats", "model", "common")
ALLOWED: dict[str, tuple[str, ...]] = {
    "cli": ("archline",),
    "bench": ("archline.bench", "archline.powermon", "archline.formats", "archline.model", "archline.common"),
    "fit": ("archline.fit", "archline.formats", "archline.model", "archline.common"),
    "powermon": ("archline.powermon", "archline.formats", "archline.common"),
    "formats": ("archline.formats", "archline.model", "archline.common"),
    "model": ("archline.model", "archline.common"),
    "common": ("archline.common",),
}
#: the version (pkg/archline/_version.py, a leaf with no imports) may be read by every room
for _room in ALLOWED:
    ALLOWED[_room] += ("archline._version",)
#: sub-folder pairs that import each other today, each to be cut by the named owner; a new pair fails, and a pair
#: that no longer imports both ways must leave this list
KNOWN_SUBFOLDER_CYCLES: dict[tuple[str, str], str] = {
}
#: module-level import circles that exist today (issue 37 cuts them); the list may only shrink
KNOWN_MODULE_CYCLES: set[frozenset[str]] = {frozenset(c.split()) for c in (
)}
MAX_LINES = 400
#: modules another issue owns right now (they may not be edited here); each names who and why
OWNED_ELSEWHERE: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(p for room in ROOMS for p in (ROOT / room).rglob("*.py") if "build" not in p.parts)


def _package(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).with_suffix("")
    return ["archline", *rel.parts][:-1]   # the package a module (or an __init__) sits in


@functools.cache       # the rule and the sub-folder check read the same ~300 modules: parse each once
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


def _folder_edge(module: tuple[str, ...], name: str) -> tuple[str, str] | None:
    """(a, b) when the module at path parts ``module`` importing ``name`` crosses from folder a into its sibling
    folder b (the first folders where the two paths part, both directories of the same room); None otherwise (the
    standard library, another room, the same folder, a module of an enclosing folder, or a folder's own modules)."""
    parts = name.split(".")
    if parts[0] != "archline" or len(parts) < 3 or parts[1] != module[0]:
        return None
    target = parts[1:]
    i = 0
    while i < len(module) - 1 and i < len(target) and module[i] == target[i]:
        i += 1
    if i >= len(module) - 1 or i >= len(target):   # the module's own folder holds the target
        return None
    a, b = "/".join(module[: i + 1]), "/".join(target[: i + 1])
    return (a, b) if (ROOT / b).is_dir() else None


def _subfolder_edges() -> set[tuple[str, str]]:
    """(a, b): a module under folder a imports one under its sibling folder b, at any depth of a room."""
    edges = set()
    for path in _modules():
        rel = path.relative_to(ROOT).parts
        for _, name in _imports(path):
            if (e := _folder_edge(rel, name)) is not None:
                edges.add(e)
    return edges


def test_subfolders_import_one_way() -> None:
    edges = _subfolder_edges()
    pairs = {tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges}
    new = sorted(p for p in pairs if p not in KNOWN_SUBFOLDER_CYCLES)
    gone = sorted(p for p in KNOWN_SUBFOLDER_CYCLES if p not in pairs)
    assert not new, f"sub-folders importing each other (make the import go one way): {new}"
    assert not gone, f"no longer a cycle, remove from KNOWN_SUBFOLDER_CYCLES: {gone}"


def test_folder_edges_at_every_depth() -> None:
    """The checker itself: sibling folders at the first and the second level, nothing for a folder's own modules,
    an enclosing folder's module, or a module beside the folders."""
    assert _folder_edge(("fit", "io", "dataset.py"), "archline.fit.regress.ols.fit") == ("fit/io", "fit/regress")
    assert _folder_edge(("fit", "io", "counters", "ncu.py"), "archline.formats.schema.COLUMNS") is None
    assert _folder_edge(("fit", "io", "counters", "ncu.py"), "archline.fit.analyses.elango.oi_bounds.x") == (
        "fit/io", "fit/analyses")
    assert _folder_edge(("fit", "analyses", "elango", "a.py"), "archline.fit.analyses.choi.b.f") == (
        "fit/analyses/elango", "fit/analyses/choi")
    assert _folder_edge(("fit", "analyses", "elango", "a.py"), "archline.fit.analyses.placement.f") is None
    assert _folder_edge(("fit", "io", "dataset.py"), "archline.formats.counters.ncu.read") is None
    assert _folder_edge(("fit", "io", "dataset.py"), "archline.formats.schema") is None
    assert _folder_edge(("bench", "kernels.py"), "archline.bench.gpu.core.Timing") is None
    assert _folder_edge(("bench", "run", "rows.py"), "archline.bench.kernels.RunResult") is None
    assert _folder_edge(("bench", "run", "rows.py"), "archline.formats.schema") is None
    assert _folder_edge(("bench", "run", "rows.py"), "numpy.linalg") is None


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = ["archline", *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict[str, set[str]]:
    """module -> the modules of the same room it imports (a ``from pkg import name`` names pkg.name when that is a
    module, else pkg)."""
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        room = name.split(".")[1]
        out = set()
        for _, target in _imports(path):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name and target.split(".")[1] == room:
                out.add(target)
        graph[name] = out
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.add(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def test_no_import_circle_inside_a_room() -> None:
    """No module imports, directly or through others of its room, a module that imports it back (imports inside
    functions count: a lazy import hides a circle, it does not remove it)."""
    circles = [sorted(c) for c in _circles(_module_graph())]
    known = [c for c in circles if frozenset(c) in KNOWN_MODULE_CYCLES]
    new = [c for c in circles if frozenset(c) not in KNOWN_MODULE_CYCLES]
    gone = [sorted(c) for c in KNOWN_MODULE_CYCLES if c not in {frozenset(x) for x in circles}]
    assert not new, f"import circles inside a room (make the imports go one way): {new}"
    assert not gone, f"no longer a circle, remove from KNOWN_MODULE_CYCLES: {gone}"
    assert len(known) == len(KNOWN_MODULE_CYCLES)


def test_circle_finder_finds_a_circle() -> None:
    """The checker itself: a three-module circle and a two-module one are found, a chain and a self-import are not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "a"}, "f": {"f", "a"}}
    assert sorted(sorted(c) for c in _circles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_contributing_points_here_and_restates_nothing() -> None:
    """One statement: CONTRIBUTING.md names this file and writes no room-to-room rule of its own."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert "tests/package/test_architecture.py" in text
    rooms = "|".join(ROOMS)
    restated = re.findall(rf"`?\b({rooms})\b/?`?\s*(?:->|→|may import|imports|never imports)\s*`?\b({rooms})\b", text)
    assert not restated, f"CONTRIBUTING.md restates import rules {restated}: point at this file instead"


def test_design_page_shows_the_import_rule() -> None:
    """docs/design.md §6 shows ``ALLOWED`` as a table for readers; it must say what this file checks."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("## 6. Import rules", 1)[1].split("\n## ", 1)[0]
    shown = {m.group(1): tuple(re.findall(r"`([\w.]+)`", m.group(2)))
             for m in re.finditer(r"^\| (\w+) \| (`.*) \|$", section, re.M)}
    assert shown == {room: tuple(x for x in allowed if x != "archline._version") for room, allowed in ALLOWED.items()}
    assert "`archline._version`" in section


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
