"""Hardware counters of a measured command (``archline measure --counters perf|likwid``): whether this machine
lets a tool count (:func:`available`, with the reason when it does not), the command line that runs the user's
command under it (:func:`wrap_command`), and where its output goes. The output is read by
``archline.formats.counters.read_collected(tool, out_path)`` (fit owns the formats).

Why a tool cannot count, in the order checked: no binary on PATH; ``/proc/sys/kernel/perf_event_paranoid`` above 2
for a user without CAP_PERFMON (3 and 4 forbid unprivileged counting on Debian/Ubuntu kernels); no hardware PMU
under ``/sys/bus/event_source/devices`` (a VM without PMU access: software events only, the common case); the tool's
own probe failing (likwid without MSR access or its access daemon).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from archline.bench.errors import BenchError

TOOLS = ("perf", "likwid")
PMU_DEVICES = Path("/sys/bus/event_source/devices")
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
#: perf events by CPU vendor (/proc/cpuinfo vendor_id); generic LLC events and the wall time for every vendor
PERF_EVENTS = {
    "GenuineIntel": [f"fp_arith_inst_retired.{w}_{p}" for p in ("double", "single")
                     for w in ("scalar", "128b_packed", "256b_packed", "512b_packed")],
    "AuthenticAMD": ["fp_ret_sse_avx_ops.all"],
}
PERF_COMMON = ["LLC-loads", "LLC-load-misses", "LLC-stores", "LLC-store-misses", "duration_time"]
#: likwid groups, first present of each tuple (group names differ by microarchitecture)
LIKWID_GROUPS = (("FLOPS_DP",), ("MEM", "MEM1", "MEM_DP"))


def _vendor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _has_pmu(devices: Path = PMU_DEVICES) -> bool:
    """A core PMU: ``cpu`` (x86), ``cpu_core``/``cpu_atom`` (hybrid Intel) or ``armv8_*`` (Arm)."""
    try:
        names = [p.name for p in devices.iterdir()]
    except OSError:
        return False
    return any(n in ("cpu", "cpu_core", "cpu_atom") or n.startswith("armv8") for n in names)


def _paranoid(path: Path = PARANOID) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _probe(argv: Sequence[str], timeout_s: float = 20.0) -> tuple[int, str]:
    try:
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    return r.returncode, (r.stdout + r.stderr)


def available(tool: str, *, devices: Path = PMU_DEVICES, paranoid: Path = PARANOID,
              probe: bool = True) -> tuple[bool, str]:
    """(True, what will be counted) or (False, why not) for ``tool`` on this machine."""
    if tool not in TOOLS:
        return False, f"unknown counter tool '{tool}' (known: {', '.join(TOOLS)})"
    binary = "perf" if tool == "perf" else "likwid-perfctr"
    if shutil.which(binary) is None:
        return False, f"no {binary} on PATH (install {'linux-perf' if tool == 'perf' else 'likwid'})"
    level = _paranoid(paranoid)
    if tool == "perf" and level is not None and level > 2 and os.geteuid() != 0:
        return False, (f"perf_event_paranoid is {level}: unprivileged counting is off (set it to 2 or lower, or run "
                       "with CAP_PERFMON)")
    if not _has_pmu(devices):
        return False, (f"no hardware PMU under {devices} (a VM without PMU access?): only software events, no "
                       "flop or cache counters")
    if not probe:
        return True, f"{binary} with a hardware PMU"
    if tool == "perf":
        rc, out = _probe(["perf", "stat", "-x,", "-e", "instructions", "--", "true"])
        if rc != 0 or "<not supported>" in out or "<not counted>" in out:
            return False, f"perf cannot count instructions here: {_last_line(out)}"
        return True, "perf stat with a hardware PMU"
    rc, out = _probe(["likwid-perfctr", "-c", "0", "-g", "FLOPS_DP", "-O", "true"])
    if rc != 0 or "Cannot" in out or "ERROR" in out.upper():
        return False, f"likwid-perfctr cannot count here: {_last_line(out)}"
    return True, "likwid-perfctr with a hardware PMU"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= {"-"}]
    return next((ln for ln in lines if "cannot" in ln.lower() or "error" in ln.lower()), lines[-1] if lines else "")


def _likwid_groups() -> list[str]:
    rc, out = _probe(["likwid-perfctr", "-a"])
    have = {ln.split()[0] for ln in out.splitlines() if ln.strip()} if rc == 0 else set()
    return [next((g for g in choice if g in have), choice[0]) for choice in LIKWID_GROUPS if
            any(g in have for g in choice) or not have]


def wrap_command(tool: str, argv: Sequence[str], out_path: str | Path, *,
                 events: Sequence[str] | None = None, groups: Sequence[str] | None = None) -> list[str]:
    """``argv`` run under ``tool``, which writes its counters to ``out_path`` (perf stat -x, CSV; likwid-perfctr
    CSV, so give a ``.csv`` name). The child's exit code is the wrapper's (perf stat and likwid-perfctr pass it on).
    ``events`` (perf) / ``groups`` (likwid) replace the defaults."""
    if not argv:
        raise BenchError("no command to count")
    out = str(out_path)
    if tool == "perf":
        ev = list(events) if events else [*PERF_EVENTS.get(_vendor(), []), *PERF_COMMON]
        return ["perf", "stat", "-x,", "-o", out, "-e", ",".join(ev), "--", *argv]
    if tool == "likwid":
        if not out.endswith(".csv"):
            raise BenchError(f"likwid-perfctr picks its output format from the name: {out} must end in .csv")
        n = os.cpu_count() or 1
        gs = list(groups) if groups else _likwid_groups()
        return ["likwid-perfctr", "-c", f"0-{n - 1}", *[a for g in gs for a in ("-g", g)], "-O", "-o", out,
                "--", *argv]
    raise BenchError(f"unknown counter tool '{tool}' (known: {', '.join(TOOLS)})")
