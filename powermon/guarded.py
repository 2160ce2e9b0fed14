"""A plugin meter kind, never trusted (issue 37 item 2): every call archline makes into the code of a third party's
``archline.meters`` kind goes through here, so that an exception (SystemExit too) or a non-physical value becomes
one line naming the kind and the hook, never a traceback:

* opening (``open_from_spec``, ``opener``, ``emulate_from_spec``, ``record``): a ValueError is the entry's (a bad
  address: a MeterError, exit 2); any other fault is :class:`~archline.powermon.errors.MeterOpenError` (exit 4);
* the meter it opened (:class:`GuardedMeter`): a fault in ``start``, ``stop``, ``mark``, ``region``, ``samples``
  ... and in a counter meter's ``_read`` (on its poll thread too) is a DeviceError (exit 4); so is a read that is
  not one finite number per channel;
* what it measured: a window (``region``) or a trace (``samples``) whose power is NaN, infinite, negative or more
  than any real machine draws (:data:`~archline.formats.costs_units.PLAUSIBLE_MAX_SI`) is a DeviceError (exit 4)
  when it is made, the rule ``meter integrate`` refuses a samples file by (``nonphysical_power``).

A read that blocks is not bounded here (the recorder has no reader thread with a timeout: a read runs on the
meter's own thread or at a window's edge): Ctrl-C or SIGTERM stop it (exit 130). archline's own kinds are not
wrapped: their behaviour is unchanged.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from archline.common.plugins import FAULTS, one_line, short_repr
from archline.formats.costs_units import PLAUSIBLE_MAX_SI
from archline.formats.meters.samples_file import nonphysical_power
from archline.powermon.errors import DeviceError, MeterError, MeterOpenError

T = TypeVar("T")
#: the Meter protocol's methods (powermon/record/meters.py) a plugin's meter must have
METER_METHODS = ("start", "stop", "mark", "wait_until", "region", "samples", "info")
#: its optional methods, guarded when it has them
OPTIONAL_METHODS = ("segment", "live_power_w", "stream_start_s", "host_time_s")


def is_plugin(kind: Any) -> bool:
    """Whether a :class:`~archline.powermon.kinds.MeterKind` is a third party's (not archline's own)."""
    return kind is not None and getattr(kind, "origin", "archline") != "archline"


def who(kind: Any) -> str:
    return f"meter kind '{kind.name}' ({kind.origin})"


def call_opener(kind: Any, hook: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    """``fn(*args, **kw)``, a hook of ``kind`` that opens a meter: a MeterError passes as it is; a ValueError says
    the entry (its address) is bad (exit 2); any other fault of the plugin is MeterOpenError (exit 4). archline's own
    kinds' hooks are called as they are."""
    if not is_plugin(kind):
        return fn(*args, **kw)
    try:
        return fn(*args, **kw)
    except MeterError:
        raise
    except ValueError as e:
        raise MeterError(f"{who(kind)} refused the entry in {hook}: {one_line(e)} (fix the address or the entry)"
                         ) from None
    except FAULTS as e:
        raise MeterOpenError(f"{who(kind)} failed in {hook}: {type(e).__name__}: {one_line(e)}") from None


def guard_meter(kind: Any, meter: Any, hook: str) -> Any:
    """The meter a plugin's ``hook`` gave, checked to be one and guarded (:class:`GuardedMeter`); archline's own
    kinds' meters as they are."""
    if not is_plugin(kind) or isinstance(meter, GuardedMeter):
        return meter
    missing = [m for m in METER_METHODS if not callable(getattr(meter, m, None))]
    name = getattr(meter, "name", None)
    if missing or not isinstance(name, str):
        what = f"without {', '.join(missing)}" if missing else "without a name (str)"
        raise MeterOpenError(f"{who(kind)}: {hook} gave a {type(meter).__name__} {what}, not a meter (the Meter "
                             "protocol: docs/design.md section 7)")
    return GuardedMeter(kind, meter)


