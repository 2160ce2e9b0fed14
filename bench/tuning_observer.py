"""Energy and power of each configuration a kernel tuner tries, through archline's meters (the logic behind
``archline.kernel_tuner``; no Kernel Tuner import here, so it is tested without the package).

It follows Kernel Tuner's observer protocol (kernel_tuner.observers.observer.BenchmarkObserver): per configuration
``register_configuration(params)``; per iteration ``before_start`` / ``after_start`` (the kernel was launched) /
``during`` (while it runs) / ``after_finish``; then ``get_results()`` once, returning averages over the iterations.
Each iteration is one archline window, from ``after_start`` to ``after_finish`` as Kernel Tuner's own external
meter observer (PowerSensorObserver) measures, so the meter's thread samples while the kernel runs and ``during``
has nothing to do.
"""

from __future__ import annotations

import math
from typing import Any

from archline.bench.errors import BenchError
from archline.powermon.monitor import Measurement, Monitor

#: what ``get_results`` can report (Kernel Tuner result keys, prefixed): mean J, mean W, mean bound (J)
OBSERVABLES = ("energy", "power", "energy_err", "lost_samples")


class EnergyObserver:
    """Reports ``<prefix>_energy`` (J per iteration, the mean) and ``<prefix>_power`` (W, the mean) of each
    configuration, measured in archline windows on ``monitor`` (or, without one, on ``open_monitor(platform,
    emulate=emulate)``, started here and stopped by :meth:`close`). Without a meter the values are NaN and
    ``<prefix>_reason`` says why; an emulated meter adds ``<prefix>_emulated: True``."""

    def __init__(self, monitor: Monitor | None = None, *, platform: str = "localhost", emulate: bool = False,
                 observables: tuple[str, ...] | list[str] | None = None, prefix: str = "archline") -> None:
        wanted = list(observables) if observables is not None else ["energy", "power"]
        for o in wanted:
            if o.removeprefix(f"{prefix}_") not in OBSERVABLES:
                raise BenchError(f"observable '{o}' is not one archline reports (known: {', '.join(OBSERVABLES)})")
        self.observables = [o.removeprefix(f"{prefix}_") for o in wanted]
        self.prefix = prefix
        self._own = monitor is None
        if monitor is None:
            from archline.bench.monitor import open_monitor

            monitor = open_monitor(platform, emulate=emulate)
        self.monitor = monitor
        self.params: dict[str, Any] = {}
        self.iterations: list[Measurement] = []
        #: every configuration measured so far: (params, its iterations' measurements)
        self.history: list[tuple[dict[str, Any], list[Measurement]]] = []
        self._config = 0
        self._window: str | None = None

    # --- Kernel Tuner's protocol ---
    def register_device(self, dev: Any) -> None:
        self.dev = dev

    def register_configuration(self, params: dict[str, Any]) -> None:
        self._cancel()
        self.monitor.start()
        self._config += 1
        self.params = dict(params)
        self.iterations = []

    def before_start(self) -> None:
        self._cancel()

    def after_start(self) -> None:
        self.monitor.start()
        self._window = f"config{self._config}/iteration{len(self.iterations) + 1}"
        self.monitor.begin_window(self._window)

    def during(self) -> None:
        """The meter samples on its own thread: nothing to do while the kernel runs."""

    def after_finish(self) -> None:
        if self._window is None:
            raise BenchError("after_finish without after_start: the observer was called out of Kernel Tuner's order")
        name, self._window = self._window, None
        self.iterations.append(self.monitor.end_window(name))

    def get_results(self) -> dict[str, Any]:
        self._cancel()
        ms, self.iterations = self.iterations, []
        self.history.append((self.params, ms))
        out: dict[str, Any] = {}
        values = {"energy": [m.energy_j for m in ms], "power": [m.mean_power_w for m in ms],
                  "energy_err": [m.energy_err_j for m in ms], "lost_samples": [float(m.lost_samples) for m in ms]}
        for o in self.observables:
            v = values[o]
            out[f"{self.prefix}_{o}"] = sum(v) / len(v) if v else math.nan
        reasons = sorted({m.reason for m in ms if not m.has_energy and m.reason}) or (
            [self.monitor.reason] if not ms and self.monitor.reason else [])
        if reasons:
            out[f"{self.prefix}_reason"] = "; ".join(reasons)
        if any(m.emulated for m in ms):
            out[f"{self.prefix}_emulated"] = True
        return out

    # --- life cycle ---
    def _cancel(self) -> None:
        """A window left open (an iteration that failed before after_finish) is dropped, not measured."""
        if self._window is not None:
            name, self._window = self._window, None
            self.monitor.cancel_window(name)

    def close(self) -> None:
        """Stop the monitor this observer opened (one passed in stays the caller's)."""
        self._cancel()
        if self._own:
            self.monitor.stop()

    def __enter__(self) -> EnergyObserver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
