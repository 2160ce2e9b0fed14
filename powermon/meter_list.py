"""``archline meter list``: the meters this machine offers (serial ports, a PowerSensor3 or PMD-USB known by its
USB id, RAPL zones, NVML GPUs, the other kinds), an absent kind with its reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from archline.powermon.counters.kind import RAPL
from archline.powermon.errors import MeterError


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


def _in_vm() -> bool:
    """A hypervisor guest (x86's ``hypervisor`` CPU flag): RAPL is the host's, no command here gives it."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " hypervisor" in line for line in f)
    except OSError:
        return False


def rapl_rows(powercap_root: str | Path | None = None, perf_root: str | Path | None = None,
              perf_reader: Any = None) -> list[dict[str, Any]]:
    """The RAPL meter's two sources: each powercap zone (readable or the chmod that opens it), then perf's power
    events (readable or the sysctl/setcap that opens them), or why there is neither."""
    from archline.powermon.counters import rapl, rapl_perf

    rows: list[dict[str, Any]] = []
    root = rapl.default_root() if powercap_root is None else Path(powercap_root)
    zones = rapl.list_zones(root)
    chmod = f"sudo chmod o+r {root}/intel-rapl:*/energy_uj {root}/intel-rapl:*:*/energy_uj"
    for z in zones:
        try:
            z.read_uj()
            rows.append({"kind": RAPL, "name": z.name, "available": True,
                         "detail": f"powercap {z.path} range {z.max_energy_range_uj} uJ"})
        except MeterError as e:
            rows.append({"kind": RAPL, "name": z.name, "available": False, "fix": chmod,
                         "detail": f"{e}; the fix lasts until reboot, a udev rule keeps it: `{UDEV_FIX}`"})
    proot = rapl_perf.default_root() if perf_root is None else Path(perf_root)
    pmu = rapl_perf.read_pmu(proot)
    if pmu is not None and pmu.events:
        try:
            src = rapl_perf.PerfSource(None, proot, perf_reader)
            rows += [{"kind": RAPL, "name": f"perf:{z.name}", "available": True,
                      "detail": f"perf event power/{z.event.name}/ on CPU {z.cpu} (the RAPL meter's source where "
                                "powercap is not readable)"} for z in src.zones]
            src.close()
        except MeterError as e:
            denied = "not permitted" in str(e)
            rows.append({"kind": RAPL, "name": "perf:-", "available": False,
                         "fix": rapl_perf.PARANOID_FIX if denied else "",
                         "detail": f"{e}" if not denied else
                         f"perf's power events {', '.join(ev.name for ev in pmu.events)} are not permitted "
                         f"(kernel.perf_event_paranoid is {rapl_perf.paranoid_level()}; they need <= 0, or "
                         f"CAP_PERFMON: `{rapl_perf.CAPABILITY_FIX}`)"})
    if not zones and (pmu is None or not pmu.events):
        vm = _in_vm()
        rows.append({"kind": RAPL, "name": "-", "available": False,
                     "fix": "none here: a VM guest; measure on the host" if vm else "sudo modprobe intel_rapl_msr",
                     "detail": f"no RAPL zones under {root} and no perf power events under {proot} ("
                               + ("a VM guest: RAPL is the host's, measure there" if vm else
                                  "the RAPL driver not loaded, or not an Intel/AMD CPU") + ")"})
    return rows


#: powercap's energy_uj opened to every user at each boot (the chmod fix made permanent)
UDEV_FIX = ("echo 'ACTION==\"add\", SUBSYSTEM==\"powercap\", RUN+=\"/bin/chmod o+r /sys%p/energy_uj\"' | "
            "sudo tee /etc/udev/rules.d/99-archline-rapl.rules")


def _kind_rows(k: Any, seen: set[str], options: dict[str, Any]) -> list[dict[str, Any]]:
    """A kind's rows: its own ``lister``'s; else, for a kind with an emulator URL, whether one is on a USB port and
    its emulator; else its module's ``list_meters()``; else how to configure it in a profile. A plugin's lister
    that fails is one row saying so, never a crash of the listing."""
    if k.lister is not None:
        try:
            return list(k.lister(**options))
        except MeterError as e:
            return [{"kind": k.name, "name": "-", "available": False, "detail": str(e)}]
        except Exception as e:  # a plugin's bug: its row says so, the other kinds are still listed
            return [{"kind": k.name, "name": "-", "available": False,
                     "detail": f"its lister ({k.origin}) failed: {type(e).__name__}: {e}"}]
    if k.emulator_url is not None:
        out = [] if k.name in seen else [{"kind": k.name, "name": "-", "available": False,
                                          "detail": f"no {k.name} on a USB port (plugged in?)"}]
        return [*out, {"kind": k.name, "name": k.emulator_url, "available": True,
                       "detail": f"emulator (labelled emulated): --meter {k.name}:{k.emulator_url}"
                                 + k.emulator_note}]
    lister = None
    if k.module is not None:
        import importlib

        try:
            lister = getattr(importlib.import_module(k.module), "list_meters", None)
        except ImportError:
            return [{"kind": k.name, "name": "-", "available": False, "detail": "its driver is not in this archline"}]
    if callable(lister):
        try:
            return [r for r in lister() if r.get("kind") == k.name]
        except MeterError as e:
            return [{"kind": k.name, "name": "-", "available": False, "detail": str(e)}]
    return [{"kind": k.name, "name": "-", "available": False,
             "detail": f"configure it in a platform profile's [[meters]] (kind = \"{k.name}\")"}]
