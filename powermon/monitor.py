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

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.record.meters import Meter
from archline.powermon.record.recorder import Recorder
from archline.powermon.record.windows import WindowHook

#: the public name of the one running recorder (docs/api.md)
Monitor = Recorder


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
    from archline.powermon.spec import MeterSpec

    opened: list[Meter] = []
    for m in meters:
        if not isinstance(m, MeterSpec):
            opened.append(m)
            continue
        from archline.powermon.spec import open_meter

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