class GuardedMeter:
    """A plugin's meter as the recorder drives it: each method call guarded, each window and trace checked to be
    physical; every other attribute is the plugin meter's own."""

    def __init__(self, kind: Any, inner: Any) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_who", f"meter '{inner.name}' of {who(kind)}")
        read = getattr(inner, "_read", None)
        names = getattr(inner, "channel_names", None)
        if callable(read) and isinstance(names, list):  # a CounterMeter: its polls read on their own thread too
            inner._read = self._guarded_read(read, names)

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")
        if inner is None:               # not set up (a copy being made): nothing to forward to
            raise AttributeError(name)
        got = getattr(inner, name)
        if name in METER_METHODS or name in OPTIONAL_METHODS:
            return self._guarded(name, got)
        return got

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def _fault(self, hook: str, e: BaseException) -> DeviceError:
        return DeviceError(f"{self._who} failed in {hook}(): {type(e).__name__}: {one_line(e)}")

    def _guarded(self, hook: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            try:
                got = fn(*args, **kw)
            except MeterError:
                raise
            except FAULTS as e:
                raise self._fault(hook, e) from None
            if hook == "region":
                self._check_region(got)
            elif hook == "samples":
                self._check_samples(got, "its trace")
            return got
        return call

    def _guarded_read(self, read: Callable[[], Any], names: list[str]) -> Callable[[], list[float]]:
        def guarded() -> list[float]:
            try:
                got = read()
            except MeterError:
                raise
            except FAULTS as e:
                raise self._fault("_read", e) from None
            vals = list(got) if isinstance(got, (list, tuple, np.ndarray)) else None
            if vals is None or len(vals) != len(names):
                raise DeviceError(f"{self._who}: _read() gave {short_repr(got)}, not one cumulative energy (J) per "
                                  f"channel ({len(names)})")
            if not all(isinstance(v, numbers.Real) and math.isfinite(v) for v in vals):
                raise DeviceError(f"{self._who}: _read() gave {short_repr(got)}: an energy that is not a finite number "
                                  "(a meter never reads that)")
            return [float(v) for v in vals]
        return guarded

    def _check_region(self, r: Any) -> None:
        """NaN, infinite, negative or implausible energy or power of a window is the meter's fault."""
        values = [("energy_j", getattr(r, "energy_j", None), "J")]
        if getattr(r, "time_s", 0.0) > 0:
            values.append(("mean_power_w", getattr(r, "mean_power_w", None), "W"))
        for ch, c in (getattr(r, "channels", None) or {}).items():
            values.append((f"channel {ch} energy_j", getattr(c, "energy_j", None), "J"))
        for what, v, unit in values:
            if not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise DeviceError(f"{self._who} measured {what}={v!r} over a window: not a finite number (a meter "
                                  "never reports that)")
            if v < 0:
                raise DeviceError(f"{self._who} measured {what}={v:g} {unit} over a window: a meter never reports "
                                  "negative power")
        top_w = PLAUSIBLE_MAX_SI["W"]
        power_w = getattr(r, "mean_power_w", 0.0)
        if getattr(r, "time_s", 0.0) > 0 and abs(power_w) > top_w:
            raise DeviceError(f"{self._who} measured {power_w:g} W over a window: not a real machine's (at most "
                              f"{top_w:g} W)")
        samples = getattr(r, "samples", None)
        if samples is not None:
            self._check_samples(samples, "its window's samples")

    def _check_samples(self, s: Any, what: str) -> None:
        """The rule ``meter integrate`` refuses a samples file by (and no power above a real machine's)."""
        power_w = getattr(s, "power_w", None)
        if power_w is None or not len(power_w):
            return
        valid = getattr(s, "valid", None)
        if valid is not None:               # a failed sensor read is flagged as such, not a value
            s = s.take(np.asarray(valid, bool))
        why = nonphysical_power(s)
        if why is None:
            top_w = PLAUSIBLE_MAX_SI["W"]
            big = np.abs(np.asarray(s.power_w, np.float64)) > top_w
            if big.any():
                i = int(np.argmax(big))
                why = (f"power_w is more than a real machine's ({top_w:g} W) in {int(big.sum())} sample(s) "
                       f"(first: row {i + 1}, {float(s.power_w[i]):g} W)")
        if why is not None:
            raise DeviceError(f"{self._who}: {what}: {why}; a meter never reports that")
