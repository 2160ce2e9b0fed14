"""The cpu_asm back end: hand-tuned SIMD kernels (bench/cpu_asm/src) behind the bench.kernels interface.

Spec parameters (``KernelSpec.params``), all optional except where said:

* every kernel: ``isa`` (avx512|avx2|sse2; default the widest this CPU runs), ``threads`` (default one per core),
  ``seed`` (default 1), ``working_set_bytes`` (default from the cache topology for ``spec.level``).
* intensity: ``fma_per_trip`` (F) or ``intensity`` (flop/byte target, rounded to the nearest exact F); ``store``
  (``none``: read-only stream, the default; ``nt``: plus a non-temporal store stream of one result vector per two
  loaded, I = 4F/(3 G sizeof), bytes = read + written, bus bytes = counted; ``working_set_bytes`` then covers
  the input and the output array together, as likwid-bench's does its three arrays).
* int: ``op`` (add|mul), ``steps`` (S; int ops/element = S+1).
* cache: ``mode`` (load|rmw|store).
* chase: ``chains`` (1,2,4..32), ``page_local`` (bool), ``hugetlb`` (bool; 2 MiB hugetlbfs pages when the OS has
  free ones, else transparent huge pages by madvise).
"""

from __future__ import annotations

import math
import platform
from typing import Any

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm import topology as topo
from archline.bench.cpu_asm.clock import verdict_for_run
from archline.bench.cpu_asm.variants import (
    ELEM_BYTES,
    ISAS,
    STORE_MODES,
    X86_ORDER,
    IsaVariant,
    cache_counts,
    chase_counts,
    fma_per_trip_for,
    fma_per_trip_for_nt,
    int_counts,
    intensity_counts,
    intensity_nt_counts,
    intensity_of,
    intensity_of_nt,
    trip_elems,
)
from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError
from archline.bench.kernels import Counts, KernelSpec, RunResult

NODE_BYTES = 64            # one pointer-chase node per cache line
#: dependent steps per chain in one chase repetition at most: a memory-sized cycle (16 M nodes per GiB, ~0.3 us
#: each) would take seconds per lap; a shorter rep continues the same walk
CHASE_STEPS_PER_REP = 1 << 20
PAGE_BYTES = 4096
KERNEL_LEVELS = {"intensity": ("mem",), "int": ("mem",), "cache": ("l1", "l2", "l3", "mem"),
                 "chase": ("l1", "l2", "l3", "mem")}
KERNEL_PRECISIONS = {"intensity": ("sp", "dp"), "int": ("int32",), "cache": ("dp",), "chase": ("dp",)}


def _features() -> dict[str, Any]:
    from archline.bench.cpu_asm.cpu_features import cpu_features

    return cpu_features()


def _native() -> Any:
    from archline.bench.cpu_asm import _kernels

    return _kernels


def isa_usable(v: IsaVariant) -> tuple[bool, str]:
    try:
        feats = _features()
    except ImportError as e:
        return False, f"CPUID probe not built: {e}"
    if feats.get("arch") != v.arch:
        return False, f"{v.isa} needs {v.arch}, this is {feats.get('arch')}"
    missing = [f for f in v.requires if not feats.get(f)]
    if missing:
        return False, f"{v.isa}: CPU/OS lacks {', '.join(missing)}"
    return True, v.note


def _check_store(store: str) -> str:
    if store not in STORE_MODES:
        raise BenchError(f"intensity store must be one of {', '.join(STORE_MODES)}, got '{store}'")
    return store


def best_isa() -> str | None:
    for name in (*X86_ORDER, "neon"):  # isa_usable turns away the other architecture's ISAs
        if isa_usable(ISAS[name])[0]:
            return name
    return None


def intensity_targets() -> list[float]:
    """0.25 .. 64 flop/byte, 4 points per doubling (33 targets)."""
    return [0.25 * 2 ** (j / 4) for j in range(33)]


