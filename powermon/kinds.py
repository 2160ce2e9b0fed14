"""The meter-kind registry: every kind a profile's ``[[meters]]`` (or ``meter record --meter``) may name, each
declared once, in ONE record (:class:`MeterKind`) in its own folder's ``kind.py``: its name, its spec rules, how
to open, emulate, list, complete, record, decode and bound it, and its ranges. Every other module reads this
registry instead of spelling a kind (docs/design.md, "How to add a meter kind").

Third parties add kinds through the entry-point group ``archline.meters``: each entry point loads to a
:class:`MeterKind` (or a sequence of them, or a callable returning either). Discovery runs once per process
(cached); a plugin that fails to load, or declares something else, is one warning line naming it and is left
out, never a crash, and never replaces a kind archline declares.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.common.plugins import load_plugins

#: the entry-point group third-party meter kinds are declared in
ENTRY_POINT_GROUP = "archline.meters"

#: archline's own declaration modules (each has ``KINDS``), in the order meter list and the docs show them
BUILTIN_MODULES = (
    "archline.powermon.powermon2.kind",
    "archline.powermon.counters.kind",
    "archline.powermon.powersensor3.kind",
    "archline.powermon.pmd.kind",
    "archline.powermon.bmc.kind",
)

#: ``record(word, arg, channels, rate_hz, raw_path) -> meter``: ``meter record --meter WORD:ARG``
RecordFn = Callable[[str, str, "Sequence[int] | None", "float | None", "Path | None"], Any]


@dataclass(frozen=True)
class PtyEmulator:
    """How ``meter emulate --kind NAME`` serves a kind on a pseudo-terminal."""

    #: ``core(power, speed=, seed=, rate_hz=)``: the emulator core the pty serves (``rate_hz`` None: its default)
    core: Callable[..., Any]
    #: its fastest stream at ``--rate`` (None: its default), in the pty's 4-byte records per second
    records_per_s: Callable[[float | None], float]
    takes_rate: bool = False                    #: ``--rate`` sets its frames per second (its core has ``rate_hz``)


@dataclass(frozen=True)
class MeterKind:
    """One meter kind, declared once. Only ``name`` and ``title`` are required; a plugin usually gives ``module``
    (with ``open_from_spec`` and, for ``--emulate``, ``emulate_from_spec``) and ``whole_device``."""

    name: str                                   #: the ``kind`` of a ``[[meters]]`` entry
    title: str                                  #: how people name it ("PowerMon 2")
    #: the driver module: ``open_from_spec(spec, raw_dir=, **kw)``, optionally ``emulate_from_spec``,
    #: ``list_meters()``, ``records_per_device_s(spec)``, ``decode_capture(raw, channels)``
    module: str | None = None
    #: opens a meter where the module has no ``open_from_spec``: ``opener(spec, raw_dir=, powercap_root=, nvml=,
    #: **kw)``
    opener: Callable[..., Any] | None = None
    #: ``meter record --meter`` words and their help (shell completion offers them): ("powermon2:", "...")
    record_words: tuple[tuple[str, str], ...] = ()
    #: turns ``WORD:ARG`` into a meter; None (with ``record_words``):
    #: :func:`archline.powermon.record_entry.default_record`
    record: RecordFn | None = None
    #: ``meter list`` rows of this kind, ``lister(**options)`` (options: a test's roots and layers, ignore the
    #: others); None: the module's ``list_meters()``, else a row saying to configure it in a profile
    lister: Callable[..., list[dict[str, Any]]] | None = None
    absent: str = ""                            #: why no command gives an absent one, in words (meter list)
    emulator_url: str | None = None             #: a URL that serves its emulator (meter list shows it)
    emulator_note: str = ""                     #: what the emulator's rate is beside the real device's
    usb_ids: tuple[tuple[int, int], ...] = ()   #: USB (vendor, product) ids a port of this kind may have
    channel_ids: range | None = None            #: the channel ids it has (None: any)
    voltage_limit_v: float | None = None        #: the highest voltage a channel reads
    whole_device: str | None = None             #: reads one whole-device value: the device its channel 0 feeds
    device: str | None = None                   #: the device an on-board sensor of this kind measures
    serial: bool = False                        #: a byte stream on a serial port (``port`` required)
    scheme: str | None = None                   #: its emulator URL's scheme (``powermon``, ``pmd``)
    bmc: bool = False                           #: a node's BMC, read at the BMC's own update period
    counter: bool = False                       #: a cumulative energy counter, polled
    reference: bool = False                     #: measures the rails themselves (a reference for a probe)
    reads_negative_a: bool = False              #: its current codes go below 0 A (a bipolar sensor)
    #: ``frame_share(bytes, min_frames)``: the share of a capture's bytes that are its frames (0..1), how a capture
    #: without its sidecar is recognised (powermon/stream/sniff.py)
    frame_share: Callable[[Any, int], float] | None = None
    captures: bool = False                      #: ``meter record`` keeps a raw byte capture beside the trace
    #: the kind the emulators play when nothing names one (a profile without ``[[meters]]`` under ``--emulate``,
    #: ``meter emulate --platform``'s rails); the first kind that says so (:func:`default_emulated`)
    emulated_by_default: bool = False
    #: ``meter emulate --kind`` serves it on a pty (:func:`pty_kinds`); None: it does not
    pty_emulator: PtyEmulator | None = None
    #: ``url_faults(url)``: the faults its emulator URL asks for, parsed as opening the URL parses them but without
    #: building the emulator (bench's ``--emulate`` plays them on its own device); None: a stream kind's URL, parsed
    #: by powermon/stream/urlserial.py
    url_faults: Callable[[str], Any] | None = None
    #: ``detect(powercap_root=, **roots)``: finds it on this machine with no configuration, giving (the keys of its
    #: ``[[meters]]`` entry, or None where it is not there, and what was found or why not, in words); the
    #: ``localhost`` profile's meter is the first kind found (:func:`detected`)
    detect: Callable[..., tuple[dict[str, Any] | None, str]] | None = None
    #: the module whose ``decode_file`` and ``decode_to_file`` decode its raw captures that are not a byte stream's
    #: (``meter decode`` of a capture without an ``archline.stream.raw/1`` sidecar)
    decoder: str | None = None
    #: what its samples sidecar keeps for the resolution bound (``meter integrate``); None: no bound of its own
    resolution: str | None = None
    #: ``resolution_w(samples, info)``: each sample's resolution bound (W) from what its samples sidecar keeps
    #: (``resolution``), or None where the sidecar does not say; a kind whose ``resolution`` is "ADC steps
    #: (resolution)" needs none (powermon/record/resolution.py reads those steps)
    resolution_w: Callable[[Any, dict[str, Any]], Any] | None = None
    #: the ``[[meters]]`` keys only some kinds take (powermon/spec.py: RESTRICTED_KEYS) that this kind takes
    own_keys: frozenset[str] = frozenset()
    #: the kind's own rules on a validated entry: raises ValueError (the message names the key)
    check: Callable[[Any], None] | None = None
    origin: str = "archline"                    #: who declared it (a plugin: its distribution and entry point)


def protocol_frame_share(module: str) -> Callable[[Any, int], float]:
    """A kind's ``frame_share`` from its protocol module's ``frame_share``, imported when used."""
    def share(data: Any, min_frames: int) -> float:
        return float(importlib.import_module(module).frame_share(data, min_frames))
    return share


#: warnings are not printed (a shell's Tab press: :func:`hush`); the commands themselves say them
_HUSHED = {"on": False}


def hush() -> None:
    """Print no plugin warnings in this process (shell completion runs on every Tab press: a warning there would be
    printed into the user's command line; the command, once run, says it)."""
    _HUSHED["on"] = True


def _warn(text: str) -> None:
    if not _HUSHED["on"]:
        print(f"archline: warning: {' '.join(text.split())}", file=sys.stderr)    # one line, whatever it holds


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _as_kinds(obj: Any) -> tuple[list[MeterKind], list[str]]:
    """The kinds a plugin's entry point declares, and what else it declares (type names): a sequence with one bad
    element keeps its good kinds."""
    if callable(obj) and not isinstance(obj, MeterKind):
        obj = obj()
    items = [obj] if isinstance(obj, MeterKind) else list(obj) if isinstance(obj, (list, tuple)) else [obj]
    return [o for o in items if isinstance(o, MeterKind)], [type(o).__name__ for o in items
                                                            if not isinstance(o, MeterKind)]


def _plugins(taken: dict[str, str]) -> list[MeterKind]:
    """The plugins' kinds; ``taken``: the names declared so far -> who declared them."""
    out: list[MeterKind] = []
    for ep in load_plugins(ENTRY_POINT_GROUP, _as_kinds, by_name=True):
        who = f"meter plugin {ep.name!r} ({ep.dist}, {ep.value})"
        if ep.error is not None:  # a third party's bug (sys.exit too): one line, archline goes on
            _warn(f"{who} cannot be loaded and is left out: {type(ep.error).__name__}: {ep.error}")
            continue
        if ep.printed:
            _warn(f"{who} printed {len(ep.printed)} character(s) on stdout when loaded; dropped (stdout is "
                  "archline's)")
        found, bad = ep.obj
        for b in bad:
            _warn(f"{who} declares {_article(b)} {b}, not an archline.powermon.kinds.MeterKind; left out")
        for k in found:
            if not isinstance(k.name, str) or not k.name.isidentifier():
                _warn(f"{who}: meter kind {k.name!r} is not a name (letters, digits, _); left out")
                continue
            if k.name in taken:
                _warn(f"{who}: meter kind {k.name!r} is already declared by {taken[k.name]}; left out")
                continue
            origin = f"{ep.dist} ({ep.name})"
            taken[k.name] = origin
            out.append(k if k.origin != "archline" else _with_origin(k, origin))
    return out


def _with_origin(k: MeterKind, origin: str) -> MeterKind:
    from dataclasses import replace

    return replace(k, origin=origin)


@functools.cache
def builtin_kinds() -> tuple[MeterKind, ...]:
    """archline's own kinds, in :data:`BUILTIN_MODULES` order (no plugin is discovered: nothing to warn about)."""
    return tuple(k for mod in BUILTIN_MODULES for k in importlib.import_module(mod).KINDS)


@functools.cache
def _registry() -> dict[str, MeterKind]:
    reg: dict[str, MeterKind] = {k.name: k for k in builtin_kinds()}
    for k in _plugins({name: "archline" for name in reg}):
        reg[k.name] = k
    return reg


def kinds() -> tuple[MeterKind, ...]:
    """Every meter kind: archline's own, then the plugins' (by entry-point name)."""
    return tuple(_registry().values())


def names() -> tuple[str, ...]:
    return tuple(_registry())


def find(name: str) -> MeterKind | None:
    return _registry().get(name)


def get(name: str) -> MeterKind:
    """The kind named ``name``; KeyError naming the kinds there are."""
    k = _registry().get(name)
    if k is None:
        raise KeyError(f"unknown meter kind '{name}' (one of: {', '.join(names())})")
    return k


def where(**flags: Any) -> tuple[str, ...]:
    """The names of the kinds whose fields equal ``flags`` (``where(serial=True)``)."""
    return tuple(k.name for k in kinds() if all(getattr(k, f) == v for f, v in flags.items()))


def pty_kinds() -> tuple[MeterKind, ...]:
    """archline's kinds that ``meter emulate`` serves on a pty, in the registry's order (the first is its default)."""
    return tuple(k for k in builtin_kinds() if k.pty_emulator is not None)


def detected(**roots: Any) -> tuple[MeterKind | None, dict[str, Any], str]:
    """The first of archline's kinds found on this machine with no configuration (its ``detect``): (the kind, its
    entry's keys, what was found); (None, {}, why not) where none is."""
    why: list[str] = []
    for k in builtin_kinds():
        if k.detect is not None:
            keys, said = k.detect(**roots)
            if keys is not None:
                return k, keys, said
            why.append(said)
    return None, {}, "; ".join(why)


def default_emulated() -> MeterKind:
    """The kind the emulators play when nothing names one (its ``emulated_by_default``)."""
    found = next((k for k in kinds() if k.emulated_by_default), None)
    if found is None:
        raise KeyError("no meter kind is emulated by default")
    return found


def by_word(word: str) -> MeterKind | None:
    """The kind a ``meter record --meter WORD:...`` word names (its name or one of its ``record_words``)."""
    return next((k for k in kinds() if any(w.rstrip(":") == word for w, _ in k.record_words)), None) \
        or by_scheme(word)


def by_scheme(scheme: str) -> MeterKind | None:
    """The kind whose emulator URL has ``scheme``."""
    return next((k for k in kinds() if k.scheme is not None and k.scheme == scheme), None)


def clear_cache() -> None:
    """Forget the discovered kinds (a test that installs a plugin in-process)."""
    _registry.cache_clear()
