"""``archline meter list``: the meters this machine offers (serial ports, a PowerSensor3 or PMD-USB known by its
USB id, RAPL zones, NVML GPUs, the other kinds), an absent kind with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError


def list_meters(powercap_root: str | Path | None = None, nvml: Any = None) -> list[dict[str, Any]]:
    """Serial ports, RAPL zones and NVML GPUs on this machine; an absent kind comes with its reason."""
    from archline.powermon.counters import nvml as nvml_mod
    from archline.powermon.counters import rapl

    rows: list[dict[str, Any]] = []
    try:
        from serial.tools import list_ports

        ports = list(list_ports.comports())
    except Exception as e:  # pragma: no cover - platform specific
        ports = []
        rows.append({"kind": "serial", "name": "-", "detail": f"cannot list serial ports: {e}", "available": False})
    for p in ports:
        rows.append({"kind": "serial", "name": p.device, "detail": p.description or "", "available": True})
        usb = (getattr(p, "vid", None), getattr(p, "pid", None))
        if usb in _SERIAL_IDS:
            rows.append({"kind": _SERIAL_IDS[usb], "name": p.device, "available": True,
                         "detail": f"USB {usb[0]:04x}:{usb[1]:04x} ({p.description or 'serial'}); "
                                   f"--meter {_SERIAL_IDS[usb]}:{p.device}"})
    if not ports:
        rows.append({"kind": "serial", "name": "-", "available": False,
                     "detail": "no serial ports (PowerMon 2 not plugged in?); `archline meter emulate` makes one"})
    root = rapl.default_root() if powercap_root is None else Path(powercap_root)
    zones = rapl.list_zones(root)
    for z in zones:
        try:
            z.read_uj()
            detail, ok = f"{z.path} range {z.max_energy_range_uj} uJ", True
        except MeterError as e:
            detail, ok = str(e), False
        rows.append({"kind": "rapl", "name": z.name, "detail": detail, "available": ok})
    if not zones:
        rows.append({"kind": "rapl", "name": "-", "available": False,
                     "detail": f"no RAPL zones under {root} (not an Intel/AMD CPU with powercap, or a VM)"})
    try:
        for g in nvml_mod.list_gpus(nvml):
            rows.append({"kind": "nvml", "name": f"gpu{g['index']}", "available": True,
                         "detail": f"{g['name']}, total energy counter: {'yes' if g['total_energy'] else 'no'}, "
                                   f"power scope {g['power_scope']}"})
    except MeterError as e:
        rows.append({"kind": "nvml", "name": "-", "detail": str(e), "available": False})
    rows += _other_kinds(rows)
    return rows


#: USB IDs of the serial meters (PowerSensor3: the STM32 virtual COM port; PMD-USB: its CH340 bridge). Other
#: devices share these IDs, so a row says the port may be one, not that it is.
_SERIAL_IDS = {(0x0483, 0x5740): "powersensor3", (0x1A86, 0x7523): "pmd"}


#: what an emulator's rate is beside the real device's, where a profile may set it lower so the emulator keeps up
_EMULATED_RATE = {"powersensor3": "; streams 20000 frames/s as a real one does (?rate=N for fewer); a profile's "
                                  "lower rate_hz (gtx580's ps3: 250) is the emulator's, not the hardware's"}


def _other_kinds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A row for every kind the ``[[meters]]`` schema knows that the rows above do not show: its emulator URL, or
    the kind's own listing (``list_meters()`` of its module), or how to configure it."""
    from archline.powermon.spec import METER_KINDS, METER_MODULES

    seen = {r["kind"] for r in rows}
    out: list[dict[str, Any]] = []
    emulators = {"powersensor3": "powersensor3://default", "pmd": "pmd://default"}
    n_serial = sum(1 for r in rows if r["kind"] == "serial" and r["available"])
    out.append({"kind": "powermon2", "name": "-", "available": False,
                "detail": f"a PowerMon 2 has no USB ID to find it by: try the {n_serial} serial port(s) above "
                          "(--meter powermon2:PORT)"})
    out.append({"kind": "powermon2", "name": "powermon://default", "available": True,
                "detail": "emulator (labelled emulated): --meter emulated[:SPEED], or `archline meter emulate`"})
    for kind in METER_KINDS:
        if kind in ("powermon2", "rapl", "nvml"):
            continue
        if kind in emulators:
            if kind not in seen:
                out.append({"kind": kind, "name": "-", "available": False,
                            "detail": f"no {kind} on a USB port (plugged in?)"})
            out.append({"kind": kind, "name": emulators[kind], "available": True,
                        "detail": f"emulator (labelled emulated): --meter {kind}:{emulators[kind]}"
                                  + _EMULATED_RATE.get(kind, "")})
            continue
        try:
            import importlib

            mod = importlib.import_module(METER_MODULES[kind])
        except ImportError:
            out.append({"kind": kind, "name": "-", "available": False,
                        "detail": "its driver is not in this archline"})
            continue
        lister = getattr(mod, "list_meters", None)
        if callable(lister):
            try:
                out += [r for r in lister() if r.get("kind") == kind]
                continue
            except MeterError as e:
                out.append({"kind": kind, "name": "-", "available": False, "detail": str(e)})
                continue
        out.append({"kind": kind, "name": "-", "available": False,
                    "detail": f"configure it in a platform profile's [[meters]] (kind = \"{kind}\")"})
    return out
