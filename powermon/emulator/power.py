"""Power functions the emulator plays: a caller's callable, or a script of piecewise-constant steps.

A power function maps emulated time since streaming started (``t_s``) to per-channel ``(volts, amps)``.
It may be a plain callable ``f(t_s) -> {channel: (volts_v, amps_a)}`` (or a sequence indexed by channel),
or any object with the vectorised method ``sample(t_s: ndarray, channels) -> (volts (k, n), amps (k, n))``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError

F64 = npt.NDArray[np.float64]
VoltsAmps = Mapping[int, tuple[float, float]] | Sequence[tuple[float, float]]
PowerCallable = Callable[[float], VoltsAmps]


@runtime_checkable
class PowerSource(Protocol):
    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]: ...


def script_channel(c: Any, where: str = "power script") -> int:
    """A power script's channel key (``"0"`` in JSON and TOML, 0 in Python) as a sensor number, or one line naming
    it (a key such as ``"x"`` or ``"1.5"`` is no channel)."""
    text = str(c).strip()
    if isinstance(c, bool) or not (isinstance(c, (int, np.integer)) or text.isdigit()):
        raise MeterError(f"{where} names channel {str(c)!r}: channels are sensor numbers 0-15 (a PowerMon 2 has "
                         "0-15, 0-7 on the stock board; a PowerSensor3 or PMD-USB 0-3)")
    return int(text)


def _script_number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise MeterError(f"{what} must be a number, got {v!r}")
    try:
        return float(v)
    except ValueError:
        raise MeterError(f"{what} must be a number, got {v!r}") from None


class Script:
    """Piecewise-constant power: ``steps`` = [(t_start_s, {channel: (volts_v, amps_a)}), ...] sorted by time.

    A channel missing from a step keeps its previous value (0 V, 0 A before its first mention).
    ``energy_j`` integrates it exactly, which is what the tests compare the meter with.
    """

    def __init__(self, steps: Sequence[tuple[float, Mapping[int, tuple[float, float]]]]) -> None:
        if not steps:
            raise MeterError("a power script needs at least one step")
        times = [float(t) for t, _ in steps]
        if not all(math.isfinite(t) for t in times) or any(b <= a for a, b in itertools.pairwise(times)) or \
                times[0] < 0:
            raise MeterError("power script step times must start at >= 0 and increase")
        chans = sorted({script_channel(c) for _, m in steps for c in m})
        if any(not 0 <= c < 16 for c in chans):
            raise MeterError(f"power script names channel {next(c for c in chans if not 0 <= c < 16)}; a PowerMon 2 "
                             "has sensors 0-15 (channels 0-7 on the stock board)")
        for t, m in steps:
            for c, (v, a) in m.items():
                if not (math.isfinite(float(v)) and math.isfinite(float(a)) and float(v) >= 0 and float(a) >= 0):
                    raise MeterError(f"power script step at {t:g} s, channel {c}: volts and amps must be finite and "
                                     f">= 0, got {v}, {a}")
        self.channels = chans
        self.t_start_s = np.array(times)
        self.volts_v = np.zeros((len(steps), 16))
        self.amps_a = np.zeros((len(steps), 16))
        cur_v = np.zeros(16)
        cur_a = np.zeros(16)
        for k, (_, m) in enumerate(steps):
            for c, (v, a) in m.items():
                cur_v[script_channel(c)] = float(v)
                cur_a[script_channel(c)] = float(a)
            self.volts_v[k] = cur_v
            self.amps_a[k] = cur_a

    @classmethod
    def constant(cls, channels: Mapping[int, tuple[float, float]]) -> Script:
        return cls([(0.0, channels)])

    @classmethod
    def from_obj(cls, obj: Any) -> Script:
        """From ``{"steps": [{"t_s": 0, "channels": {"0": [12.0, 5.0], ...}}, ...]}`` (JSON or TOML)."""
        form = '{"steps": [{"t_s": 0, "channels": {"0": [volts, amps]}}]}'
        raw = obj.get("steps") if isinstance(obj, dict) else None
        if not isinstance(raw, list):
            raise MeterError(f"bad power script: no list of steps; expected {form}")
        steps = []
        for k, st in enumerate(raw):
            where = f"power script step {k}"
            if not isinstance(st, dict) or "t_s" not in st or not isinstance(st.get("channels"), dict):
                raise MeterError(f"bad {where}: it needs t_s and a table of channels; expected {form}")
            t = _script_number(st["t_s"], f"{where} t_s")
            chans: dict[int, tuple[float, float]] = {}
            for c, va in st["channels"].items():
                ch = script_channel(c, where)
                if not isinstance(va, (list, tuple)) or len(va) != 2:
                    raise MeterError(f"bad {where}, channel {c}: give [volts, amps], got {va!r}")
                chans[ch] = (_script_number(va[0], f"{where}, channel {c}: volts"),
                             _script_number(va[1], f"{where}, channel {c}: amps"))
            steps.append((t, chans))
        return cls(steps)

    @classmethod
    def load(cls, path: str | Path) -> Script:
        from archline.common.files import read_json, read_toml

        p = Path(path)
        read = read_toml if p.suffix == ".toml" else read_json
        return cls.from_obj(read(p, error=MeterError, what="power script"))

    def _step(self, t_s: F64) -> npt.NDArray[np.intp]:
        return np.clip(np.searchsorted(self.t_start_s, t_s, side="right") - 1, 0, None)

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        k = self._step(np.asarray(t_s, dtype=np.float64))
        ch = list(channels)
        return self.volts_v[k][:, ch], self.amps_a[k][:, ch]

    def power_w(self, t_s: F64, channels: Sequence[int]) -> F64:
        v, a = self.sample(t_s, channels)
        return v * a

    def energy_j(self, t0_s: float, t1_s: float, channels: Sequence[int] | None = None) -> float:
        """Exact integral of the summed power of ``channels`` over [t0_s, t1_s] (emulated time)."""
        ch = list(self.channels if channels is None else channels)
        p = (self.volts_v[:, ch] * self.amps_a[:, ch]).sum(axis=1)
        edges = np.concatenate([self.t_start_s, [np.inf]])
        lo = np.clip(edges[:-1], t0_s, t1_s)
        hi = np.clip(edges[1:], t0_s, t1_s)
        total = float(np.sum(p * (hi - lo)))
        if t0_s < self.t_start_s[0]:
            total += float(p[0]) * (min(t1_s, self.t_start_s[0]) - t0_s)
        return total


class CallableSource:
    """Adapts ``f(t_s) -> per-channel (volts, amps)`` (called once per sampling event)."""

    def __init__(self, func: PowerCallable) -> None:
        self.func = func

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        ch = list(channels)
        volts = np.zeros((len(t_s), len(ch)))
        amps = np.zeros((len(t_s), len(ch)))
        for k, t in enumerate(np.asarray(t_s, dtype=float)):
            out = self.func(float(t))
            for j, c in enumerate(ch):
                try:
                    v, a = out[c]  # type: ignore[index]
                except (KeyError, IndexError):
                    v, a = 0.0, 0.0
                volts[k, j] = v
                amps[k, j] = a
        return volts, amps


#: What an idle emulated board plays unless told otherwise: 12 V rails at a few amps, 3.3 V slot rail.
DEFAULT_SCRIPT = Script.constant({0: (12.0, 3.0), 1: (3.3, 1.5), 2: (12.0, 2.0), 3: (12.0, 4.0),
                                  4: (12.0, 1.0), 5: (5.0, 2.0), 6: (3.3, 1.0), 7: (12.0, 0.5)})


def as_power_source(obj: PowerSource | PowerCallable | None) -> PowerSource:
    if obj is None:
        return DEFAULT_SCRIPT
    if isinstance(obj, PowerSource):
        return obj
    if callable(obj):
        return CallableSource(obj)
    raise MeterError(f"not a power function: {obj!r}")
