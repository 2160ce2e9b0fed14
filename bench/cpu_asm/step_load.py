"""cpu_asm's steady load for ``meter probe`` / ``meter calibrate`` (:mod:`archline.bench.step_load` runs it back to
back): the compute-bound intensity kernel, DP FMAs on an L1-resident working set, one thread per core or per CPU
named. Its registry entry names it (``BackendInfo.step_load``), so the step load spells no back end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from archline.bench.kernels import KernelSpec, PreparedKernel

#: DP FMAs per trip for 64 flop/B (compute bound whatever the working set) on 32 KiB per thread
CPU_INTENSITY_FLOP_PER_BYTE = 64.0
CPU_WORKING_SET_PER_THREAD_BYTES = 32 * 1024


def steady_load(be: Any, *, threads: int | None = None,
                cpus: Sequence[int] | None = None) -> tuple[PreparedKernel, dict[str, Any]]:
    """The prepared kernel of ``be`` (a CpuAsmBackend that can run here) on ``threads`` cores or exactly ``cpus``,
    and what it is (label, isa, threads, cpus)."""
    from archline.bench.cpu_asm import topology as topo
    from archline.bench.cpu_asm.backend import best_isa, pinning

    pin = pinning(threads, cpus)
    n = int(pin.get("threads") or len(topo.one_cpu_per_core()))
    isa_name = be.isa or best_isa()
    spec = KernelSpec(be.name, "intensity", "dp", "mem",
                      {"isa": isa_name, "store": "none", "intensity": CPU_INTENSITY_FLOP_PER_BYTE,
                       "working_set_bytes": CPU_WORKING_SET_PER_THREAD_BYTES * n, **pin})
    prepared = be.prepare(spec)
    extra = getattr(prepared, "extra", {})
    used = list(extra.get("cpus", pin.get("cpus", [])))
    label = (f"{be.name} intensity/dp ({extra.get('isa', isa_name)}, {CPU_INTENSITY_FLOP_PER_BYTE:g} flop/B, "
             f"{CPU_WORKING_SET_PER_THREAD_BYTES // 1024} KiB per thread) on {n} thread(s), CPUs "
             f"{','.join(map(str, used))}")
    return prepared, {"label": label, "backend": be.name, "kernel": "intensity", "precision": "dp",
                      "isa": extra.get("isa", isa_name), "threads": n, "cpus": used,
                      "fma_per_trip": extra.get("fma_per_trip")}
