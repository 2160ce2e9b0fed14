"""``archline measure --emulate`` on a platform with no power model (no pi0: ``localhost`` before a fit): there is
no emulated device to play, so with ``--busy-w`` and ``--idle-w`` the energy of each window is the schedule --
busy power while the command runs (its runs and their phases), idle power otherwise (the baseline) -- times the
window's measured time. Exact arithmetic, no meter, no bound; every window and the document say so (NOTE)."""

from __future__ import annotations

from typing import Any

from archline.bench.errors import BenchError

#: said in every output that carries such an energy (table, JSON, measure.json)
NOTE = "emulated: schedule x measured time, not the program's energy"


def needs_schedule(prof: Any, emulate: bool) -> bool:
    """--emulate on a platform whose profile has no pi0 (nothing to emulate a device from)."""
    return emulate and prof.platform.value("pi0") is None


def check(prof: Any, busy_w: float | None, idle_w: float | None, meter: str | None) -> None:
    if busy_w is None or idle_w is None:
        raise BenchError(f"platform '{prof.platform.name}' has no power model to emulate (no pi0; fit one with "
                         "`archline fit`): give --busy-w W and --idle-w W (or --tdp-w W), and the energy is that "
                         "schedule x the measured time")
    if meter is not None:
        raise BenchError(f"--meter {meter}: platform '{prof.platform.name}' is emulated by a power schedule "
                         "(--busy-w, --idle-w), not a meter: leave --meter out")


def describe(busy_w: float, idle_w: float) -> str:
    return f"schedule {busy_w:g} W while the command runs, {idle_w:g} W otherwise ({NOTE})"


def fill(w: dict[str, Any], power_w: float, idle_w: float | None) -> dict[str, Any]:
    """A window (Measurement.as_dict) of the null meter given the schedule's energy: ``power_w`` x its time;
    ``idle_w``: also its energy above idle (--subtract-idle). No ``truth_energy_j``: with a schedule there is no
    truth beyond the schedule itself (an emulated device's windows carry what the device drew)."""
    t = float(w["time_s"])
    w.pop("truth_energy_j", None)
    w.update(energy_j=power_w * t, energy_err_j=0.0, mean_power_w=power_w, mean_power_err_w=0.0,
             emulated=True, reason=None, energy_source=NOTE)
    if idle_w is not None:
        w["energy_above_idle_j"], w["energy_above_idle_err_j"] = (power_w - idle_w) * t, 0.0
    return w
