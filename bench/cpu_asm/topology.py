"""This machine's cores and caches, read from sysfs (Linux), and the working sets derived from them.

Every function takes the sysfs root (``/sys/devices/system/cpu``) and the allowed cpus as arguments, so the VM and
server cases are tested on fake trees (tests/bench_cpu/test_cpu_topology.py): a huge shared L3, no L3, one core,
cores on SMT siblings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# the memory rule every back end shares, named here too for this module's callers (prepared.py, the tests)
from archline.bench.host_memory import MEM_MIN_BYTES as MEM_MIN_BYTES
from archline.bench.host_memory import MEM_OVER_LLC as MEM_OVER_LLC
from archline.bench.host_memory import MEM_QUICK_MAX_BYTES as MEM_QUICK_MAX_BYTES
from archline.bench.host_memory import PLAUSIBLE_LLC_PER_CORE_BYTES as PLAUSIBLE_LLC_PER_CORE_BYTES
from archline.bench.host_memory import mem_available_bytes as mem_available_bytes
from archline.bench.host_memory import mem_working_set_bytes as mem_working_set_bytes
from archline.bench.host_memory import plausible_llc_bytes as plausible_llc_bytes
from archline.common.sizes import parse_bytes

SYS_CPU = Path("/sys/devices/system/cpu")
KIB, MIB, GIB = 1024, 1024**2, 1024**3


@dataclass(frozen=True)
class CacheLevel:
    level: int
    kind: str               # Data | Unified | Instruction
    size_bytes: int
    shared_cpus: int        # how many logical cpus share one instance


@dataclass(frozen=True)
class CacheShare:
    """What the cores in use may fill of one cache level, summed over the instances they sit in."""

    level: int
    reported_bytes: int      # the size of one instance as sysfs reports it
    instance_bytes: int      # the instances the cores sit in, each capped where implausible for its core count
    share_bytes: int         # the part of them belonging to the cores in use (instance x our cores / its cores)
    note: str                # empty, or why a reported size was not believed


def _cpu_list(text: str) -> list[int]:
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def _cache_dirs(cpu: int, root: Path) -> list[tuple[int, str, int, list[int]]]:
    """(level, type, size, sharing cpus) of every data/unified cache of ``cpu``."""
    out = []
    for idx in sorted((root / f"cpu{cpu}" / "cache").glob("index*")):
        try:
            kind = (idx / "type").read_text().strip()
            if kind == "Instruction":
                continue
            out.append((int((idx / "level").read_text()), kind, parse_bytes((idx / "size").read_text()),
                        _cpu_list((idx / "shared_cpu_list").read_text())))
        except (OSError, ValueError):
            continue
    return out


def caches(root: Path = SYS_CPU) -> list[CacheLevel]:
    """Data and unified caches of cpu0, innermost first (empty when sysfs has none)."""
    return sorted((CacheLevel(lv, kind, size, len(shared)) for lv, kind, size, shared in _cache_dirs(0, root)),
                  key=lambda c: c.level)


def _core_key(cpu: int, root: Path) -> tuple[str, str]:
    topo = root / f"cpu{cpu}" / "topology"
    try:
        return (topo / "physical_package_id").read_text().strip(), (topo / "core_id").read_text().strip()
    except OSError:
        return str(cpu), ""


def one_cpu_per_core(root: Path = SYS_CPU, allowed: Sequence[int] | None = None) -> list[int]:
    """The first allowed logical cpu of every physical core (one thread per core, SMT siblings skipped)."""
    cpus = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    seen: set[tuple[str, str]] = set()
    out: list[int] = []
    for cpu in cpus:
        key = _core_key(cpu, root)
        if key not in seen:
            seen.add(key)
            out.append(cpu)
    return out


def cache_shares(cpus: Sequence[int], root: Path = SYS_CPU) -> dict[int, CacheShare]:
    """Per level, the cache the cores ``cpus`` sit in and their share of it: for each instance, its size times the
    number of our cores in it over the number of cores (not SMT threads) sharing it. A last level above
    PLAUSIBLE_LLC_PER_CORE_BYTES per sharing core is capped there, with a note."""
    per_level: dict[int, dict[tuple[int, ...], tuple[int, int, int]]] = {}  # level -> instance -> (size, ours, cores)
    for cpu in cpus:
        for level, _kind, size, shared in _cache_dirs(cpu, root):
            inst = tuple(shared)
            cores = len({_core_key(c, root) for c in shared}) or 1
            prev = per_level.setdefault(level, {}).get(inst)
            per_level[level][inst] = (size, (prev[1] if prev else 0) + 1, cores)
    out: dict[int, CacheShare] = {}
    last = max(per_level, default=0)
    for level, insts in per_level.items():
        reported = max(size for size, _, _ in insts.values())
        capped = {k: (plausible_llc_bytes(size, cores) if level == last and level >= 3 else size,
                      ours, cores) for k, (size, ours, cores) in insts.items()}
        note = ""
        if any(capped[k][0] < insts[k][0] for k in insts):
            cores = max(c for _, _, c in insts.values())
            note = (f"L{level} of {reported / MIB:.0f} MiB shared by {cores} core(s) is implausible (more than "
                    f"{PLAUSIBLE_LLC_PER_CORE_BYTES // MIB} MiB per core; a VM reporting its host's cache?): "
                    f"working sets assume {sum(s for s, _, _ in capped.values()) / MIB:.0f} MiB")
        out[level] = CacheShare(level, reported, sum(s for s, _, _ in capped.values()),
                                sum(s * min(o, c) // c for s, o, c in capped.values()), note)
    return out


def hugetlb_pages_free() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def level_working_sets(threads: int, *, quick: bool = False, root: Path = SYS_CPU,
                       allowed: Sequence[int] | None = None) -> dict[str, int]:
    """Total working set (all threads) that lives in each level; see :func:`working_set_plan`."""
    return working_set_plan(threads, quick=quick, root=root, allowed=allowed)[0]


def working_set_plan(threads: int, *, quick: bool = False, root: Path = SYS_CPU,
                     allowed: Sequence[int] | None = None) -> tuple[dict[str, int], list[str]]:
    """Working sets per level for the first ``threads`` cores, and the notes that explain them.

    From :func:`cache_shares` of those cores: L1 and L2 get half their share (they are private, or shared only by
    SMT siblings we leave idle). L3 gets 4x the L2 share, well past the private caches, but at most half the cores'
    L3 share (or, where that share is smaller than twice the L2s, up to twice the L2s if the L3 they sit in holds
    it), and never more than half that L3. Memory gets max(MEM_MIN_BYTES, MEM_OVER_LLC x the last-level cache the
    cores sit in): one core may fill all of it while the others idle. ``quick`` caps memory at
    MEM_QUICK_MAX_BYTES. Defaults where sysfs says nothing: L1 32 KiB, L2 512 KiB per core."""
    cores = one_cpu_per_core(root, allowed)[:max(threads, 1)]
    shares = cache_shares(cores, root)
    n = len(cores)
    notes = [s.note for s in shares.values() if s.note]
    l1 = shares[1].share_bytes if 1 in shares else 32 * KIB * n
    l2 = shares[2].share_bytes if 2 in shares else 512 * KIB * n
    out = {"l1": l1 // 2, "l2": l2 // 2}
    if 3 in shares:
        s3 = shares[3]
        l3 = min(4 * l2, max(s3.share_bytes // 2, 2 * l2), s3.instance_bytes // 2)
        if l3 > l2:
            out["l3"] = l3
        else:
            notes.append(f"L3 of {s3.instance_bytes / MIB:.0f} MiB is too small beside {l2 / MIB:.0f} MiB of L2 "
                         "for a separate l3 level")
    else:
        notes.append("no L3 reported: no l3 level; memory sized from L2")
    last = shares[max(shares)].instance_bytes if shares else l2
    out["mem"] = mem_working_set_bytes(last, quick=quick)
    return {k: v for k, v in out.items() if v}, notes


#: --quick's whole roofline: each cache level's working sets, as shares of what the cores in use may fill of it
#: (per level: the innermost share never below twice the share of the level inside it, the outermost half the
#: share, so the data neither fit the inner cache nor spill to the outer one)
ROOFLINE_FRACTIONS = (0.25, 0.375, 0.5)


def roofline_working_sets(threads: int, *, root: Path = SYS_CPU,
                          allowed: Sequence[int] | None = None) -> tuple[dict[str, list[int]], list[str]]:
    """Total working sets (all threads) per cache level for the quick roofline's cache points, and notes.

    Bounded on both sides by what the cores in use may fill (:func:`cache_shares`, the last level capped where a
    VM reports its host's cache): L1 and L2 at ROOFLINE_FRACTIONS of their share; L3 from twice the L2 share up
    to :func:`working_set_plan`'s l3 size (at most half the L3 share, never past half the instance), three sizes
    spaced evenly on a log scale. A level whose bounds cross gets no points (said in the notes). Whether each
    level's data stayed in its cache is then measured, not assumed: the summary refuses to trust a level that is
    not faster than the level outside it (bench/run/summary.py)."""
    plan, notes = working_set_plan(threads, root=root, allowed=allowed)
    cores = one_cpu_per_core(root, allowed)[:max(threads, 1)]
    shares = cache_shares(cores, root)
    n = len(cores)
    l1 = shares[1].share_bytes if 1 in shares else 32 * KIB * n
    l2 = shares[2].share_bytes if 2 in shares else 512 * KIB * n
    out: dict[str, list[int]] = {"l1": [int(l1 * f) for f in ROOFLINE_FRACTIONS]}
    lo2 = 2 * l1
    out["l2"] = [s for s in (int(l2 * f) for f in ROOFLINE_FRACTIONS) if s >= lo2]
    if not out["l2"]:
        notes.append(f"L2 share of {l2 / KIB:.0f} KiB is not twice the L1 share ({l1 / KIB:.0f} KiB): no l2 points")
    if "l3" in plan:
        lo3, hi3 = 2 * l2, plan["l3"]
        if hi3 >= lo3:
            out["l3"] = sorted({int(lo3 * (hi3 / lo3) ** (i / 2)) for i in range(3)})
        else:
            notes.append(f"L3 bounds cross ({lo3 / MIB:.1f} MiB from the L2s, {hi3 / MIB:.1f} MiB from the L3): "
                         "no l3 points")
    return {k: v for k, v in out.items() if v}, notes
