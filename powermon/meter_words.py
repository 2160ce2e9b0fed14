"""``KIND:ARG``, the words ``archline meter record --meter`` takes, as a recorder meter: made as the kind the word
names declares (powermon/kinds.py: its ``record_words`` and ``record``); the byte-stream kinds' own ``record``
(:func:`record_stream_meter`) and an emulator URL's ``?speed=`` (:func:`url_speed`). The recording itself is
:mod:`archline.powermon.recording`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from archline.formats.meters.versions import emulator_speed_problem, max_emulator_speed
from archline.powermon.errors import MeterError


def meter_from_spec(spec: str, channels: Sequence[int] | None = None, rate_hz: float | None = None,
                    raw_path: str | Path | None = None) -> Any:
    """``KIND:ARG`` as a recorder meter, made as the kind the word names declares (powermon/kinds.py: its
    ``record_words`` and ``record``): ``powermon2:PORT``, ``powersensor3:PORT``, ``pmd:PORT`` (an emulator URL such
    as ``pmd://default`` alone is its kind's), ``emulated[:SPEED]``, ``rapl[:ZONE,...]``, ``nvml[:INDEX]``,
    ``redfish:URL``, ``ipmi:URL``, and a plugin's kinds. ``rate_hz`` None: the meter's own."""
    from archline.powermon import kinds

    bad = [c for c in channels or () if c < 0]
    if bad:     # caught here: a channel spec built from a negative number is a pydantic error, not one line
        raise MeterError(f"--channels takes channel numbers of 0 or more, got {bad[0]}")
    word, _, arg = spec.partition(":")
    k = kinds.by_word(word)
    if k is not None and arg.startswith("//") and k.scheme == word:     # a bare emulator URL: SCHEME://NAME
        word, arg = k.name, spec
    if k is None:
        usage = ", ".join(w.rstrip(":") + (":..." if w.endswith(":") else "[:...]")
                          for kk in kinds.kinds() for w, _ in kk.record_words)
        raise MeterError(f"unknown meter {spec!r} (use {usage})")
    from archline.powermon.record_entry import default_record

    if k.record is None:        # opened as a profile's entry: open_meter guards a plugin's hooks
        return default_record(word, arg, channels, rate_hz, None if raw_path is None else Path(raw_path))
    from archline.powermon.guarded import call_opener, guard_meter

    meter = call_opener(k, "record", k.record, word, arg, channels, rate_hz,
                        None if raw_path is None else Path(raw_path))
    return guard_meter(k, meter, "record")


def record_stream_meter(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
                        raw_path: Path | None, *, port_hint: str) -> Any:
    """A byte-stream meter (PowerSensor3, PMD-USB) on its port or its emulator URL, at ``rate_hz`` frames per
    second or the kind's own; the URL's ``?rate=`` and --rate must agree; an emulator is refused at a speed its pty
    cannot carry."""
    import importlib

    from archline.powermon import kinds
    from archline.powermon.spec import channels_spec, open_meter
    from archline.powermon.stream.meter import url_rate_hz

    kind = kinds.get(word)
    if not arg:
        raise MeterError(f"--meter {word} needs a port: {word}:{port_hint} or {kind.emulator_url} (emulated)")
    url_rate = url_rate_hz(arg, word)
    if rate_hz is not None and url_rate is not None and not math.isclose(rate_hz, url_rate, rel_tol=1e-9):
        # two rates asked for: neither may win silently
        raise MeterError(f"--rate {rate_hz:g} and the URL's rate={url_rate:g} ({word}:{arg}) disagree: give the rate "
                         "once (drop --rate or the URL's ?rate=)")
    extra = {} if rate_hz is None else {"rate_hz": rate_hz}   # --rate: frames per second, else the kind's
    mspec = channels_spec(word, word, channels, port=arg, **extra)
    speed = url_speed(arg)
    if "://" in arg and kind.module:     # an emulator: refused at a speed the pty cannot carry (bench run's rule)
        per_s = importlib.import_module(kind.module).records_per_device_s(mspec)
        # real time is what the hardware streams and always allowed; faster must fit what the pty carries
        problem = emulator_speed_problem(speed, per_s) if speed > 1 else None
        if problem is not None:
            raise MeterError(f"--meter {arg}: {problem}; lower ?speed= to "
                             f"{max(1, max_emulator_speed(per_s))} or less (or ?rate=)")
    return open_meter(mspec, speed=speed, raw_path=raw_path)


def stream_recorder(port_hint: str) -> Callable[..., Any]:
    """``meter record`` for a serial stream meter (PowerSensor3, PMD-USB; their kind declarations' ``record``),
    ``port_hint`` named when no port is given."""
    def record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
               raw_path: Path | None) -> Any:
        return record_stream_meter(word, arg, channels, rate_hz, raw_path, port_hint=port_hint)
    return record


def url_speed(port: str) -> float:
    """The time compression an in-process emulator URL asks for (``powermon://default?speed=4``), else 1."""
    from archline.powermon import kinds

    scheme = port.partition("://")[0]
    if "://" not in port or kinds.by_scheme(scheme) is None:
        return 1.0
    from archline.powermon.emulator.serial_base import url_options

    try:
        speed = float(url_options(port).get("speed", "1"))
    except ValueError as e:
        why = str(e) if "given" in str(e) else "speed must be a number"
        raise MeterError(f"bad {scheme}:// URL {port!r}: {why}") from None
    if not (math.isfinite(speed) and speed > 0):
        raise MeterError(f"bad {scheme}:// URL {port!r}: speed must be positive")
    return speed