def int_steps_sweep() -> list[int]:
    """int ops/element from 1 to 256 on a geometric grid (4 per doubling where integers allow)."""
    return sorted({max(0, round(2 ** (j / 4)) - 1) for j in range(33)})


class CpuAsmBackend:
    name = "cpu_asm"

    def __init__(self, isa: str | None = None) -> None:
        self._isa = isa

    # -- what runs here ------------------------------------------------------------------------------------
    def availability(self) -> tuple[bool, str]:
        try:
            _native()
        except ImportError as e:
            return False, f"native kernels not built ({e}); reinstall with pip install ."
        isa = self._isa or best_isa()
        if isa is None:
            return False, f"no compiled ISA runs on this {platform.machine()} CPU"
        ok, why = isa_usable(ISAS[isa]) if isa in ISAS else (False, f"unknown ISA '{isa}'")
        if not ok:
            return False, why
        brand = _features().get("brand", "")
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
            _native()
            ok, why = True, "scalar dependent loads, 1 thread; 1..32 chains, page-local and huge-page variants"
        except ImportError as e:
            ok, why = False, f"native kernels not built: {e}"
        out.append({"name": "chase", "isa": "scalar", "precision": "dp", "level": ",".join(KERNEL_LEVELS["chase"]),
                    "available": ok, "reason": why, "bytes_per_elem": "64 B node per access"})
        return out

    def sweep(self, kernel: str, precision: str, *, quick: bool = False,
              store: str | None = None) -> list[KernelSpec]:
        """The default points.

        The intensity sweep streams with ``store="nt"`` unless told ``store="none"``: G loads plus G/2 streamed
        result vectors per trip. Q counts loads and stores alike (model.md §0) and the sweep exists to reach the
        peak bandwidth (§7.1); a core that only reads stops short of it (on Zen 3 read-only reached 0.77x of
        likwid's stream_mem triad, the nt stream 1.0x; benchmarks/cpu_vs_likwid.py). It starts at its floor
        F = G/2, the triad's own intensity (1/12 flop/B in DP), then 0.25..64 flop/B at >= 4 points per doubling.
        ``store="none"`` is the papers' read-only polynomial stream, from 0.25 flop/B."""
        if store is not None:
            _check_store(store)
        if store is not None and kernel != "intensity":
            raise BenchError(f"store='{store}' applies to the intensity kernel only, not '{kernel}'")
        isa = self._require_isa(None)
        v = ISAS[isa]
        if kernel not in KERNEL_PRECISIONS:
            raise BenchError(f"unknown kernel '{kernel}' (cpu_asm has: {', '.join(KERNEL_PRECISIONS)})")
        if precision not in KERNEL_PRECISIONS[kernel]:
            raise UnsupportedError(
                f"kernel '{kernel}' runs in {'/'.join(KERNEL_PRECISIONS[kernel])}, not '{precision}'")
        threads = len(topo.one_cpu_per_core())
        ws = topo.level_working_sets(threads, quick=quick)
        specs: list[KernelSpec] = []
        if kernel == "intensity":
            nt = store in (None, "nt")
            if nt:
                fs = sorted({v.g_fp // 2} | {fma_per_trip_for_nt(v, precision, i) for i in intensity_targets()})
            else:
                fs = sorted({fma_per_trip_for(v, precision, i) for i in intensity_targets()})
            for f in fs:
                specs.append(KernelSpec(self.name, "intensity", precision, "mem",
                                        {"isa": isa, "store": "nt" if nt else "none", "fma_per_trip": f,
                                         "working_set_bytes": ws["mem"]}))
        elif kernel == "int":
            for op in ("add", "mul") if v.int_mul else ("add",):
                for s in int_steps_sweep():
                    specs.append(KernelSpec(self.name, "int", "int32", "mem",
                                            {"isa": isa, "op": op, "steps": s, "working_set_bytes": ws["mem"]}))
        elif kernel == "cache":
            for level, nbytes in ws.items():
                for mode in ("load", "rmw", "store"):
                    specs.append(KernelSpec(self.name, "cache", "dp", level,
                                            {"isa": isa, "mode": mode, "working_set_bytes": nbytes}))
        else:  # chase: one thread, so sizes per one core
            ws1 = topo.level_working_sets(1, quick=quick)
            for level, nbytes in ws1.items():
                for chains in (1, 8):
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": chains, "working_set_bytes": nbytes}))
                if level in ("l3", "mem"):
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": 1, "page_local": True, "working_set_bytes": nbytes}))
                    specs.append(KernelSpec(self.name, "chase", "dp", level,
                                            {"chains": 1, "hugetlb": True, "working_set_bytes": nbytes}))
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


def _positive_int(params: dict[str, Any], key: str, default: int | None = None) -> int:
    val = params.get(key, default)
    if val is None:
        raise BenchError(f"parameter '{key}' is required")
    if isinstance(val, bool) or not isinstance(val, (int, float)) or int(val) != val or val <= 0:
        raise BenchError(f"parameter '{key}' must be a positive integer, got {val!r}")
    return int(val)


class CpuPrepared:
    """One allocated, first-touched sweep point; ``run(reps)`` times ``reps`` repetitions in native code."""

    def __init__(self, backend: CpuAsmBackend, spec: KernelSpec) -> None:
        self.spec = spec
        p = dict(spec.params)
        kern = _native()
        self.seed = int(p.get("seed", 1))
        cores = topo.one_cpu_per_core()
        threads = _positive_int(p, "threads", len(cores))
        if threads > len(cores):
            raise BenchError(f"threads={threads} but this machine has {len(cores)} usable cores")
        self.cpus = cores[:threads]
        quick = bool(p.get("quick", False))
        default_ws, ws_notes = topo.working_set_plan(1 if spec.kernel == "chase" else threads, quick=quick)
        ws = _positive_int(p, "working_set_bytes", default_ws.get(spec.level))
        if ws > 0.8 * topo.mem_available_bytes():
            raise BenchError(f"working set {ws / 2**30:.2f} GiB is larger than 80% of available memory "
                             f"({topo.mem_available_bytes() / 2**30:.2f} GiB)")
        self.extra: dict[str, Any] = {"threads": threads, "cpus": self.cpus, "notes": ws_notes}
        self._total_reps = 0
        self._native: Any
        if spec.kernel == "chase":
            self.isa = "scalar"
            chains = _positive_int(p, "chains", 1)
            if chains & (chains - 1) or chains > 32:
                raise BenchError(f"chains must be a power of two up to 32, got {chains}")
            nodes = ws // NODE_BYTES
            page_nodes = PAGE_BYTES // NODE_BYTES
            nodes -= nodes % max(chains, page_nodes if p.get("page_local") else 1)
            if nodes < 2 * chains:
                raise BenchError(f"working set {ws} B is too small for {chains} chains of {NODE_BYTES} B nodes")
            self.nodes, self.chains = nodes, chains
            self.steps_per_rep = min(nodes // chains, CHASE_STEPS_PER_REP)
            self.order = ref.chase_order(self.seed, nodes, page_local=bool(p.get("page_local")),
                                         nodes_per_page=page_nodes)
            hugetlb = bool(p.get("hugetlb")) and topo.hugetlb_pages_free() * 2**21 >= nodes * NODE_BYTES
            self._native = kern.Chase(self.order, NODE_BYTES, chains, self.cpus[0], hugetlb)
            self.counts_per_rep = chase_counts(self.steps_per_rep * chains)
            self.extra.update(threads=1, cpus=self.cpus[:1], chains=chains, nodes=nodes,
                              page_local=bool(p.get("page_local")), working_set_bytes=nodes * NODE_BYTES)
            return
        self.isa = backend._require_isa(p.get("isa"))
        v = ISAS[self.isa]
        self.variant = v
        trip = trip_elems(v, spec.kernel, spec.precision)
        esize = ELEM_BYTES[spec.precision]
        unit = trip * threads
        self.store = _check_store(str(p.get("store", "none"))) if spec.kernel == "intensity" else "none"
        nt = self.store == "nt"
        # nt: the working set holds the input (n elements) and the streamed output (n/2)
        n = ((ws * 2 // 3 if nt else ws) // esize) // unit * unit
        if n == 0:
            raise BenchError(f"working set {ws} B is below one trip per thread ({unit * esize} B)")
        self.n_elems = n
        self.extra.update(isa=self.isa, working_set_bytes=(n + n // 2 if nt else n) * esize, n_elems=n)
        if spec.kernel == "intensity":
            if "fma_per_trip" in p:
                f = _positive_int(p, "fma_per_trip")
            elif "intensity" in p:
                target = float(p["intensity"])
                if not target > 0:
                    raise BenchError(f"intensity must be > 0, got {target}")
                f = (fma_per_trip_for_nt if nt else fma_per_trip_for)(v, spec.precision, target)
            else:
                raise BenchError("intensity kernel needs 'fma_per_trip' or 'intensity'")
            if 2 * f < v.g_fp:
                raise BenchError(f"fma_per_trip={f} is below the floor {(v.g_fp + 1) // 2} (every load feeds an FMA)")
            self.knob = f
            kind = f"intensity_nt_{spec.precision}" if nt else f"intensity_{spec.precision}"
            self._native = kern.Stream(kind, self.isa, n, self.cpus, self.seed, ref.PERIOD)
            if nt:
                self.counts_per_rep = intensity_nt_counts(v, spec.precision, n, f, spec.level)
                self.extra.update(fma_per_trip=f, vectors_per_trip=v.g_fp, chains=v.g_fp, store="nt",
                                  stored_vectors_per_trip=v.g_fp // 2,
                                  intensity_flop_per_byte=intensity_of_nt(v, spec.precision, f))
            else:
                self.counts_per_rep = intensity_counts(v, spec.precision, n, f, spec.level)
                self.extra.update(fma_per_trip=f, vectors_per_trip=v.g_fp, chains=v.g_fp,
                                  intensity_flop_per_byte=intensity_of(v, spec.precision, f))
        elif spec.kernel == "int":
            op = str(p.get("op", "add"))
            if op not in ("add", "mul"):
                raise BenchError(f"int op must be add or mul, got '{op}'")
            if op == "mul" and not v.int_mul:
                raise UnsupportedError(f"ISA '{self.isa}' has no int32 lane multiply")
            steps = int(p.get("steps", 0))
            if steps < 0:
                raise BenchError(f"steps must be >= 0, got {steps}")
            self.op, self.knob = op, steps
            self._native = kern.Stream(f"int_{op}", self.isa, n, self.cpus, self.seed, ref.PERIOD)
            self.counts_per_rep = int_counts(n, steps, spec.level)
            self.extra.update(op=op, steps=steps, int_ops_per_byte=(steps + 1) / 4)
        else:
            mode = str(p.get("mode", "load"))
            if mode not in ("load", "rmw", "store"):
                raise BenchError(f"cache mode must be load, rmw or store, got '{mode}'")
            self.mode, self.knob = mode, 0
            # load: raw words with no period inside the buffer, so every word reaches the XOR checksum once per rep
            period = n if mode == "load" else ref.PERIOD
            self._native = kern.Stream(mode, self.isa, n, self.cpus, self.seed, period)
            self.counts_per_rep = cache_counts(mode, n, spec.level)
            self.extra.update(mode=mode)
        self.extra["pages"] = self._native.pages
        self._expected: Any = None

    # -- reference --------------------------------------------------------------------------------------------
    def expected(self, reps: int) -> Any:
        """What the checksum must be after this run of ``reps`` (given the reps already run)."""
        spec = self.spec
        if spec.kernel == "chase":
            return ref.chase_positions(self.order, self.chains, self._total_reps * self.steps_per_rep)
        v = self.variant
        if spec.kernel == "intensity" and self.store == "nt":
            if self._expected is None:
                self._expected = ref.intensity_nt_checksum(spec.precision, self.seed, self.n_elems, v.g_fp,
                                                           v.lanes(spec.precision), self.knob)
            return self._expected  # the written array, rewritten identically every rep
        if spec.kernel == "intensity":
            if self._expected is None:
                self._expected = ref.intensity_checksum(spec.precision, self.seed, self.n_elems, v.g_fp,
                                                        v.lanes(spec.precision), self.knob)
            return self._expected * reps
        if spec.kernel == "int":
            if self._expected is None:
                self._expected = ref.int_checksum(self.op, self.seed, self.n_elems, v.g_int, v.lanes("int32"),
                                                  self.knob)
            return (self._expected * reps) & 0xFFFFFFFF
        if self.mode == "load":
            if self._expected is None:
                self._expected = ref.load_xor_checksum(self.seed, self.n_elems, v.g_ld, v.lanes("dp"), len(self.cpus))
            return (self._expected * reps) & 0xFFFFFFFFFFFFFFFF
        if self._expected is None:
            self._expected = ref.cache_sum(self.seed, self.n_elems)
        if self.mode == "rmw":
            return self._expected + self.n_elems * self._total_reps
        return float(self.n_elems * reps)

    def check(self, got: Any, reps: int) -> tuple[bool, Any]:
        exp = self.expected(reps)
        if self.spec.kernel == "intensity":
            v = self.variant
            if self.store == "nt":
                tol = ref.intensity_nt_rel_tol(self.spec.precision, v.g_fp, self.knob, self.n_elems)
            else:
                tol = ref.intensity_rel_tol(self.spec.precision, v.g_fp, v.a_fp, v.lanes(self.spec.precision),
                                            self.knob, self.n_elems)
            return bool(math.isfinite(got) and abs(got - exp) <= tol * abs(exp)), exp
        if self.spec.kernel == "chase":
            return list(got) == exp, exp
        return got == exp, exp

    def run(self, reps: int) -> RunResult:
        if isinstance(reps, bool) or not isinstance(reps, int) or reps <= 0:
            raise BenchError(f"reps must be a positive integer, got {reps!r}")
        out = dict(self._native.run(reps, self.steps_per_rep) if self.spec.kernel == "chase"
                   else self._native.run(reps, self.knob))
        self._total_reps += reps
        ok, exp = self.check(out["checksum"], reps)
        extra = dict(self.extra)
        clock = verdict_for_run(out, self.cpus[0])
        time_s = float(out["time_s"])
        extra.update(thread_time_s=list(out["thread_time_s"]), checksum=out["checksum"], checksum_expected=exp,
                     pages=out["pages"], clock_probe_hz=float(out["effective_clock_hz"]),
                     clock_method=clock.method, clock_check=clock.check)
        if clock.core_hz is not None:   # no number where the sources disagree: clock_check says why
            extra["effective_clock_hz"] = clock.core_hz
        counts = self.counts_per_rep.scaled(reps)
        if self.spec.kernel == "chase":
            steps = reps * self.steps_per_rep                       # dependent steps per chain
            extra["ns_per_access"] = time_s / steps * 1e9          # latency of one dependent access
            if clock.core_hz is not None:
                extra["cycles_per_access"] = time_s / steps * clock.core_hz
            extra["ns_per_access_aggregate"] = time_s / (steps * self.chains) * 1e9
        return RunResult(time_s=time_s, reps=reps, counts=counts, checksum_ok=ok, extra=extra)

    def close(self) -> None:
        self._native.close()


__all__ = ["Counts", "CpuAsmBackend", "CpuPrepared"]
