#!/usr/bin/env python3
"""Peak RSS and wall time of one OpenCL SP intensity sweep, as the device reports its cache and with it faked.

    python3 benchmarks/opencl_working_set.py [--cache-mib 0,300,1024] [--limit-s 240] [--limit-rss-gb 6]
                                             [--source-tree DIR] [--device 0:0] [--json out.json]

Each case runs ``/usr/bin/time -v archline bench run --backend opencl --kernel intensity --precision sp`` once and
reads its "Maximum resident set size" and wall time; a run past --limit-s or --limit-rss-gb is stopped and reported
as "over". Cache 0 is the device as it reports itself. A faked cache is the device's own: PoCL reads the caches
from hwloc, so the script exports this machine's hwloc topology (libhwloc through ctypes), sets every last-level
cache in it to the given size and points HWLOC_XMLFILE at it; the script prints what the device then reports.
``--source-tree DIR`` measures another checkout (``git archive <commit> | tar -x -C DIR``: the "before") in place
of the installed one. Targets (issue 34, item 7): peak RSS <= 2 GB and wall <= 3 min on the 2-vCPU Zen 3 VM, also
with a 300 MiB or 1 GiB cache reported; every checksum ok. Nothing here is asserted in pytest: timings on a
shared machine are noisy (say so when reporting them).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIB = 1 << 20
ROOMS = ("cli", "fit", "bench", "powermon", "formats", "model", "common")
#: run archline from PKGROOT, the editable install's finder removed (the --source-tree case)
LAUNCHER = """import sys
root = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if not any(w in type(f).__module__ for w in ('skbc', 'editable'))]
sys.path.insert(0, root)
from archline.cli.main import main
sys.argv[0] = 'archline'
sys.exit(main())
"""
PROBE = """import pyopencl as cl
d = cl.get_platforms()[{p}].get_devices()[{d}]
print(int(d.global_mem_cache_size))
"""


def fake_topology(cache_bytes: int, path: Path) -> None:
    """This machine's hwloc topology as XML with every last-level cache (the largest cache level) set to
    ``cache_bytes``."""
    hw = ctypes.CDLL("libhwloc.so.15")
    topo = ctypes.c_void_p()
    if hw.hwloc_topology_init(ctypes.byref(topo)) or hw.hwloc_topology_load(topo):
        sys.exit("libhwloc could not load this machine's topology")
    hw.hwloc_topology_export_xml.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong]
    if hw.hwloc_topology_export_xml(topo, str(path).encode(), 0):
        sys.exit(f"libhwloc could not write {path}")
    xml = path.read_text()
    levels = [int(m) for m in re.findall(r'type="L(\d)Cache"', xml)]
    if not levels:
        sys.exit("hwloc reports no caches here: nothing to fake")
    last = max(levels)
    xml = re.sub(rf'(type="L{last}Cache"[^>]*?cache_size=")\d+"', rf'\g<1>{cache_bytes}"', xml)
    path.write_text(xml)


def package_root(tree: Path, into: Path) -> Path:
    """A directory holding ``archline`` laid out as the wheel does (pkg/archline plus the rooms), linked to tree."""
    pkg = into / "archline"
    pkg.mkdir(parents=True)
    for f in (tree / "pkg" / "archline").glob("*.py"):
        (pkg / f.name).symlink_to(f)
    for room in ROOMS:
        (pkg / room).symlink_to(tree / room)
    return into


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_case(cmd: list[str], env: dict[str, str], limit_s: float, limit_rss_bytes: int) -> dict[str, Any]:
    """Run ``/usr/bin/time -v cmd``; stop the measured process past a limit (time still reports on it)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *cmd], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    over = ""
    while proc.poll() is None:
        kids = _children(proc.pid)
        rss = sum(_rss_bytes(k) for k in kids)
        if not over and (time.monotonic() - t0 > limit_s or rss > limit_rss_bytes):
            over = (f"over {limit_s:.0f} s" if time.monotonic() - t0 > limit_s
                    else f"over {limit_rss_bytes / 1e9:.0f} GB")
            for k in kids:          # the measured process only: /usr/bin/time stays to report on it
                os.kill(k, signal.SIGKILL)
        time.sleep(0.2)
    out = proc.stdout.read() if proc.stdout else ""
    wall_s = time.monotonic() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
    points = re.findall(r"^point \d+/(\d+) .*?checksum (\w+)", out, re.M)
    return {"wall_s": round(wall_s, 1), "max_rss_bytes": int(m.group(1)) * 1024 if m else None,
            "over": over, "points_done": len(points), "points": int(points[0][0]) if points else None,
            "checksums_ok": sum(1 for _, ok in points if ok == "ok"), "exit": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-mib", default="0,300,1024", help="reported last-level caches to run (0: as is)")
    ap.add_argument("--limit-s", type=float, default=240.0)
    ap.add_argument("--limit-rss-gb", type=float, default=6.0)
    ap.add_argument("--source-tree", type=Path, help="measure this checkout instead of the installed archline")
    ap.add_argument("--device", default="0:0", help="OpenCL device P:D (the faked topology is PoCL's)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    p, d = (int(x) for x in args.device.split(":"))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="archline-ws-") as tmp:
        base = [sys.executable, "-c", LAUNCHER, str(package_root(args.source_tree.resolve(), Path(tmp) / "pkgroot"))] \
            if args.source_tree else [shutil.which("archline") or sys.exit("archline is not installed")]
        for mib in (int(x) for x in args.cache_mib.split(",")):
            env = dict(os.environ)
            if mib:
                xml = Path(tmp) / f"topo-{mib}.xml"
                fake_topology(mib * MIB, xml)
                env.update(HWLOC_XMLFILE=str(xml), HWLOC_THISSYSTEM="1")
            reported = subprocess.run([sys.executable, "-c", PROBE.format(p=p, d=d)], env=env, capture_output=True,
                                      text=True, check=True).stdout.strip()
            out_dir = Path(tmp) / f"out-{mib}"
            cmd = [*base, "bench", "run", "--backend", "opencl", "--device", args.device, "--kernel", "intensity",
                   "--precision", "sp", "--out", str(out_dir)]
            res = {"cache_mib_faked": mib or None, "reported_cache_bytes": int(reported),
                   **run_case(cmd, env, args.limit_s, int(args.limit_rss_gb * 1e9))}
            results.append(res)
            rss = f"{res['max_rss_bytes'] / 1e9:.2f} GB" if res["max_rss_bytes"] else "?"
            print(f"cache {'as reported' if not mib else f'faked {mib} MiB'} (device says "
                  f"{int(reported) / MIB:.0f} MiB): peak RSS {rss}, wall {res['wall_s']:.0f} s, "
                  f"{res['points_done']}/{res['points']} points, {res['checksums_ok']} checksums ok"
                  f"{', ' + res['over'] + ' (stopped)' if res['over'] else ''}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
