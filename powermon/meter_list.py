"""``archline meter list``: the meters this machine offers (serial ports, a PowerSensor3 or PMD-USB known by its
USB id, RAPL zones, NVML GPUs, the other kinds), an absent kind with its reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError


def list_meters(powercap_root: str | Path | None = None, nvml: Any = None, perf_root: str | Path | None = None,
                perf_reader: Any = None) -> list[dict[str, Any]]:
    """Serial ports, RAPL zones (powercap and perf's power events) and NVML GPUs on this machine; an absent kind
    comes with its reason. Every row has ``fix``: the one command that gives what is missing, where one exists;
    where none can, why in words ("none here: a VM guest; measure on the host"); "" when nothing is missing."""
    from archline.powermon.counters import nvml as nvml_mod

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
    for p in ports:
        denied = _port_denied(p.device)
        rows.append({"kind": "serial", "name": p.device, "available": not denied,
                     "detail": denied[0] if denied else p.description or "", "fix": denied[1] if denied else ""})
        usb = (getattr(p, "vid", None), getattr(p, "pid", None))
        if usb in _SERIAL_IDS:
            rows.append({"kind": _SERIAL_IDS[usb], "name": p.device, "available": not denied,
                         "detail": f"USB {usb[0]:04x}:{usb[1]:04x} ({p.description or 'serial'}); "
                                   f"--meter {_SERIAL_IDS[usb]}:{p.device}", "fix": denied[1] if denied else ""})
    if not ports:
        rows.append({"kind": "serial", "name": "-", "available": False,
                     "detail": "no serial ports (PowerMon 2 not plugged in?); `archline meter emulate` makes one"})
    rows += rapl_rows(powercap_root, perf_root, perf_reader)
    try:
        for g in nvml_mod.list_gpus(nvml):
            rows.append({"kind": "nvml", "name": f"gpu{g['index']}", "available": True,
                         "detail": f"{g['name']}, total energy counter: {'yes' if g['total_energy'] else 'no'}, "
                                   f"power scope {g['power_scope']}"})
    except MeterError as e:
        rows.append({"kind": "nvml", "name": "-", "detail": str(e), "available": False,
                     "fix": "pip install nvidia-ml-py" if "not installed" in str(e) else ""})
    rows += _other_kinds(rows)
    for r in rows:
        r.setdefault("fix", "")
        if not r["available"] and not r["fix"]:     # no command can help: said in words, never an empty cell
            r["fix"] = f"none here: {_NO_COMMAND.get(r['kind'], 'no command makes it readable (see detail)')}"
    return rows


#: why no command gives an absent kind, in words (the fix column where no command can help)
_NO_COMMAND = {"serial": "plug a meter in", "powermon2": "plug one in; give its port", "powersensor3": "plug one in",
               "pmd": "plug one in", "nvml": "no NVIDIA GPU or driver", "amdsmi": "no AMD GPU or ROCm",
               "hwmon": "no energy sensor in this kernel's hwmon", "redfish": "a node's BMC, named in a profile",
               "ipmi": "a node's BMC, named in a profile", "rapl": "no RAPL on this CPU or kernel"}


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
            rows.append({"kind": "rapl", "name": z.name, "available": True,
                         "detail": f"powercap {z.path} range {z.max_energy_range_uj} uJ"})
        except MeterError as e:
            rows.append({"kind": "rapl", "name": z.name, "available": False, "fix": chmod,
                         "detail": f"{e}; the fix lasts until reboot, a udev rule keeps it: `{UDEV_FIX}`"})
    proot = rapl_perf.default_root() if perf_root is None else Path(perf_root)
    pmu = rapl_perf.read_pmu(proot)
    if pmu is not None and pmu.events:
        try:
            src = rapl_perf.PerfSource(None, proot, perf_reader)
            rows += [{"kind": "rapl", "name": f"perf:{z.name}", "available": True,
                      "detail": f"perf event power/{z.event.name}/ on CPU {z.cpu} (the RAPL meter's source where "
                                "powercap is not readable)"} for z in src.zones]
            src.close()
        except MeterError as e:
            denied = "not permitted" in str(e)
            rows.append({"kind": "rapl", "name": "perf:-", "available": False,
                         "fix": rapl_perf.PARANOID_FIX if denied else "",
                         "detail": f"{e}" if not denied else
                         f"perf's power events {', '.join(ev.name for ev in pmu.events)} are not permitted "
                         f"(kernel.perf_event_paranoid is {rapl_perf.paranoid_level()}; they need <= 0, or "
                         f"CAP_PERFMON: `{rapl_perf.CAPABILITY_FIX}`)"})
    if not zones and (pmu is None or not pmu.events):
        vm = _in_vm()
        rows.append({"kind": "rapl", "name": "-", "available": False,
                     "fix": "none here: a VM guest; measure on the host" if vm else "sudo modprobe intel_rapl_msr",
                     "detail": f"no RAPL zones under {root} and no perf power events under {proot} ("
                               + ("a VM guest: RAPL is the host's, measure there" if vm else
                                  "the RAPL driver not loaded, or not an Intel/AMD CPU") + ")"})
    return rows


#: powercap's energy_uj opened to every user at each boot (the chmod fix made permanent)
UDEV_FIX = ("echo 'ACTION==\"add\", SUBSYSTEM==\"powercap\", RUN+=\"/bin/chmod o+r /sys%p/energy_uj\"' | "
            "sudo tee /etc/udev/rules.d/99-archline-rapl.rules")


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
