"""Counters of a measured command (``archline measure --counters perf|likwid``): the 'why not' path (no binary,
perf_event_paranoid, a VM without a PMU), the wrapped command lines, and where this machine allows it a real
collection read back through fit's reader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from archline.bench.errors import BenchError
from archline.bench.measure_counters import available, wrap_command
from archline.formats.counters import read_collected


def _pmu(tmp_path: Path, names: list[str]) -> Path:
    d = tmp_path / "devices"
    d.mkdir()
    for n in names:
        (d / n).mkdir()
    return d


def _paranoid(tmp_path: Path, level: int) -> Path:
    p = tmp_path / "perf_event_paranoid"
    p.write_text(f"{level}\n")
    return p


def test_no_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert available("perf") == (False, "no perf on PATH (install linux-perf)")
    ok, why = available("likwid")
    assert not ok and why.startswith("no likwid-perfctr on PATH")


def test_paranoid_and_vm_without_pmu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    ok, why = available("perf", paranoid=_paranoid(tmp_path, 3), devices=_pmu(tmp_path, ["cpu"]))
    assert not ok and why.startswith("perf_event_paranoid is 3")
    vm = tmp_path / "vm"
    vm.mkdir()
    ok, why = available("perf", paranoid=_paranoid(vm, 2), devices=_pmu(vm, ["software", "tracepoint", "msr"]))
    assert not ok and "no hardware PMU" in why and "VM" in why
    ok, why = available("likwid", paranoid=vm / "perf_event_paranoid", devices=vm / "devices")
    assert not ok and "no hardware PMU" in why
    hw = tmp_path / "hw"
    hw.mkdir()
    assert available("perf", paranoid=_paranoid(hw, 2), devices=_pmu(hw, ["cpu_core", "cpu_atom"]), probe=False)[0]
    assert available("vtune") == (False, "unknown counter tool 'vtune' (known: perf, likwid)")


def test_wrapped_command_lines(tmp_path: Path) -> None:
    out = tmp_path / "perf.csv"
    argv = wrap_command("perf", ["./app", "-n", "3"], out, events=["duration_time", "LLC-loads"])
    assert argv == ["perf", "stat", "-x,", "-o", str(out), "-e", "duration_time,LLC-loads", "--", "./app", "-n", "3"]
    lk = wrap_command("likwid", ["./app"], tmp_path / "l.csv", groups=["FLOPS_DP", "MEM"])
    assert lk[:1] == ["likwid-perfctr"] and lk[-2:] == ["--", "./app"]
    assert lk[lk.index("-o") + 1] == str(tmp_path / "l.csv") and "-O" in lk
    assert [lk[i + 1] for i, a in enumerate(lk) if a == "-g"] == ["FLOPS_DP", "MEM"]
    with pytest.raises(BenchError, match=r"must end in \.csv"):
        wrap_command("likwid", ["./app"], tmp_path / "l.txt")
    with pytest.raises(BenchError, match="no command"):
        wrap_command("perf", [], out)


def test_real_perf_collection_of_wall_time(tmp_path: Path) -> None:
    """perf's software event duration_time counts even in a VM without a PMU: a real run, read back."""
    if subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode != 0:
        pytest.skip("no perf on this machine")
    out = tmp_path / "perf.csv"
    argv = wrap_command("perf", [sys.executable, "-c", "import time; time.sleep(0.2); raise SystemExit(3)"], out,
                        events=["duration_time"])
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if "Permission" in r.stderr or "not allowed" in r.stderr:
        pytest.skip(f"perf may not count here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 3, "the child's exit code passes through perf stat"
    c = read_collected("perf", out)
    assert c.time_s is not None and 0.2 <= c.time_s < 10.0
    assert c.counts == {}


LOOP_C = r"""
#include <stdio.h>
int main(void) {
    volatile double x = 0.0;
    for (long i = 0; i < 10000000L; ++i) x = x + 1.0;
    printf("%g\n", x);
    return 0;
}
"""


def test_real_flop_count_of_a_known_loop(tmp_path: Path) -> None:
    """10^7 scalar double additions, counted where the machine has a PMU perf may use."""
    ok, why = available("perf")
    if not ok:
        pytest.skip(why)
    src = tmp_path / "loop.c"
    src.write_text(LOOP_C)
    exe = tmp_path / "loop"
    if subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], capture_output=True).returncode != 0:
        pytest.skip("no C compiler")
    out = tmp_path / "perf.csv"
    subprocess.run(wrap_command("perf", [str(exe)], out), capture_output=True, check=True)
    c = read_collected("perf", out)
    assert 1.0e7 <= c.counts.get("flops_dp", 0.0) <= 1.0e7 * 1.001 + 1e5
