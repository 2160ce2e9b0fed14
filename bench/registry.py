"""Back-end registry: every back end is one folder (or one plugin) that declares a :class:`BackendInfo` in one place
(its package's ``BACKEND``); every other module asks this registry by capability, never by a back end's name.

Built-in back ends are the folders in :data:`BUILTIN`; third parties add theirs through the entry point group
``archline.backends`` (``toy = "toy_backend:BACKEND"``, the object a :class:`BackendInfo`). The lookup runs once
per process; a plugin that cannot be loaded, or that is not a :class:`BackendInfo`, is one warning line naming
it and is left out, never a crash. Implementations are imported only when opened, so a missing dependency is a
reason, not a crash.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Literal, cast

from archline.bench.errors import BackendUnavailableError
from archline.bench.kernels import KERNELS, PRECISIONS, Backend

log = logging.getLogger("archline.bench")

#: the entry point group third-party back ends register in
ENTRY_POINT_GROUP = "archline.backends"
#: the built-in back ends' packages, each with a ``BACKEND`` (their order is the listing's)
BUILTIN = ("archline.bench.cpu_asm", "archline.bench.opencl", "archline.bench.cuda", "archline.bench.hip",
           "archline.bench.emulated")


@dataclass(frozen=True)
class BackendInfo:
    """What the rest of archline knows about a back end without opening it."""

    name: str
    #: ``"module:attr"`` of the class (or factory) that opens it, called with the keyword options it takes
    opener: str | Callable[..., Backend]
    #: one line for ``--help`` and completion: what it runs on
    help: str
    #: what it measures: this CPU's cores, a GPU (a GPU vendor's controls, GPU meters' step load), or a model
    device_kind: Literal["cpu", "gpu", "model"]
    kernels: tuple[str, ...] = KERNELS
    precisions: tuple[str, ...] = PRECISIONS
    #: the run options (RunOptions field names) that only back ends listing them take: isa, threads, cpus, store
    options: frozenset[str] = frozenset()
    #: ``--device`` picks one of its devices
    takes_device: bool = True
    #: the GPU vendor libraries whose controls set its device's caps and clocks, in the order tried: each the
    #: ``"module:attr"`` of a :class:`~archline.bench.controls.gpu.GpuVendor` declared in the back end's folder;
    #: empty: every vendor some back end declares (:func:`gpu_vendors`)
    control_vendors: tuple[str, ...] = ()
    #: chosen by ``--emulate`` only (it runs a profile's model, not this machine), never a profile's [bench] backend
    needs_emulate: bool = False
    #: ``bench list`` lists its kernel variants even where it cannot run (e.g. the ISAs it was built for)
    describe_when_unusable: bool = False
    #: a CPU back end's steady load for meter probe/calibrate, ``"module:function"`` taking (backend, threads=,
    #: cpus=) and giving (prepared kernel, what it is); GPU back ends' step load is their highest-intensity SP sweep
    step_load: str | None = None
    #: ``"module:function"`` giving its line of ``archline --version`` (e.g. what its native code was built for)
    version_line: str | None = None
    #: an emulating back end's ``meter emulate --platform`` power: ``"module:function"`` taking (platform,
    #: intensity_flop_per_byte, precision) and giving (the power script, what it plays)
    steady_power: str | None = None

    def open(self, **options: Any) -> Backend:
        opener = self.opener
        if isinstance(opener, str):
            module, _, attr = opener.partition(":")
            try:
                opener = cast("Callable[..., Backend]", getattr(importlib.import_module(module), attr))
            except ImportError as e:
                raise BackendUnavailableError(f"backend '{self.name}' cannot be loaded: {e}") from None
        return opener(**options)

    def version_text(self) -> str | None:
        """Its ``archline --version`` line (None: it has none)."""
        if self.version_line is None:
            return None
        return str(_resolve(self.version_line)())

    def steady_load(self, backend: Backend, **options: Any) -> tuple[Any, dict[str, Any]]:
        """This back end's ``step_load`` on ``backend`` (one it opened); BackendUnavailableError when it has none."""
        if self.step_load is None:
            raise BackendUnavailableError(f"backend '{self.name}' has no CPU step load")
        return cast("tuple[Any, dict[str, Any]]", _resolve(self.step_load)(backend, **options))

    def steady_power_script(self, platform: str, intensity_flop_per_byte: float | None,
                            precision: str) -> tuple[Any, str]:
        """Its ``steady_power`` for ``platform``; BackendUnavailableError when it has none."""
        if self.steady_power is None:
            raise BackendUnavailableError(f"backend '{self.name}' plays no platform's power")
        return cast("tuple[Any, str]", _resolve(self.steady_power)(platform, intensity_flop_per_byte, precision))

    def vendors(self) -> tuple[Any, ...]:
        """The GPU vendors (:class:`~archline.bench.controls.gpu.GpuVendor`) whose controls its device may use, in
        the order tried: its ``control_vendors``, else every one declared."""
        return tuple(_resolve(v) for v in self.control_vendors) if self.control_vendors else gpu_vendors()


