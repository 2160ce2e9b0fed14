"""The public measuring API (docs/api.md): ``archline.Monitor`` is powermon's one running recorder
(:class:`~archline.powermon.record.recorder.Recorder`, whose windows return a
:class:`~archline.powermon.record.windows.Measurement`), and :func:`open_windows` is the one way a command's
meters become a recorder with windows: ``bench run``'s session, ``archline measure``, ``archline.open_monitor``
(and the Kernel Tuner observer through it), ``meter probe``/``meter calibrate`` and ``meter record`` call it.

    with Monitor([meter]) as mon:                 # or archline.open_monitor("gtx580", emulate=True)
        mon.begin_window("step")
        work()
        m = mon.end_window("step")                # m.time_s, m.energy_j, m.energy_err_j, m.device_energy_j
        with mon.window("solve") as w:            # a context manager: w.energy_j once the block has ended
            solve()

        @mon.measure()                            # a decorator: each call is one window (measurements kept)
        def step(): ...
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archline.common.outputs import show
from archline.powermon.errors import MeterError
from archline.powermon.record.meters import Meter
from archline.powermon.record.recorder import Recorder
from archline.powermon.record.windows import WindowHook

#: the public name of the one running recorder (docs/api.md)
Monitor = Recorder

#: the names the meters give their raw captures and sidecars in a ``raw_dir`` (powermon-0000.raw, KIND-0000.raw)
CAPTURE_NAMES = ("*.raw", "*.raw.json", "*.raw.bin", "*.raw.bin.json")


def check_raw_dir(raw_dir: str | Path) -> Path:
    """A ``raw_dir`` the public API may write captures into: a non-empty name (never the current directory by
    accident), a directory or nothing yet (made when the first capture is kept), and no capture of another run in
    it (a capture is never overwritten: name a new directory per monitor). MeterError names it otherwise."""
    if not os.fspath(raw_dir).strip():
        raise MeterError("raw_dir is empty: name the directory for the raw captures (an empty name is refused, "
                         "never taken as the current directory), or leave raw_dir=None to keep none")
    d = Path(raw_dir)
    if d.exists() and not d.is_dir():
        raise MeterError(f"raw_dir {show(d)} is not a directory: name a directory (new or empty) for the raw captures")
    if d.is_dir():
        old = sorted(p.name for pat in CAPTURE_NAMES for p in d.glob(pat))
        if old:
            raise MeterError(f"raw_dir {show(d)} already holds raw captures ({', '.join(old[:3])}"
                             f"{', ...' if len(old) > 3 else ''}): a capture is never overwritten; name a new or "
                             "empty directory")
    return d


def open_windows(meters: Sequence[Any] = (), *, reason: str = "", raw_dir: str | Path | None = None,
                 cannot_open: Callable[[Any, MeterError], BaseException] | None = None,
                 hooks: Sequence[WindowHook] = (), closers: Sequence[Callable[[], None]] = (),
                 settle_timeout_s: float = 3.0, keep_regions: bool = True,
                 clock: Callable[[], float] = time.monotonic, start: bool = False,
                 labels: Mapping[str, str] | None = None) -> Recorder:
    """The meters as one recorder with windows. ``meters``: recorder meters, or a profile's ``[[meters]]``
    entries (:class:`~archline.powermon.spec.MeterSpec`), opened here in order (``raw_dir``: where a capture
    goes); ``cannot_open(entry, error)`` gives the error to raise for an entry that cannot be opened (else the
    meter's own). None at all: the null meter with ``reason``. ``start``: the meters are started now; a meter that
    cannot start is named by ``labels[its name]`` when given (``reference meter 'pm' (powermon2) of platform
    'P': ...``)."""
    from archline.powermon.spec import MeterSpec, open_meter

    opened: list[Meter] = []
    for m in meters:
        if not isinstance(m, MeterSpec):
            opened.append(m)
            continue
        try:
            opened.append(open_meter(m, raw_dir=raw_dir))
        except MeterError as e:
            if cannot_open is None:
                raise
            raise cannot_open(m, e) from None
    rec = Recorder(opened, clock=clock, settle_timeout_s=settle_timeout_s, keep_regions=keep_regions, reason=reason,
                   hooks=hooks, closers=closers)
    if start:
        try:
            rec.start()
        except MeterError as e:
            label = (labels or {}).get(rec.failed_meter or "")
            if label is not None:
                e.args = (f"{label}: {e}", *e.args[1:])
            raise
    return rec
