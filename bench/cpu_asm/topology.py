"""This machine's cores and caches, read from sysfs (Linux), and the working sets derived from them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class CacheLevel:
    level: int
    kind: str               # Data | Unified | Instruction
    size_bytes: int
    shared_cpus: int        # how many logical cpus share one instance


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}
    if text and text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def _cpu_list_len(text: str) -> int:
    n = 0
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            n += int(b) - int(a) + 1
        else:
            n += 1
    return n


def caches(root: Path = SYS_CPU) -> list[CacheLevel]:
    """Data and unified caches of cpu0, innermost first (empty when sysfs has none)."""
    out: list[CacheLevel] = []
    for idx in sorted((root / "cpu0" / "cache").glob("index*")):
        try:
            kind = (idx / "type").read_text().strip()
            if kind == "Instruction":
                continue
            out.append(CacheLevel(int((idx / "level").read_text()), kind, _parse_size((idx / "size").read_text()),
                                  _cpu_list_len((idx / "shared_cpu_list").read_text())))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda c: c.level)


def one_cpu_per_core(root: Path = SYS_CPU) -> list[int]:
    """The first allowed logical cpu of every physical core (one thread per core, SMT siblings skipped)."""
    allowed = sorted(os.sched_getaffinity(0))
    seen: set[tuple[str, str]] = set()
    out: list[int] = []
    for cpu in allowed:
        topo = root / f"cpu{cpu}" / "topology"
        try:
            key = ((topo / "physical_package_id").read_text().strip(), (topo / "core_id").read_text().strip())
        except OSError:
            key = (str(cpu), "")
        if key not in seen:
            seen.add(key)
            out.append(cpu)
    return out


def mem_available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def hugetlb_pages_free() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def level_working_sets(threads: int, *, quick: bool = False) -> dict[str, int]:
    """Total working set (all threads) that lives in each level: half of each private cache per thread,
    4x L2 per thread (at most half the L3) for L3, and for memory 1 GiB (quick: 8x the last cache, at least 64 MiB)."""
    levels = {c.level: c for c in caches()}
    l1 = levels[1].size_bytes if 1 in levels else 32 * 1024
    l2 = levels[2].size_bytes if 2 in levels else 512 * 1024
    l3c = levels.get(3)
    l3 = l3c.size_bytes if l3c else 8 * 1024**2
    out = {"l1": threads * l1 // 2, "l2": threads * l2 // 2}
    # L3: well past the private L2s and well inside the L3 (4x L2 per thread, at most half the L3): on a shared or
    # virtualised L3 the part one tenant really keeps is often a few MiB
    out["l3"] = min(l3 // 2, threads * l2 * 4) if l3c else 0
    last = l3 if l3c else l2
    out["mem"] = max(8 * last, 64 * 1024**2) if quick else max(2**30, 8 * last)
    return {k: v for k, v in out.items() if v}
