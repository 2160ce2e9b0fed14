"""The one kernel interface every back end implements (BabelStream-style), and the exact counts it reports.

A back end (one folder under ``bench/`` or a plugin, listed by :mod:`archline.bench.registry`) describes which
kernels it has, whether it can run here and why not, the default sweep points, and prepares a point for repeated
runs. Only the runner times whole regions, repeats and records meters; a prepared kernel runs ``reps`` repetitions,
times them inside the native code or with device events, and verifies its output against a reference computed from
its parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

KERNELS = ("intensity", "cache", "chase", "int")
PRECISIONS = ("sp", "dp", "int32")
LEVELS = ("mem", "l1", "l2", "l3", "shared")


@dataclass(frozen=True)
class Counts:
    """Useful work and traffic (exact counts); column names are those of archline.results/1. A prepared kernel's
    ``counts_per_rep`` holds ONE repetition's; a :class:`RunResult`'s ``counts`` the whole ``run(reps)`` call's
    (``counts_per_rep.scaled(reps)``), which the runner divides by the call's ``time_s``."""

    flops_sp: int = 0
    flops_dp: int = 0
    int_ops: int = 0
    bytes_mem: int = 0
    bytes_l1: int = 0
    bytes_l2: int = 0
    bytes_l3: int = 0
    bytes_shared: int = 0
    rand_accesses: int = 0
    bus_bytes: int = 0  # bytes the hardware really moves where write-allocate adds traffic (0 = same as counted)

    def scaled(self, reps: int) -> Counts:
        return Counts(**{f.name: getattr(self, f.name) * reps for f in fields(self)})

    def as_row(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def flops(self) -> int:
        return self.flops_sp + self.flops_dp

    @property
    def bytes_total(self) -> int:
        return self.bytes_mem + self.bytes_l1 + self.bytes_l2 + self.bytes_l3 + self.bytes_shared


@dataclass(frozen=True)
class KernelSpec:
    """One sweep point: which kernel, at which precision and memory level, with which parameters."""

    backend: str
    kernel: str                      # one of KERNELS
    precision: str                   # one of PRECISIONS
    level: str                       # one of LEVELS
    params: Mapping[str, Any] = field(default_factory=dict)   # e.g. fma_per_elem, working_set_bytes, chains

    @property
    def label(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.backend}:{self.kernel}/{self.precision}/{self.level}[{p}]"


@dataclass
class RunResult:
    """What a prepared kernel returns for one ``run(reps)`` call: its time and counts are TOTALS of the call's
    ``reps`` repetitions (time_s > 0 and finite, counts >= 0: a plugin's are checked, see bench/guarded.py)."""

    time_s: float                    # the timed region (slowest thread / device events), all reps
    reps: int
    counts: Counts                   # for all reps (per-rep counts x reps)
    checksum_ok: bool
    extra: dict[str, Any] = field(default_factory=dict)   # e.g. effective_clock_hz, ns_per_access, device


class PreparedKernel(Protocol):
    spec: KernelSpec
    counts_per_rep: Counts

    def run(self, reps: int) -> RunResult:
        """Run ``reps`` repetitions back to back; the result's ``time_s`` and ``counts`` are their totals."""
        ...

    def close(self) -> None: ...


class Backend(Protocol):
    """Everything the runner, the session and the commands call on a back end. The optional capabilities (the last
    six members) have defaults in :class:`BackendBase`, which every back end of archline derives from; a plugin
    may derive from it too or spell them all."""

    #: the name it is registered under (its BackendInfo's), which its rows carry; a plugin may leave it out (the
    #: registered one is used) but may not give another (refused when opened)
    name: str
    #: ``--quick`` with no kernel named runs :meth:`roofline` (few points) instead of the intensity sweep
    has_roofline: bool
    #: :meth:`sweep` takes ``ranges=`` (the profile's ``[bench] ranges``; the emulated device sizes by them)
    sweeps_profile_ranges: bool

    def availability(self) -> tuple[bool, str]:
        """(usable, reason): the reason says why not, or names the device/ISA when usable."""
        ...

    def describe(self) -> list[dict[str, Any]]:
        """One dict per kernel variant: name, precision, level, available (bool), reason."""
        ...

    def sweep(self, kernel: str, precision: str, *, quick: bool = False) -> list[KernelSpec]:
        """The default points of a kernel's sweep on this machine (intensity from 0.25 flop/B, >= 4 per doubling)."""
        ...

    def prepare(self, spec: KernelSpec, device: str | None = None) -> PreparedKernel:
        """Allocate, fill with random data and first-touch; raise BenchError subclasses for bad input."""
        ...

    def kernel_precisions(self, kernel: str) -> tuple[str, ...] | None:
        """The precisions ``kernel`` runs at; None: any the sweep takes (an unknown kernel: sweep says so)."""
        ...

    def check_device(self, device: str) -> str | None:
        """Open the device ``--device`` (or the profile) names once, before any work; its summary (None: none)."""
        ...

    def check_plans(self, specs: list[KernelSpec], device: str | None) -> None:
        """Refuse, before any work, a point the device cannot honour (one line, exit 2)."""
        ...

    def plan_notes(self) -> list[str]:
        """Notes for the log on what the back end made of this machine (e.g. its cache topology)."""
        ...

    def roofline(self, precisions: Sequence[str], *, threads: int | None = None,
                 cpus: Sequence[int] | None = None) -> list[KernelSpec]:
        """``--quick``'s whole roofline in few points (only where :attr:`has_roofline`)."""
        ...


class Emulator(Backend, Protocol):
    """A back end that ``--emulate`` runs (the registry's ``needs_emulate``: the profile's model on an emulated
    device, opened with ``profile=``, ``time_compression=``, ``seed=``, ``meter=``): what bench run's emulated path
    asks of it besides the kernels."""

    #: what it chose for the profile, for the log (e.g. the default emulated meter of a profile without one)
    meter_notes: list[str]

    def check_caps(self, caps_w: Sequence[float]) -> None:
        """Refuse a power cap the device cannot take (the message gives the allowed range)."""
        ...

    def open_meter(self, *, seed: int, raw_dir: Any, notes: list[str]) -> tuple[Any, str, str, float]:
        """Its emulated meter: (meter, label, description, the configured rate in Hz); what it made of the meter's
        emulator URL is appended to ``notes``."""
        ...

    def emulation_note(self) -> str:
        """The rows' note: which platform is emulated, at which time compression and idle power."""
        ...

    def set_cap(self, power_cap_w: float | None) -> None: ...

    def idle(self, device_s: float) -> None:
        """Idle the emulated device for ``device_s`` device seconds."""
        ...


class BackendBase:
    """The optional capabilities of :class:`Backend` with their defaults: a back end overrides those it has."""

    has_roofline: bool = False
    sweeps_profile_ranges: bool = False

    def kernel_precisions(self, kernel: str) -> tuple[str, ...] | None:
        return None

    def check_device(self, device: str) -> str | None:
        return None

    def check_plans(self, specs: list[KernelSpec], device: str | None) -> None:
        return None

    def plan_notes(self) -> list[str]:
        return []

    def roofline(self, precisions: Sequence[str], *, threads: int | None = None,
                 cpus: Sequence[int] | None = None) -> list[KernelSpec]:
        raise NotImplementedError(f"{type(self).__name__} has no quick roofline (has_roofline is False)")
