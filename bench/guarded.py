"""A plugin back end, never trusted (issue 37 item 2): every call into its code goes through :class:`GuardedBackend`,
so an exception (SystemExit too) or a malformed answer from a third party's ``archline.backends`` plugin becomes one
line naming the back end and the hook, never a traceback or a crash of the whole command:

* opening it, ``availability``, ``describe``, ``sweep`` and the plan hooks: :class:`BackendFaultError` (exit 4, the
  back end is not usable here; ``bench list`` shows it as not usable with that reason);
* ``prepare``, ``run`` and ``close`` of a point: a :class:`BenchError` that fails that point alone (exit 3 at the end).

It also holds the plugin to what its BackendInfo (bench/registry.py) declares: the rows and headers
carry the REGISTERED name (an object that calls itself otherwise is refused), and a kernel or precision it does not
declare is unsupported (one note; ``nothing to run`` when nothing is left, exit 2). The built-in back ends are not
wrapped: their behaviour is unchanged.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from archline.bench.errors import BackendFaultError, BenchError, UnsupportedError
from archline.bench.kernels import Backend, BackendBase, Counts, KernelSpec, PreparedKernel, RunResult
from archline.common.plugins import FAULTS, one_line, short_repr  # the meter plugins' guard's rule too

T = TypeVar("T")


def _call(who: str, hook: str, fn: Callable[..., T], *args: Any, error: type[BenchError] = BackendFaultError,
          **kw: Any) -> T:
    """``fn(*args, **kw)``; a fault of the plugin's code is ``error`` naming the back end and the hook. A BenchError
    it raises on purpose (bad input, unsupported) passes as it is."""
    try:
        return fn(*args, **kw)
    except BenchError:
        raise
    except FAULTS as e:
        raise error(f"{who} failed in {hook}: {type(e).__name__}: {one_line(e)}") from None


class GuardedPrepared:
    """A plugin's prepared kernel: its faults fail the point alone."""

    def __init__(self, who: str, inner: PreparedKernel, spec: KernelSpec) -> None:
        self._who, self._inner = who, inner
        self.spec = spec
        # not read by the runner (it takes a run's own counts): a plugin's may be left out
        self.counts_per_rep = getattr(inner, "counts_per_rep", None)

    def run(self, reps: int) -> RunResult:
        res = _call(self._who, "run()", self._inner.run, reps, error=BenchError)
        if not isinstance(res, RunResult):
            raise BenchError(f"{self._who}: run() gave a {type(res).__name__}, not a RunResult")
        # a time of 0 would size the next run to a billion repetitions (a hang); NaN or < 0 is no time at all
        t = res.time_s
        if not isinstance(t, numbers.Real) or not math.isfinite(t) or t <= 0:
            raise BenchError(f"{self._who}: run({reps}) reported time_s={t!r}, not a time (finite, > 0 s)")
        if res.reps != reps:
            raise BenchError(f"{self._who}: run({reps}) reported reps={res.reps!r}; counts and time are of the "
                             "whole call")
        if not isinstance(res.counts, Counts):
            raise BenchError(f"{self._who}: run({reps}) gave counts of type {type(res.counts).__name__}, not Counts")
        bad = {k: v for k, v in res.counts.as_row().items() if not isinstance(v, numbers.Integral) or v < 0}
        if bad:
            k, v = next(iter(bad.items()))
            raise BenchError(f"{self._who}: run({reps}) counted {k}={v!r}, not a count (an integer >= 0)")
        if not isinstance(res.checksum_ok, bool) and type(res.checksum_ok).__name__ != "bool_":  # numpy's too
            raise BenchError(f"{self._who}: run({reps}) gave checksum_ok={short_repr(res.checksum_ok)}, not a bool")
        return res

    def close(self) -> None:
        _call(self._who, "close()", self._inner.close, error=BenchError)


