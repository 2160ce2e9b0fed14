"""Kernel names as GPU profilers print them, reduced to the kernel (one helper for the ncu and rocprof readers)."""

from __future__ import annotations

import re

#: an operator's name: ``operator()``, ``operator<<``, ``operator new[]`` (its "(" or "<" is not a parameter list)
_OPERATOR = re.compile(r"operator\s*(\(\)|\[\]|new\[\]|delete\[\]|new|delete|[-+*/%^&|~!=<>,]+)")


def kernel_name(text: str) -> str:
    """``void k<float, (int)128>(float*, int) [clone .kd]`` -> ``void k<float, (int)128>``: the parameter list
    is the first "(" outside template brackets (a template argument may hold "(int)128", a cast); an
    ``operator()`` keeps its "()"."""
    s = text.strip().strip('"').strip()
    depth = 0
    skip = 0
    for i, ch in enumerate(s):
        if i < skip:
            continue
        if s.startswith("(anonymous namespace)", i):      # part of the name, not its parameters
            skip = i + len("(anonymous namespace)")
        elif s.startswith("operator", i) and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")) and (
                m := _OPERATOR.match(s, i)):
            skip = m.end()
        elif ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            return s[:i].strip() or s
    return s


def display_names(keys: list[str]) -> dict[str, str]:
    """Each kernel's full name (its key: overloads ``k(float*)`` and ``k(double*)`` are two kernels) -> the name
    shown: the short :func:`kernel_name`, or the full one where two kernels share the short one."""
    short = {k: kernel_name(k) for k in keys}
    taken: dict[str, int] = {}
    for s in short.values():
        taken[s] = taken.get(s, 0) + 1
    return {k: (s if taken[s] == 1 else k.strip().strip('"').strip()) for k, s in short.items()}


def _collapse(name: str, level: int) -> str:
    """``name`` with the template arguments nested ``level`` deep or more shown as "<...>"."""
    depth, kept = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
            if depth <= level:
                kept.append("<..." if depth == level else "<")
        elif ch == ">" and depth:
            if depth <= level:
                kept.append(">")
            depth -= 1
        elif depth < level:
            kept.append(ch)
    return "".join(kept)


def short_labels(names: list[str], width: int = 60) -> list[str]:
    """Labels for a table or a chart: a name longer than ``width`` has its deepest template arguments shown as
    "<...>" until it fits (CUTLASS names run to thousands of characters), else is cut with "..."; a label that
    two names would share is the cut name instead, numbered if still equal."""
    def cut(s: str) -> str:
        return s if len(s) <= width else s[:width - 3] + "..."

    def fit(name: str) -> str:
        for level in range(_depth(name), 0, -1):
            s = _collapse(name, level)
            if len(s) <= width:
                return s
        return cut(_collapse(name, 1) if "<" in name else name)

    out = [name if len(name) <= width else fit(name) for name in names]
    shared = {s for s in out if out.count(s) > 1}
    out = [cut(name) if s in shared else s for name, s in zip(names, out, strict=True)]
    shared = {s for s in out if out.count(s) > 1}
    numbered: dict[str, int] = {}
    for i, s in enumerate(out):
        if s in shared:
            numbered[s] = numbered.get(s, 0) + 1
            out[i] = f"{s} #{numbered[s]}"
    return out


def _depth(name: str) -> int:
    depth = deepest = 0
    for ch in name:
        if ch == "<":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ">" and depth:
            depth -= 1
    return deepest
