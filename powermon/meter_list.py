"""``archline meter list``: the meters this machine offers (serial ports, a PowerSensor3 or PMD-USB known by its
USB id, RAPL zones, NVML GPUs, the other kinds), an absent kind with its reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from archline.common.plugins import FAULTS
from archline.powermon.errors import MeterError
from archline.powermon.guarded import is_plugin


def list_meters(powercap_root: str | Path | None = None, nvml: Any = None, perf_root: str | Path | None = None,
                perf_reader: Any = None) -> list[dict[str, Any]]:
    """Serial ports (a port whose USB id a kind declares named as that kind's), then every registered kind's rows
    (powermon/kinds.py: RAPL zones from powercap and perf's power events, NVML GPUs, emulator URLs, the others);
    an absent kind comes with its reason. Every row has ``fix``: the one command that gives what is missing, where
    one exists; where none can, why in words ("none here: a VM guest; measure on the host"); "" when nothing is
    missing."""
    from archline.powermon import kinds

    rows: list[dict[str, Any]] = []
    try:
        from serial.tools import list_ports

        ports = list(list_ports.comports())
    except ImportError:
        ports = []
        rows.append({"kind": "serial", "name": "-", "detail": "cannot list serial ports: pyserial is not installed",
                     "available": False, "fix": "pip install pyserial"})
    except Exception as e:  # pragma: no cover - platform specific
        ports = []
        rows.append({"kind": "serial", "name": "-", "detail": f"cannot list serial ports: {e}", "available": False})
    usb_kinds = {usb: k.name for k in kinds.kinds() for usb in k.usb_ids}
    for p in ports:
        denied = _port_denied(p.device)
        rows.append({"kind": "serial", "name": p.device, "available": not denied,
                     "detail": denied[0] if denied else p.description or "", "fix": denied[1] if denied else ""})
        usb = (getattr(p, "vid", None), getattr(p, "pid", None))
        if usb in usb_kinds:
            rows.append({"kind": usb_kinds[usb], "name": p.device, "available": not denied,
                         "detail": f"USB {usb[0]:04x}:{usb[1]:04x} ({p.description or 'serial'}); "
                                   f"--meter {usb_kinds[usb]}:{p.device}", "fix": denied[1] if denied else ""})
    if not ports:
        rows.append({"kind": "serial", "name": "-", "available": False,
                     "detail": "no serial ports (PowerMon 2 not plugged in?); `archline meter emulate` makes one"})
    options = dict(powercap_root=powercap_root, nvml=nvml, perf_root=perf_root, perf_reader=perf_reader)
    seen = {r["kind"] for r in rows}
    for k in kinds.kinds():
        rows += _kind_rows(k, seen, options)
    absent = {k.name: k.absent for k in kinds.kinds() if k.absent}
    for r in rows:
        r.setdefault("fix", "")
        if not r["available"] and not r["fix"]:     # no command can help: said in words, never an empty cell
            r["fix"] = f"none here: {absent.get(r['kind'], _NO_COMMAND.get(r['kind'], _NO_FIX))}"
    return rows


_NO_FIX = "no command makes it readable (see detail)"
#: why no command gives a serial port, in words (a kind's own reason is its ``absent``)
_NO_COMMAND = {"serial": "plug a meter in"}


def _port_denied(device: str) -> tuple[str, str] | None:
    """(what is missing, the command) when this user may not open an existing serial device; None when it may
    (or the device is not a file here: a fake port)."""
    if not os.path.exists(device) or os.access(device, os.R_OK | os.W_OK):
        return None
    try:
        import grp

        group = grp.getgrgid(os.stat(device).st_gid).gr_name
    except (KeyError, OSError, ImportError):
        group = "dialout"
    if group == "root":          # owned by root's group only (a udev rule would be needed): dialout is the usual one
        group = "dialout"
    return (f"{device} is not readable and writable by this user (group {group}); log in again after the fix",
            f"sudo usermod -aG {group} $USER")


def _kind_rows(k: Any, seen: set[str], options: dict[str, Any]) -> list[dict[str, Any]]:
    """A kind's rows: its own ``lister``'s; else, for a kind with an emulator URL, whether one is on a USB port and
    its emulator; else its module's ``list_meters()``; else how to configure it in a profile. A plugin's lister
    that fails is one row saying so, never a crash of the listing."""
    if k.lister is not None:
        try:
            return _checked_rows(k, "lister", list(k.lister(**options)))
        except MeterError as e:
            return [{"kind": k.name, "name": "-", "available": False, "detail": str(e)}]
        except FAULTS as e:  # a plugin's bug: its row says so, the other kinds are still listed
            return [{"kind": k.name, "name": "-", "available": False,
                     "detail": f"its lister ({k.origin}) failed: {type(e).__name__}: {' '.join(str(e).split())}"}]
    if k.emulator_url is not None:
        out = [] if k.name in seen else [{"kind": k.name, "name": "-", "available": False,
                                          "detail": f"no {k.name} on a USB port (plugged in?)"}]
        return [*out, {"kind": k.name, "name": k.emulator_url, "available": True,
                       "detail": f"emulator (labelled emulated): --meter {k.name}:{k.emulator_url}"
                                 + k.emulator_note}]
    lister = None
    plugin = is_plugin(k)
    if k.module is not None:
        import importlib

        try:
            lister = getattr(importlib.import_module(k.module), "list_meters", None)
        except ImportError:
            return [{"kind": k.name, "name": "-", "available": False, "detail": "its driver is not in this archline"}]
        except FAULTS as e:
            if not plugin:
                raise
            return [{"kind": k.name, "name": "-", "available": False,
                     "detail": f"its driver ({k.origin}) cannot be imported: {type(e).__name__}: "
                               f"{' '.join(str(e).split())}"}]
    if callable(lister):
        try:
            rows = list(lister())
            if plugin:
                rows = _checked_rows(k, "driver's list_meters()", rows)
            return [r for r in rows if r.get("kind") == k.name]
        except MeterError as e:
            return [{"kind": k.name, "name": "-", "available": False, "detail": str(e)}]
        except FAULTS as e:
            if not plugin:
                raise
            return [{"kind": k.name, "name": "-", "available": False,
                     "detail": f"its driver's list_meters() ({k.origin}) failed: {type(e).__name__}: "
                               f"{' '.join(str(e).split())}"}]
    return [{"kind": k.name, "name": "-", "available": False,
             "detail": f"configure it in a platform profile's [[meters]] (kind = \"{k.name}\")"}]


#: what each ``meter list`` row holds (``fix`` is optional: the listing fills it in)
ROW_KEYS: dict[str, type] = {"kind": str, "name": str, "available": bool, "detail": str}


def _checked_rows(k: Any, source: str, rows: list[Any]) -> list[dict[str, Any]]:
    """A lister's rows, each a dict with :data:`ROW_KEYS` of their types (and ``fix`` a str where given); those
    that are not are left out, and one row of the kind says how many and why (never a crash of the listing)."""
    good = [r for r in rows if isinstance(r, dict) and all(isinstance(r.get(key), typ) for key, typ in ROW_KEYS.items())
            and isinstance(r.get("fix", ""), str)]
    if len(good) == len(rows):
        return rows
    bad = next(r for r in rows if not any(r is g for g in good))
    shown = " ".join(repr(bad).split())
    return [*good, {"kind": k.name, "name": "-", "available": False,
                    "detail": f"its {source} ({k.origin}) gave {len(rows) - len(good)} malformed row(s) (first: "
                              f"{shown[:80]}); a row is a dict with {', '.join(ROW_KEYS)} (and fix); left out"}]
