"""One prepared cpu_asm sweep point: allocation, first touch and the native kernel object; its repetitions are timed
in native code and checked against the references (reference.py) with the tolerances derived there."""

from __future__ import annotations

import math
import os
from typing import Any, Protocol

from archline.bench.cpu_asm import build_info
from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm import topology as topo
from archline.bench.cpu_asm.clock import verdict_for_run
from archline.bench.cpu_asm.isas import (
    CHASE_STEPS_PER_REP,
    NODE_BYTES,
    PAGE_BYTES,
    check_store,
    native,
)
from archline.bench.cpu_asm.variants import (
    ELEM_BYTES,
    ISAS,
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
from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import KernelSpec, RunResult


class BufferKeeper(Protocol):
    """What a point asks of the back end that prepared it (:class:`~archline.bench.cpu_asm.backend.CpuAsmBackend`):
    the ISA a request resolves to, and the native stream buffers it keeps between points."""

    def _require_isa(self, isa: str | None) -> str: ...

    def stream(self, kern: Any, key: tuple[Any, ...]) -> Any: ...

    def keep(self, key: tuple[Any, ...], native: Any) -> None: ...


def _positive_int(params: dict[str, Any], key: str, default: int | None = None) -> int:
    val = params.get(key, default)
    if val is None:
        raise BenchError(f"parameter '{key}' is required")
    if isinstance(val, bool) or not isinstance(val, (int, float)) or int(val) != val or val <= 0:
        raise BenchError(f"parameter '{key}' must be a positive integer, got {val!r}")
    return int(val)


class CpuPrepared:
    """One allocated, first-touched sweep point; ``run(reps)`` times ``reps`` repetitions in native code."""

    def __init__(self, backend: BufferKeeper, spec: KernelSpec) -> None:
        self.spec = spec
        self._backend = backend
        p = dict(spec.params)
        kern = native()
        self.seed = int(p.get("seed", 1))
        if p.get("cpus") is not None:       # pinned to exactly these logical CPUs (--cpus), one thread each
            cores = [int(c) for c in p["cpus"]]
            allowed = os.sched_getaffinity(0)
            if not cores or any(c not in allowed for c in cores):
                raise BenchError(f"cpus={cores}: not all are CPUs this process may run on ({sorted(allowed)})")
        else:
            cores = topo.one_cpu_per_core()
        threads = _positive_int(p, "threads", len(cores))
        if threads > len(cores):
            raise BenchError(f"threads={threads} but this machine has {len(cores)} usable cores")
        self.cpus = cores[:threads]
        quick = bool(p.get("quick", False))
        default_ws, ws_notes = topo.working_set_plan(1 if spec.kernel == "chase" else threads, quick=quick,
                                                     allowed=p.get("cpus"))
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
        self.store = check_store(str(p.get("store", "none"))) if spec.kernel == "intensity" else "none"
        nt = self.store == "nt"
        # nt: the working set holds the input (n elements) and the streamed output (n/2)
        n = ((ws * 2 // 3 if nt else ws) // esize) // unit * unit
        if n == 0:
            raise BenchError(f"working set {ws} B is below one trip per thread ({unit * esize} B)")
        self.n_elems = n
        self.extra.update(isa=self.isa, compiler=build_info.compiler(self.isa),
                          working_set_bytes=(n + n // 2 if nt else n) * esize, n_elems=n)
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
            self._key = (kind, self.isa, n, list(self.cpus), self.seed, ref.PERIOD)
            self._native = backend.stream(kern, self._key)
            self._keep = bool(p.get("keep_buffer", False))
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
        if getattr(self, "_keep", False):    # the next point streams the same data at another F: it takes it over
            self._backend.keep(self._key, self._native)
        else:
            self._native.close()


__all__ = ["CpuPrepared"]
