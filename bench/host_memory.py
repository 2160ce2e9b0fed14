"""The memory working-set rule every back end shares (the CPU kernels and the GPU core alike) and the host's
available memory; it lives beside the back-end folders so that none of them imports another for it."""

from __future__ import annotations

import os
from pathlib import Path

MIB, GIB = 1024**2, 1024**3

#: More last-level cache per core than any shipping CPU gives one core (AMD EPYC 9184X: 96 MiB L3 per 2-core CCD,
#: 48 MiB per core). A larger share is not believed: a VM typically reports its host's whole L3 to a few vCPUs.
PLAUSIBLE_LLC_PER_CORE_BYTES = 64 * MIB
#: Memory points use at least this much (likwid-bench's stream_mem runs 1 GB) and at least MEM_OVER_LLC x the
#: last-level cache the cores in use can fill. On the 2-vCPU Xeon VM that reports 480 MiB of L3, a streaming
#: kernel measured within 0.5% of its 2 GiB bandwidth at 1 GiB, but 4-20% above it at 512 MiB and below.
MEM_MIN_BYTES = GIB
MEM_OVER_LLC = 8
#: --quick caps the memory working set here: its compute-bound points cost time in proportion to it.
MEM_QUICK_MAX_BYTES = 2 * GIB


def plausible_llc_bytes(reported_bytes: int, cores: int) -> int:
    """A last-level cache as the working sets believe it: at most PLAUSIBLE_LLC_PER_CORE_BYTES per core sharing
    it (the GPU back ends pass their compute units), never negative."""
    return max(0, min(int(reported_bytes), PLAUSIBLE_LLC_PER_CORE_BYTES * max(int(cores), 1)))


def mem_working_set_bytes(believed_llc_bytes: int, *, quick: bool = False) -> int:
    """The memory level's working set past a last-level cache already through :func:`plausible_llc_bytes`:
    max(MEM_MIN_BYTES, MEM_OVER_LLC x it), at most MEM_QUICK_MAX_BYTES with ``quick``. The one rule of every back
    end (bench/gpu/working_set.py bounds it further by the device's and the host's memory)."""
    mem = max(MEM_MIN_BYTES, MEM_OVER_LLC * max(int(believed_llc_bytes), 0))
    return min(mem, MEM_QUICK_MAX_BYTES) if quick else mem


def mem_available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
