"""Every option of ``archline bench run`` and every key of a sweep config, validated in one place (pydantic on
the input boundary of :mod:`archline.common.inputs`), and the one rule for which option applies where.

The paths a run can take are ``time-only`` (the profile configures no meter: a null meter), ``metered`` (a
PowerMon 2, RAPL or NVML from the profile's ``[[meters]]``), ``emulated`` (``--emulate``) and ``schedule``
(``--emulate`` on a platform with no power model: the real kernels, an emulated meter playing ``--busy-w`` /
``--idle-w`` or ``--tdp-w``). An option that
does not apply to the path or back end a run takes is refused with one line saying why (:func:`check_applies`);
nothing is silently ignored.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field, field_validator

from archline.bench.config.profile import Kernel, Precision, check_power_caps
from archline.bench.errors import BenchError
from archline.bench.registry import backends, check_name, info_of, takers, taking
from archline.common.inputs import Strict, validate
from archline.common.sizes import parse_bytes

#: the most repetitions one timed region may hold (the runner's calibration cap)
MAX_REPS = 1_000_000_000
#: the longest timed region one may ask for (an hour)
MAX_REGION_S = 3600.0
#: option name in the models -> how a user spells it on the command line
FLAGS = {"min_time_s": "--min-time", "power_caps_w": "--power-cap", "kernels": "--kernel",
         "precisions": "--precision", "working_set_bytes": "--working-set", "dvfs_settings": "--dvfs-setting"}


def flag(name: str) -> str:
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A plain CPU list as likwid and taskset write one: ``0-3``, ``0,2,4``, ``0-1,6`` -> logical CPU ids in the order
    given; a CPU named twice is refused (as a thread count named twice is). likwid's thread domains (``S0:0-1``,
    ``N:0-3``, ``E:...``) are not taken: they name CPUs by the topology, which ``--cpus`` leaves to the user."""
    out: list[int] = []
    if ":" in text:
        raise ValueError(f"'{text}': likwid's thread domains (S0:, N:, E:) are not taken; give logical CPU ids "
                         "(e.g. 0-3 or 0,2,4; `likwid-pin -p` shows them)")
    for part in text.replace(" ", "").split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(f"'{text}' is not a CPU list (e.g. 0-3 or 0,2,4)")
        a, b = int(lo), int(hi) if dash else int(lo)
        if b < a:
            raise ValueError(f"'{part}' counts down; write {b}-{a}")
        twice = sorted({c for c in range(a, b + 1) if c in out})
        if twice:
            raise ValueError(f"'{text}' names CPU {twice[0]} twice; name each CPU once")
        out.extend(range(a, b + 1))
    return tuple(out)


def parse_device(device: str | None, what: str = "--device") -> str | None:
    """A device selector, well formed: ``P:D`` (two indices), a bare index, or a name substring; surrounding blanks
    dropped. Empty, a negative index or a malformed ``P:D`` is BenchError (exit 2) naming ``what``."""
    if device is None:
        return None
    d = device.strip()
    if not d:
        raise BenchError(f"{what}: empty; give 'P:D' indices, an index or a device name substring "
                         "(archline bench list shows the devices)")
    if ":" in d or d.startswith("-") or (d.lstrip("+-").isdigit() and not d.isdigit()):
        pd = d.split(":")
        if len(pd) != 2 or not all(x.isdigit() for x in pd):
            raise BenchError(f"{what} '{device}' is malformed: give 'P:D' (two indices >= 0, e.g. 0:0), an index "
                             "or a device name substring")
    return d


