"""Default working sets of the GPU back ends (OpenCL, CUDA, HIP), as a pure function of what the device reports.

The memory level follows the CPU path's one rule (:func:`archline.bench.host_memory.mem_working_set_bytes`):
the reported last cache is believed only up to PLAUSIBLE_LLC_PER_CORE_BYTES per compute unit, and the working set
is max(MEM_MIN_BYTES, MEM_OVER_LLC x that). It is then bounded by what the device and the host can hold: a quarter
of the device's global memory, its largest allocation, and a quarter of the host's available memory (the host
holds the input, a CPU device's buffers live in the same memory, and the reference needs temporaries). A PoCL
device on a VM that reports its host's 300 MiB or 1 GiB L3 so gets 1 GiB, not 8x the reported cache.

Drivers read :class:`DeviceCaches` from the device once; tests build one with any value (a fake device).
"""

from __future__ import annotations

from dataclasses import dataclass

from archline.bench.errors import BenchError
from archline.bench.host_memory import mem_working_set_bytes, plausible_llc_bytes

KIB, MIB = 1 << 10, 1 << 20
#: a last cache the device does not report is taken as this (the old OpenCL default)
UNREPORTED_CACHE_BYTES = 4 * MIB
#: the pointer chase's memory level: past the believed cache but small enough to build its cycle in seconds
CHASE_MEM_MIN_BYTES = 64 * MIB
CHASE_MEM_OVER_LLC = 2


@dataclass(frozen=True)
class DeviceCaches:
    """What a device reports that its default working sets come from (0: not reported)."""

    last_cache_bytes: int     # OpenCL global_mem_cache_size; CUDA/HIP l2CacheSize
    compute_units: int        # the cores sharing that cache (PoCL: logical CPUs; GPUs: SMs/CUs)
    global_mem_bytes: int
    max_alloc_bytes: int
    is_cpu: bool = False


def pow2_floor(x: int) -> int:
    """The largest power of two <= x (1 for x < 2)."""
    return 1 << max(int(x).bit_length() - 1, 0)


def believed_cache_bytes(dev: DeviceCaches) -> int:
    """The last cache as the working sets believe it: the reported one (a default if none) within the CPU rule's
    per-core plausibility cap."""
    reported = dev.last_cache_bytes if dev.last_cache_bytes > 0 else UNREPORTED_CACHE_BYTES
    return max(plausible_llc_bytes(reported, dev.compute_units), 1)


def mem_bound_bytes(dev: DeviceCaches, host_available_bytes: int) -> int:
    """The most a default memory working set may take on this device and host (at least one MiB)."""
    caps = [max(host_available_bytes, 0) // 4]
    if dev.global_mem_bytes > 0:
        caps.append(dev.global_mem_bytes // 4)
    if dev.max_alloc_bytes > 0:
        caps.append(dev.max_alloc_bytes)
    return max(min(caps), MIB)


def default_working_set_bytes(dev: DeviceCaches, kernel: str, level: str, *, host_available_bytes: int) -> int:
    """Bytes of the input buffer a point at ``level`` uses by default; ``host_available_bytes`` is the host's
    MemAvailable, measured by the caller (a pure function of its arguments)."""
    cache = believed_cache_bytes(dev)
    if level == "mem":
        want = (max(CHASE_MEM_MIN_BYTES, CHASE_MEM_OVER_LLC * cache) if kernel == "chase"
                else mem_working_set_bytes(cache))
        return min(want, mem_bound_bytes(dev, host_available_bytes))
    if level == "l1":
        return 16 * KIB
    if level == "l2":
        return 256 * KIB if dev.is_cpu else pow2_floor(max(cache // 2, 64 * KIB))
    if level == "l3":
        return pow2_floor(max(cache // 2, MIB))
    raise BenchError(f"no default working set for level {level}")
