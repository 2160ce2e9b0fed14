"""The meters ``archline measure`` reads: ``--meter``'s, the emulated one, or every meter of the profile that
opens here and measures a device no meter before it measures (see :func:`open_meters`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archline.bench.measure.options import MeasureOptions
from archline.powermon.errors import MeterError
from archline.powermon.monitor import Monitor, open_windows


def _unwrapped(e: MeterError, spec: Any) -> str:
    text = str(e)
    head = f"meter '{spec.name}' ({spec.kind}) of platform "
    return text.split(" cannot be opened: ", 1)[1] if text.startswith(head) and " cannot be opened: " in text \
        else text


def open_meters(prof: Any, opts: MeasureOptions, run_dir: Path | None) -> tuple[Monitor, list[str]]:
    """The monitor: ``--meter``'s meter; under ``--emulate`` one emulated meter (the emulated device is one power
    schedule: the profile's PowerMon 2, else its first meter with an emulator, else a default PowerMon 2 where it
    has no [[meters]], with a note; its port URL's faults played and noted, as in bench run); else every meter of
    the profile that opens here, in profile order, except one that measures a device a meter before it already
    measures (the energies of a monitor's meters are added: it would be counted twice). A meter that cannot be
    opened here is left out with a warning; none at all is the first one's error."""
    from archline.bench.monitor import open_monitor

    notes: list[str] = []

    def one(meter: str | None) -> Monitor:
        return open_monitor(prof, emulate=opts.emulate, meter=meter, raw_dir=run_dir, busy_w=opts.busy_w,
                            idle_w=opts.idle_w, notes=notes if opts.emulate else None)

    if opts.emulate or opts.meter is not None or len(prof.meters) <= 1:
        return one(opts.meter), notes
    meters: list[Any] = []
    taken: list[Any] = []
    first_error: MeterError | None = None
    for spec in prof.meters:
        devs = spec.measured_devices()
        same = next((t.name for t in taken if spec.same_power(t)), None)
        if same is not None:
            notes.append(f"meter '{spec.name}' left out: it measures {', '.join(sorted(devs))} as meter '{same}' "
                         f"does, and the meters' energies are added (--meter {spec.name} measures with it instead)")
            continue
        try:
            with open_monitor(prof, meter=spec.name):    # a serial meter finds out it is missing when started
                pass
            meters += one(spec.name).meters
        except MeterError as e:
            first_error = first_error or e
            notes.append(f"meter '{spec.name}' ({spec.kind}) left out: it cannot be opened here: {_unwrapped(e, spec)}")
            continue
        taken.append(spec)
    if not meters:
        assert first_error is not None
        raise first_error
    return open_windows(meters, settle_timeout_s=5.0), notes


