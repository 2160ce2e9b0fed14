"""The cpu_asm back end: hand-tuned SIMD kernels (bench/cpu_asm/src) behind the bench.kernels interface.

Spec parameters (``KernelSpec.params``), all optional except where said:

* every kernel: ``isa`` (avx512|avx2|sse2; default the widest this CPU runs), ``threads`` (default one per core),
  ``seed`` (default 1), ``working_set_bytes`` (default from the cache topology for ``spec.level``).
* intensity: ``fma_per_trip`` (F) or ``intensity`` (flop/byte target, rounded to the nearest exact F); ``store``
  (``none``: read-only stream, the default; ``nt``: plus a non-temporal store stream of one result vector per two
  loaded, I = 4F/(3 G sizeof), bytes = read + written, bus bytes = counted; ``working_set_bytes`` then covers
  the input and the output array together, as likwid-bench's does its three arrays).
  ``keep_buffer`` (bool): the input stream is kept for the next point of the same stream (same size, ISA, cpus,
  seed) instead of freed, which takes it over (the quick roofline's DRAM points: 1 GiB filled once).
* int: ``op`` (add|mul), ``steps`` (S; int ops/element = S+1).
* cache: ``mode`` (load|rmw|store).
* chase: ``chains`` (1,2,4..32), ``page_local`` (bool), ``hugetlb`` (bool; 2 MiB hugetlbfs pages when the OS has
  free ones, else transparent huge pages by madvise).
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from typing import Any

from archline.bench.cpu_asm import topology as topo
from archline.bench.cpu_asm.isas import (
    KERNEL_LEVELS,
    KERNEL_PRECISIONS,
    best_isa,
    check_store,
    features,
    isa_usable,
    native,
)
from archline.bench.cpu_asm.prepared import CpuPrepared
from archline.bench.cpu_asm.variants import (
    ELEM_BYTES,
    ISAS,
    fma_per_trip_for,
    fma_per_trip_for_nt,
)
from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError
from archline.bench.kernels import BackendBase, Counts, KernelSpec


def intensity_targets(precision: str = "dp") -> list[float]:
    """0.25 flop/byte up to the top, 4 points per doubling: 64 flop/B in DP (33 targets), and in a narrower
    element the same FMAs per loaded vector as DP's top (SP: 128 flop/B, 37 targets). The top point is the
    sweep's peak; SP at 64 flop/B does half DP's work per trip, its fixed cost per trip (loads, streamed stores,
    loop) counts twice as much, and it reached 0.969x likwid's peakflops_sp_avx512_fma against 0.993x at 128
    flop/B (Golden Cove, 9 paired rounds each)."""
    top = 64.0 * ELEM_BYTES["dp"] / ELEM_BYTES[precision]
    return [0.25 * 2 ** (j / 4) for j in range(4 * round(math.log2(top / 0.25)) + 1)]


def int_steps_sweep() -> list[int]:
    """int ops/element from 1 to 256 on a geometric grid (4 per doubling where integers allow)."""
    return sorted({max(0, round(2 ** (j / 4)) - 1) for j in range(33)})


class CpuAsmBackend(BackendBase):
    name = "cpu_asm"
    has_roofline = True

    def __init__(self, isa: str | None = None) -> None:
        self._isa = isa
        #: an intensity point's input stream kept for the next point (spec param ``keep_buffer``), with its key
        self._kept: tuple[tuple[Any, ...], Any] | None = None

    @property
    def isa(self) -> str | None:
        """The ISA asked for (None: the best this CPU runs)."""
        return self._isa

    def stream(self, kern: Any, key: tuple[Any, ...]) -> Any:
        """The native intensity stream for ``key`` (kind, isa, elements, cpus, seed, period): the one the previous
        point kept where it is the same (allocated, filled and first-touched once: the quick roofline's three DRAM
        points share 1 GiB; F is an argument of each run, and the checksum depends on F only), else a new one."""
        kept, self._kept = self._kept, None
        if kept is not None:
            if kept[0] == key:
                return kept[1]
            kept[1].close()
        return kern.Stream(*key)

    def keep(self, key: tuple[Any, ...], native: Any) -> None:
        """Hold ``native`` (made for ``key``) for the next point (:meth:`stream`); one at most, the one held
        before is closed."""
        if self._kept is not None:
            self._kept[1].close()
        self._kept = (key, native)

    # -- what runs here ------------------------------------------------------------------------------------
    def availability(self) -> tuple[bool, str]:
        try:
            native()
        except ImportError as e:
            return False, f"native kernels not built ({e}); reinstall with pip install ."
        isa = self._isa or best_isa()
        if isa is None:
            return False, f"no compiled ISA runs on this {platform.machine()} CPU"
        ok, why = isa_usable(ISAS[isa]) if isa in ISAS else (False, f"unknown ISA '{isa}'")
        if not ok:
            return False, why
        brand = features().get("brand", "")
        return True, f"{isa} on {brand or platform.processor()}, {len(topo.one_cpu_per_core())} cores"

    def describe(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for isa, v in ISAS.items():
            ok, why = isa_usable(v)
            for kernel, precs in KERNEL_PRECISIONS.items():
                if kernel == "chase":
                    continue  # scalar: listed once below
                for prec in precs:
                    k_ok, k_why = ok, why
                    if kernel == "int" and not v.int_mul:
                        k_why = f"{why}; int mul unavailable (add only)"
                    row: dict[str, Any] = {"name": kernel, "isa": isa,
                                           "precision": prec, "level": ",".join(KERNEL_LEVELS[kernel]),
                                           "available": k_ok, "reason": k_why}
                    if kernel == "intensity":
                        row["flops_per_elem"] = f"2F/{v.g_fp}"
                        row["bytes_per_elem"] = ELEM_BYTES[prec]
                        row["chains"] = v.g_fp
                    elif kernel == "int":
                        row["flops_per_elem"] = "S+1 int ops"
                        row["bytes_per_elem"] = 4
                    elif kernel == "cache":
                        row["bytes_per_elem"] = "load 8, rmw 16, store 8 (bus 16)"
                    out.append(row)
        try:
            native()
            ok, why = True, "scalar dependent loads, 1 thread; 1..32 chains, page-local and huge-page variants"
        except ImportError as e:
            ok, why = False, f"native kernels not built: {e}"
        out.append({"name": "chase", "isa": "scalar", "precision": "dp", "level": ",".join(KERNEL_LEVELS["chase"]),
                    "available": ok, "reason": why, "bytes_per_elem": "64 B node per access"})
        return out

    def sweep(self, kernel: str, precision: str, *, quick: bool = False, store: str | None = None,
              threads: int | None = None, cpus: Sequence[int] | None = None) -> list[KernelSpec]:
        """The default points.

        The intensity sweep streams with ``store="nt"`` unless told ``store="none"``: G loads plus G/2 streamed
        result vectors per trip. Q counts loads and stores alike (model.md §0) and the sweep exists to reach the
        peak bandwidth (§7.1); a core that only reads stops short of it (on Zen 3 read-only reached 0.77x of
        likwid's stream_mem triad, the nt stream 1.0x; benchmarks/cpu_vs_likwid.py). It starts at its floor
        F = G/2, the triad's own intensity (1/12 flop/B in DP), then 0.25..64 flop/B (SP: ..128) at >= 4 points per
        doubling.
        ``store="none"`` is the papers' read-only polynomial stream, from 0.25 flop/B."""
        if store is not None:
            check_store(store)
        if store is not None and kernel != "intensity":
            raise BenchError(f"store='{store}' applies to the intensity kernel only, not '{kernel}'")
        isa = self._require_isa(None)
        v = ISAS[isa]
        if kernel not in KERNEL_PRECISIONS:
            raise BenchError(f"unknown kernel '{kernel}' (cpu_asm has: {', '.join(KERNEL_PRECISIONS)})")
        if precision not in KERNEL_PRECISIONS[kernel]:
            raise UnsupportedError(
                f"kernel '{kernel}' runs in {'/'.join(KERNEL_PRECISIONS[kernel])}, not '{precision}'")
        pin = pinning(threads, cpus)
        threads = pin.get("threads") or len(topo.one_cpu_per_core())
        ws = topo.level_working_sets(threads, quick=quick, allowed=cpus)
        specs: list[KernelSpec] = []
        if kernel == "intensity":
            nt = store in (None, "nt")
            if nt:
                targets = intensity_targets(precision)
                fs = sorted({v.g_fp // 2} | {fma_per_trip_for_nt(v, precision, i) for i in targets})
            else:
                fs = sorted({fma_per_trip_for(v, precision, i) for i in intensity_targets(precision)})
            for f in fs:
                specs.append(KernelSpec(self.name, "intensity", precision, "mem",
                                        {"isa": isa, "store": "nt" if nt else "none", "fma_per_trip": f,
                                         "working_set_bytes": ws["mem"], **pin}))
        elif kernel == "int":
            for op in ("add", "mul") if v.int_mul else ("add",):
                for s in int_steps_sweep():
                    specs.append(KernelSpec(self.name, "int", "int32", "mem",
                                            {"isa": isa, "op": op, "steps": s, "working_set_bytes": ws["mem"],
                                             **pin}))
        elif kernel == "cache":
            for level, nbytes in ws.items():
                for mode in ("load", "rmw", "store"):
                    specs.append(KernelSpec(self.name, "cache", "dp", level,
                                            {"isa": isa, "mode": mode, "working_set_bytes": nbytes, **pin}))
        else:  # chase: one thread, so sizes per one core (the first CPU of --cpus)
            ws1 = topo.level_working_sets(1, quick=quick, allowed=cpus)
            pin = {"cpus": pin["cpus"][:1]} if "cpus" in pin else {}
            for level, nbytes in ws1.items():
                for chains in (1, 8):
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": chains, "working_set_bytes": nbytes, **pin}))
                if level in ("l3", "mem"):
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": 1, "page_local": True, "working_set_bytes": nbytes, **pin}))
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": 1, "hugetlb": True, "working_set_bytes": nbytes, **pin}))
        return specs

    def roofline(self, precisions: Sequence[str], *, threads: int | None = None,
                 cpus: Sequence[int] | None = None) -> list[KernelSpec]:
        """``--quick``'s whole roofline in few points, each figure resting on three:

        * peak per precision: the read-only intensity kernel on L1-resident data (as likwid's peakflops runs), at
          the top intensity and a half and a quarter of it (DP 16-64 flop/B, SP 32-128), all far past the ridge;
        * L1, L2, L3: the cache 'load' kernel at three working sets inside each level's bounds
          (:func:`topology.roofline_working_sets`);
        * DRAM: the nt intensity stream on the memory-sized working set at its three lowest intensities (the
          triad's 1/12 flop/B and the next two F), all bandwidth-bound, at three moments of the run (after the
          peaks, after L1, last). DP, or the first precision asked for.
        """
        isa = self._require_isa(None)
        v = ISAS[isa]
        pin = pinning(threads, cpus)
        n = pin.get("threads") or len(topo.one_cpu_per_core())
        plan = topo.level_working_sets(n, quick=True, allowed=cpus)
        caches, _ = topo.roofline_working_sets(n, allowed=cpus)
        specs: list[KernelSpec] = []
        for prec in precisions:
            top = intensity_targets(prec)[-1]
            for f in sorted({fma_per_trip_for(v, prec, top / d) for d in (4, 2, 1)}):
                specs.append(KernelSpec(self.name, "intensity", prec, "l1",
                                        {"isa": isa, "store": "none", "fma_per_trip": f,
                                         "working_set_bytes": plan["l1"], **pin}))
        mem_prec = "dp" if "dp" in precisions else precisions[0]
        fs = list(range(v.g_fp // 2, v.g_fp // 2 + 3 * max(1, v.g_fp // 4), max(1, v.g_fp // 4)))
        dram = [KernelSpec(self.name, "intensity", mem_prec, "mem",
                           {"isa": isa, "store": "nt", "fma_per_trip": f, "working_set_bytes": plan["mem"],
                            **({"keep_buffer": True} if i < len(fs) - 1 else {}), **pin})
                for i, f in enumerate(fs)]
        # the DRAM points at three moments of the run (after the peaks, after L1, last), not back to back: on a
        # shared host, memory traffic of other guests comes in phases of seconds (measured on the 2-vCPU Zen 3 VM:
        # 36-38 GB/s for some seconds, 45-60 the next), and the summary's plateau then rests on points of more than
        # one phase. The cache points between them take no stream, so the one memory buffer is kept across them.
        levels = list(caches.items())
        specs.append(dram[0])
        for j, (level, sizes) in enumerate(levels):
            for nbytes in sizes:
                specs.append(KernelSpec(self.name, "cache", "dp", level,
                                        {"isa": isa, "mode": "load", "working_set_bytes": nbytes, **pin}))
            if j == 0:
                specs.append(dram[1])
        specs.extend(dram[2:])
        return specs

    def plan_notes(self) -> list[str]:
        """Why this machine's working sets are what they are (an implausible L3, a missing level), for the log."""
        return topo.working_set_plan(len(topo.one_cpu_per_core()))[1]

    # -- preparing a point ------------------------------------------------------------------------------------
    def _require_isa(self, isa: str | None) -> str:
        name = isa or self._isa or best_isa()
        if name is None:
            raise BackendUnavailableError("cpu_asm: no compiled ISA runs on this CPU")
        if name not in ISAS:
            raise UnsupportedError(f"unknown ISA '{name}' (known: {', '.join(ISAS)})")
        ok, why = isa_usable(ISAS[name])
        if not ok:
            raise UnsupportedError(f"ISA '{name}' cannot run here: {why}")
        return name

    def prepare(self, spec: KernelSpec, device: str | None = None) -> CpuPrepared:
        if spec.backend != self.name:
            raise BenchError(f"spec is for backend '{spec.backend}', not cpu_asm")
        if spec.kernel not in KERNEL_PRECISIONS:
            raise BenchError(f"unknown kernel '{spec.kernel}' (cpu_asm has: {', '.join(KERNEL_PRECISIONS)})")
        if spec.precision not in KERNEL_PRECISIONS[spec.kernel]:
            raise UnsupportedError(f"kernel '{spec.kernel}' has no '{spec.precision}' variant")
        if spec.level not in KERNEL_LEVELS[spec.kernel]:
            raise BenchError(f"kernel '{spec.kernel}' has no level '{spec.level}'")
        return CpuPrepared(self, spec)




__all__ = ["Counts", "CpuAsmBackend", "CpuPrepared", "best_isa", "isa_usable"]


def pinning(threads: int | None, cpus: Sequence[int] | None) -> dict[str, Any]:
    """The points' pinning parameters: ``threads`` on the first cores (one per core), or exactly ``cpus`` (one
    thread each); checked against the CPUs this process may run on, naming the one that is not."""
    if cpus is not None:
        allowed = sorted(os.sched_getaffinity(0))
        for c in cpus:
            if c not in allowed:
                raise BenchError(f"--cpus: CPU {c} is not online or not allowed for this process "
                                 f"(allowed: {','.join(map(str, allowed))})")
        return {"threads": len(cpus), "cpus": list(cpus)}
    if threads is not None:
        cores = topo.one_cpu_per_core()
        if threads > len(cores):
            raise BenchError(f"--threads {threads}: this machine has {len(cores)} usable cores (one thread per "
                             "core; --cpus pins to logical CPUs, SMT siblings included)")
        return {"threads": threads}
    return {}