def machine_memory_bytes() -> int | None:
    """This machine's physical memory (None where the system does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


class RunOptions(Strict):
    """What one ``bench run`` (or one sweep) asks for; None = the profile's value or the documented default."""

    platform: str = "localhost"
    emulate: bool = False
    backend: str | None = None                 #: a registered back end (archline.bench.registry)
    kernels: tuple[Kernel, ...] | None = None
    precisions: tuple[Precision, ...] | None = None
    all_kernels: bool = False
    quick: bool = False
    reps: int | None = Field(default=None, ge=1, le=MAX_REPS)
    min_time_s: float | None = Field(default=None, gt=0, le=MAX_REGION_S, allow_inf_nan=False)
    isa: str | None = None
    threads: tuple[int, ...] | None = None     #: CPU back end: thread counts to sweep (one per core, first N cores)
    cpus: tuple[int, ...] | None = None        #: CPU back end: exactly these logical CPUs, one thread each (likwid -c)
    working_set_bytes: int | None = Field(default=None, ge=1)
    store: Literal["nt", "none"] | None = None
    device: str | None = None
    time_compression: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    seed: int = 0
    meter: str | None = None
    power_caps_w: tuple[float, ...] | None = None
    dvfs_settings: tuple[str, ...] | None = None
    max_lost: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: --emulate on a platform with no power model: the schedule's power (bench/emulated/schedule.py)
    busy_w: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    idle_w: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    tdp_w: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str | None) -> str | None:
        return check_name(v)

    @field_validator("threads", mode="after")
    @classmethod
    def _threads(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None and (not v or any(t < 1 for t in v) or len(set(v)) != len(v)):
            raise ValueError(f"thread counts must be distinct integers >= 1, got {','.join(map(str, v))}")
        return v

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, v: Any) -> Any:
        return parse_cpu_list(v) if isinstance(v, str) else v

    @field_validator("working_set_bytes", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = parse_bytes(v)          # ValueError says what a size looks like
        mem = machine_memory_bytes()
        if isinstance(v, int) and mem and v > mem:   # refused before any work, not an out-of-memory per point
            raise ValueError(f"{v} B is more than this machine's memory ({mem} B); give a smaller size (e.g. 64M)")
        return v

    @field_validator("device")
    @classmethod
    def _device(cls, v: str | None) -> str | None:
        try:
            return parse_device(v, "device")
        except BenchError as e:
            raise ValueError(str(e).removeprefix("device: ").removeprefix("device ")) from None

    @field_validator("power_caps_w")
    @classmethod
    def _caps(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is None:
            return v
        check_power_caps(v)
        once = tuple(dict.fromkeys(v))
        if len(once) != len(v):    # every point would run twice under the same cap
            logging.getLogger("archline.bench").warning(
                f"note: a power cap named twice is measured once (caps {', '.join(f'{c:g}' for c in once)} W)")
        return once

    @classmethod
    def from_cli(cls, **values: Any) -> RunOptions:
        """From the command line's values; errors name the flag (``--reps: ...``)."""
        return validate(cls, {k: v for k, v in values.items() if v is not None}, "bench run", error=BenchError,
                        key=flag)


def check_applies(opts: RunOptions, *, path: str, backend: str, platform: str) -> None:
    """Refuse, with one line saying why, an option that the run's path (time-only, metered, emulated) or back
    end cannot honour."""
    def no(what: str, why: str) -> None:
        raise BenchError(f"{what} does not apply here: {why}")

    given = [flag(k) for k in ("busy_w", "idle_w", "tdp_w") if getattr(opts, k) is not None]
    if given and path != "schedule":
        no("/".join(given), "they set the power schedule of --emulate on a platform with no power model; add "
           "--emulate" if not opts.emulate else f"platform '{platform}' is emulated by its model (its constants "
           "give the power)")
    if path == "schedule":
        sched = "--emulate here runs this machine's kernels with an emulated power schedule, which"
        if opts.meter is not None:
            no("--meter", f"{sched} is played on an emulated meter, not one of the profile's")
        if opts.time_compression is not None:
            no("--time-compression", f"{sched} runs in real time (the kernels are real)")
        if opts.power_caps_w or opts.dvfs_settings:
            no("power caps and DVFS settings", f"{sched} has no cap or clock to set")
        path = "metered"          # the real back end's options apply as on a metered run
    if path == "emulated":
        emu = "--emulate runs the emulated device, which"
        if opts.backend is not None and not info_of(opts.backend).needs_emulate:
            no("--backend", f"--emulate runs the emulated back end, not '{opts.backend}'")
        if opts.isa is not None:
            no("--isa", f"{emu} has no ISA variants (it is {takers('isa')}'s)")
        if opts.threads is not None or opts.cpus is not None:
            no("--threads/--cpus", f"{emu} is one modelled device, not this CPU's cores")
        if opts.working_set_bytes is not None:
            no("--working-set", f"{emu} sizes each point by its model time, not by a working set")
        if opts.store is not None:
            no("--store", f"{emu} has no store stream (it is {takers('store')}'s intensity kernel's)")
        if opts.device is not None:
            no("--device", f"{emu} is one device (--device picks an OpenCL or CUDA device)")
        if opts.dvfs_settings:
            no("DVFS settings", "they are not modelled by the emulated device (use power caps)")
        return
    if opts.time_compression is not None:
        no("--time-compression", "it applies to --emulate only (real hardware runs in real time)")
    if path == "time-only" and opts.meter is not None:
        no("--meter", f"platform '{platform}' configures no meter")
    if path == "time-only" and opts.max_lost is not None:
        no("--max-lost", f"platform '{platform}' configures no meter, so no sample can be lost")
    if opts.isa is not None and backend not in taking("isa"):
        no("--isa", f"--isa applies to {takers('isa')}, not '{backend}'")
    if (opts.threads is not None or opts.cpus is not None) and backend not in taking("threads"):
        no("--threads/--cpus", f"they pin {takers('threads')}'s threads, not '{backend}'")
    if opts.threads is not None and opts.cpus is not None:
        no("--threads with --cpus", "--cpus already says how many threads (one per CPU listed)")
    many = max(opts.threads or (1,)) > 1 or len(opts.cpus or ()) > 1
    if many and opts.kernels and set(opts.kernels) <= {"chase"}:
        no("--threads/--cpus", "the chase kernel walks one pointer chain on one thread (a latency, not a rate)")
    if opts.store is not None and backend not in taking("store"):
        no("--store", f"--store applies to {takers('store')}, not '{backend}'")
    info = backends().get(backend)
    if opts.device is not None and info is not None and not info.takes_device:
        where = "runs on this CPU's cores" if info.device_kind == "cpu" else "has no device to pick"
        no("--device", f"the {backend} back end {where} (--device picks an OpenCL or CUDA device)")
