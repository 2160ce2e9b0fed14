"""Kernel names as GPU profilers print them, reduced to the kernel (one helper for the ncu and rocprof readers)."""

from __future__ import annotations


def kernel_name(text: str) -> str:
    """``void k<float, (int)128>(float*, int) [clone .kd]`` -> ``void k<float, (int)128>``: the parameter list
    is the first "(" outside template brackets (a template argument may hold "(int)128", a cast)."""
    s = text.strip().strip('"').strip()
    depth = 0
    skip = 0
    for i, ch in enumerate(s):
        if i < skip:
            continue
        if s.startswith("(anonymous namespace)", i):      # part of the name, not its parameters
            skip = i + len("(anonymous namespace)")
        elif ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            return s[:i].strip() or s
    return s
