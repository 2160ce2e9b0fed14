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
from typing import Any, Literal, cast

from archline.bench.errors import BackendFaultError, BackendUnavailableError
from archline.bench.kernels import KERNELS, PRECISIONS, Backend
from archline.common.plugins import FAULTS, load_plugins, one_line

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
        """The back end, opened with ``options``. A plugin's is never trusted: it comes wrapped in
        :class:`~archline.bench.guarded.GuardedBackend` (its faults one line, its rows the registered name), and an
        opener that cannot be imported or fails is BackendFaultError (exit 4: a missing dependency is a reason)."""
        origin = plugin_origin(self)
        if origin is None:
            return self._open(**options)
        from archline.bench.guarded import GuardedBackend

        try:
            inner = self._open(**options)
        except FAULTS as e:
            why = str(e) if isinstance(e, BackendUnavailableError) else f"{type(e).__name__}: {one_line(e)}"
            raise BackendFaultError(f"backend '{self.name}' ({origin}) cannot be opened: {why}") from None
        guarded = GuardedBackend(self.name, inner, origin, kernels=self.kernels, precisions=self.precisions)
        return cast("Backend", guarded)

    def _open(self, **options: Any) -> Backend:
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
        origin = plugin_origin(self)
        if origin is None:
            return str(_resolve(self.version_line)())
        try:    # a plugin's line: one line, and its fault is said there, never the end of --version
            return " ".join(str(_resolve(self.version_line)()).split())
        except FAULTS as e:
            return f"{self.name} ({origin}): no version line ({type(e).__name__}: {one_line(e)})"

    def steady_load(self, backend: Backend, **options: Any) -> tuple[Any, dict[str, Any]]:
        """This back end's ``step_load`` on ``backend`` (one it opened); BackendUnavailableError when it has none."""
        if self.step_load is None:
            raise BackendUnavailableError(f"backend '{self.name}' has no CPU step load")
        backend = getattr(backend, "inner", backend)    # a plugin's own step load gets its own object
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


#: the plugins' BackendInfo (by id) -> where each came from, "plugin <distribution>"; built-ins are absent
_PLUGIN_ORIGINS: dict[int, tuple[BackendInfo, str]] = {}
#: the run options a back end may declare it takes
OPTIONS = frozenset({"isa", "threads", "cpus", "store"})
DEVICE_KINDS = ("cpu", "gpu", "model")


@functools.cache
def backends() -> dict[str, BackendInfo]:
    """Every back end by name: the built-in ones, then the plugins (a plugin may not replace a built-in, nor take a
    name that is not one word, a device kind or precision archline does not know, or a run option no back end
    takes: each is one warning, and the plugin is left out)."""
    out: dict[str, BackendInfo] = {}
    _PLUGIN_ORIGINS.clear()
    for module in BUILTIN:
        info = importlib.import_module(module).BACKEND
        out[info.name] = info
    for ep in load_plugins(ENTRY_POINT_GROUP):
        who = f"back-end plugin {_quoted(ep.name)} ({ep.dist}, {ep.value})"
        if ep.error is not None:  # a third party's import error (sys.exit too): named and left out
            _warn(f"{who} cannot be loaded: {type(ep.error).__name__}: {_quoted(str(ep.error), quote='')}")
        if ep.printed:
            log.warning(f"archline: warning: {who} printed {len(ep.printed)} character(s) on stdout "
                        "when loaded; dropped (stdout is archline's)")
        if ep.error is not None:
            continue
        info = ep.obj
        why = _refused(info, out)
        if why:
            _warn(f"{who} {why}")
        else:
            out[info.name] = info
            _PLUGIN_ORIGINS[id(info)] = (info, f"plugin {ep.dist}")
    return out


def _refused(info: Any, known: dict[str, BackendInfo]) -> str | None:
    """Why a plugin's declaration is left out (None: it is taken)."""
    if not isinstance(info, BackendInfo):
        return f"is a {type(info).__name__}, not a BackendInfo"
    if not isinstance(info.name, str) or not info.name.isidentifier():
        return f"names back end {_quoted(str(info.name))}, which is not a name (letters, digits, _)"
    if info.name in known:
        return f"names back end '{info.name}', which is already known"
    if info.device_kind not in DEVICE_KINDS:
        return f"declares device_kind {_quoted(str(info.device_kind))}, not one of {', '.join(DEVICE_KINDS)}"
    for what, given, allowed in (("precision", info.precisions, PRECISIONS), ("option", info.options, OPTIONS)):
        bad = sorted(str(x) for x in given if x not in allowed)
        if bad:
            return f"declares {what} {_quoted(bad[0])}, not one of {', '.join(sorted(allowed))}"
    return None


def _quoted(text: str, quote: str = "'") -> str:
    """``text`` quoted for one warning line: a newline or other control character is escaped, never printed."""
    safe = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return f"{quote}{safe}{quote}"


def plugin_origin(info: BackendInfo) -> str | None:
    """Where a plugin back end came from ("plugin <distribution>"); None for a built-in one."""
    backends()
    found = _PLUGIN_ORIGINS.get(id(info))
    return found[1] if found is not None and found[0] is info else None


def is_builtin(name: str) -> bool:
    """A back end of archline's own (a folder in :data:`BUILTIN`), not a plugin's."""
    info = backends().get(name)
    return info is not None and plugin_origin(info) is None


def gpu_vendors() -> tuple[Any, ...]:
    """Every GPU vendor some back end declares in ``control_vendors``, once each, in the registry's order."""
    refs: dict[str, str | None] = {}
    for info in backends().values():
        for v in info.control_vendors:
            refs.setdefault(v, plugin_origin(info))
    out = []
    for ref, origin in refs.items():
        if origin is None:
            out.append(_resolve(ref))
            continue
        try:    # a plugin's vendor that cannot be imported leaves the others' controls working
            out.append(_resolve(ref))
        except FAULTS as e:
            _warn(f"GPU vendor {ref} of {origin} cannot be loaded: {type(e).__name__}: {one_line(e)}")
    return tuple(out)


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
