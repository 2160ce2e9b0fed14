"""The faults an emulator URL in a profile's meter ``port`` asks for (``powermon://default?stall=0.3:0.5``,
``powersensor3://default?drop=100``, ``pmd://default?disconnect=2``), for ``bench run``/``measure --emulate``.

Under ``--emulate`` the meter plays the emulated device's power, not the URL's registered device, so the URL is not
opened as it is: its faults are read here, with the same option parsers ``meter record`` opens it with, and handed
to the kind's emulator, so a fault shows up as lost samples or a failed point as it does in ``meter record``
(``bench run --emulate`` and ``measure --emulate`` alike, through bench/emulated/meters.emulate_entry). The URL's
``speed`` and ``seed`` give way to ``--time-compression`` (measure: real time) and the run's seed (the device's
clock and noise are bench's); a note says so. ``rate`` is the stream kinds' own (their ``rate_of`` reads it).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from archline.bench.emulated.model import EmulationError

#: URL options that bench's own options replace under --emulate
REPLACED = {"speed": "--time-compression", "seed": "the run's own seed"}


def port_faults(spec: Any, replaced: dict[str, str] | None = None) -> tuple[Any | None, list[str]]:
    """(faults of ``spec.port``'s emulator URL or None when it is not one or asks for none, notes). A bad option
    is an :class:`EmulationError` (exit 2) naming the meter and the option. ``replaced``: the URL options the
    caller's own settings replace, and by what (default :data:`REPLACED`, bench's)."""
    replaced = REPLACED if replaced is None else replaced
    from archline.powermon import kinds

    kind = kinds.find(spec.kind)
    port = getattr(spec, "port", None) or ""
    if kind is None or kind.scheme is None or not port.startswith(f"{kind.scheme}://"):   # not its emulator's URL
        return None, []
    given = {k for k in parse_qs(urlsplit(port).query, keep_blank_values=True)}
    notes = [f"meter '{spec.name}': the port's {k}= is not used under --emulate ({replaced[k]} is used)"
             for k in sorted(given & replaced.keys())]
    try:
        faults = kind.url_faults(port) if kind.url_faults is not None else _stream_faults(port, kind.scheme)
    except Exception as e:   # SerialException / ValueError: the option and its form, one line
        raise EmulationError(f"meter '{spec.name}' port {port!r}: {e}") from None
    if not faults.any:
        return None, notes
    return faults, [*notes, f"meter '{spec.name}': the port's faults are played ({_describe(faults)})"]


def _stream_faults(port: str, scheme: str) -> Any:
    from archline.powermon.stream.urlserial import parse_url

    return parse_url(port, scheme, 1.0)[1]


def _describe(faults: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in vars(faults).items() if v not in ((), 0, 0.0, None, False))