def _resolve(ref: str) -> Any:
    """The object a ``"module:attr"`` names (the module imported now)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@functools.cache
def backends() -> dict[str, BackendInfo]:
    """Every back end by name: the built-in ones, then the plugins (a plugin may not replace a built-in)."""
    out: dict[str, BackendInfo] = {}
    for module in BUILTIN:
        info = importlib.import_module(module).BACKEND
        out[info.name] = info
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            info = ep.load()
        except Exception as e:  # a third party's import error: named and left out, archline still runs
            _warn(f"back-end plugin '{ep.name}' ({ep.value}) cannot be loaded: {type(e).__name__}: {e}")
            continue
        if not isinstance(info, BackendInfo):
            _warn(f"back-end plugin '{ep.name}' ({ep.value}) is a {type(info).__name__}, not a BackendInfo")
        elif info.name in out:
            _warn(f"back-end plugin '{ep.name}' ({ep.value}) names back end '{info.name}', which is already known")
        else:
            out[info.name] = info
    return out


def gpu_vendors() -> tuple[Any, ...]:
    """Every GPU vendor some back end declares in ``control_vendors``, once each, in the registry's order."""
    refs = dict.fromkeys(v for info in backends().values() for v in info.control_vendors)
    return tuple(_resolve(v) for v in refs)


def _warn(message: str) -> None:
    log.warning("archline: warning: %s; it is left out", message)


def info_of(name: str) -> BackendInfo:
    known = backends()
    if name not in known:
        raise BackendUnavailableError(f"unknown backend '{name}' (known: {', '.join(known)})")
    return known[name]


def names(*, emulated: bool | None = None) -> tuple[str, ...]:
    """Every back end's name; ``emulated=False``: those a profile may name (not chosen by --emulate only)."""
    return tuple(n for n, i in backends().items() if emulated is None or i.needs_emulate == emulated)


def emulator() -> BackendInfo:
    """The back end ``--emulate`` runs (the first that needs it, in the registry's order)."""
    found = next((i for i in backends().values() if i.needs_emulate), None)
    if found is None:
        raise BackendUnavailableError("no back end runs --emulate")
    return found


def of_kind(kind: str) -> tuple[str, ...]:
    """The back ends that measure ``kind`` (cpu, gpu, model), in the registry's order."""
    return tuple(n for n, i in backends().items() if i.device_kind == kind and not i.needs_emulate)


def taking(option: str) -> tuple[str, ...]:
    """The back ends that take run option ``option`` (isa, threads, cpus, store)."""
    return tuple(n for n, i in backends().items() if option in i.options)


def check_name(name: str | None, *, emulated: bool = True) -> str | None:
    """A back-end name as an option or a profile gives it (pydantic validators call this): known, or the error a
    Literal of the known names gives (``emulated=False``: those a profile's [bench] backend may name)."""
    from pydantic_core import PydanticCustomError

    known = names() if emulated else names(emulated=False)
    if name is not None and name not in known:
        raise PydanticCustomError("literal_error", "Input should be {expected}",
                                  {"expected": " or ".join(f"'{n}'" for n in known)})
    return name


def takers(option: str) -> str:
    """Which back ends take ``option``, for a message: 'the cpu_asm back end' (or '... or ... back ends')."""
    who = taking(option)
    return f"the {' or '.join(who)} back end{'s' if len(who) > 1 else ''}" if who else "no back end"


def get_backend(name: str, **options: Any) -> Backend:
    return info_of(name).open(**options)


def availability() -> dict[str, tuple[bool, str]]:
    """Every back end with (usable, reason)."""
    out: dict[str, tuple[bool, str]] = {}
    for name in backends():
        try:
            out[name] = get_backend(name).availability()
        except BackendUnavailableError as e:
            out[name] = (False, str(e))
    return out