class GuardedBackend:
    """A plugin's back end as archline calls it (the :class:`~archline.bench.kernels.Backend` protocol)."""

    def __init__(self, name: str, inner: Backend, origin: str, *, kernels: Sequence[str],
                 precisions: Sequence[str]) -> None:
        """``inner`` as registered under ``name`` by ``origin``, declaring ``kernels`` and ``precisions`` (its
        BackendInfo's)."""
        self.name = name
        self._inner, self._kernels, self._precisions = inner, tuple(kernels), tuple(precisions)
        self._who = f"backend '{name}' ({origin})"
        own = getattr(inner, "name", name)      # `name` may be left out: the registered one is used
        if own != name:
            raise BackendFaultError(f"{self._who} calls itself {own!r}; a back end's rows carry the name it "
                                    "registered (fix the plugin's `name`)")
        self.has_roofline = bool(_call(self._who, "has_roofline", getattr, inner, "has_roofline", False))
        self.sweeps_profile_ranges = bool(_call(self._who, "sweeps_profile_ranges", getattr, inner,
                                                "sweeps_profile_ranges", False))

    @property
    def inner(self) -> Backend:
        """The plugin's own object (its own ``step_load`` takes it)."""
        return self._inner

    def availability(self) -> tuple[bool, str]:
        got = _call(self._who, "availability()", self._inner.availability)
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], bool) and isinstance(got[1], str)):
            raise BackendFaultError(f"{self._who}: availability() gave {short_repr(got)}, not (usable, reason)")
        return got

    def describe(self) -> list[dict[str, Any]]:
        got = _call(self._who, "describe()", self._inner.describe)
        keys = {"name", "precision", "level", "available", "reason"}
        if not isinstance(got, list) or not all(isinstance(d, dict) and keys <= set(d) for d in got):
            raise BackendFaultError(f"{self._who}: describe() gave {short_repr(got)}, not a list of dicts with "
                                    f"{', '.join(sorted(keys))}")
        return got

    def _declared(self, kernel: str, precision: str) -> None:
        if kernel not in self._kernels:
            raise UnsupportedError(f"backend '{self.name}' has no kernel '{kernel}' (it declares "
                                   f"{', '.join(self._kernels)})")
        if precision not in self._precisions:
            raise UnsupportedError(f"backend '{self.name}' does not run {kernel} at {precision} (it declares "
                                   f"{', '.join(self._precisions)})")

    def _specs(self, hook: str, got: Any) -> list[KernelSpec]:
        if not isinstance(got, list) or not all(isinstance(s, KernelSpec) for s in got):
            raise BackendFaultError(f"{self._who}: {hook} gave {short_repr(got)}, not a list of KernelSpec")
        for s in got:
            self._declared(s.kernel, s.precision)
        # the rows' point ids name the registered back end, whatever the plugin wrote in its specs
        return [s if s.backend == self.name else replace(s, backend=self.name) for s in got]

    def sweep(self, kernel: str, precision: str, **kw: Any) -> list[KernelSpec]:
        self._declared(kernel, precision)
        return self._specs("sweep()", _call(self._who, "sweep()", self._inner.sweep, kernel, precision, **kw))

    def roofline(self, precisions: Sequence[str], **kw: Any) -> list[KernelSpec]:
        return self._specs("roofline()", _call(self._who, "roofline()", self._inner.roofline, precisions, **kw))

    def prepare(self, spec: KernelSpec, device: str | None = None) -> GuardedPrepared:
        kern = _call(self._who, "prepare()", self._inner.prepare, spec, device, error=BenchError)
        for attr in ("run", "close"):
            if not callable(getattr(kern, attr, None)):
                raise BenchError(f"{self._who}: prepare() gave a {type(kern).__name__} without '{attr}'")
        return GuardedPrepared(self._who, kern, spec)

    def _optional(self, hook: str) -> Callable[..., Any]:
        """The plugin's optional capability, else BackendBase's default (a plugin need not derive from it)."""
        got = _call(self._who, hook, getattr, self._inner, hook, None)
        return got if callable(got) else getattr(BackendBase(), hook)  # type: ignore[no-any-return]

    def kernel_precisions(self, kernel: str) -> tuple[str, ...] | None:
        got = _call(self._who, "kernel_precisions()", self._optional("kernel_precisions"), kernel)
        return None if got is None else tuple(got)

    def check_device(self, device: str) -> str | None:
        got = _call(self._who, "check_device()", self._optional("check_device"), device)
        return None if got is None else str(got)

    def check_plans(self, specs: list[KernelSpec], device: str | None) -> None:
        _call(self._who, "check_plans()", self._optional("check_plans"), specs, device)

    def plan_notes(self) -> list[str]:
        return [str(n) for n in _call(self._who, "plan_notes()", self._optional("plan_notes"))]
