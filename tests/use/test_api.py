"""The public Python API (docs/api.md): the doc's example runs on an emulated meter and its numbers are checked
against the emulated device's truth and the meter's stated bound; windows, context manager, decorator, the null
meter's reason, the marks channel of ``archline measure``; ``import archline`` stays light."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"


def doc_example() -> str:
    """The python block that follows the 'tests/use/test_api.py runs this block' marker in docs/api.md."""
    text = DOC.read_text()
    marker = text.index("tests/use/test_api.py runs this block")
    m = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert m is not None, "docs/api.md: no python block after the marker"
    return m.group(1)


def test_doc_example_runs_and_its_numbers_are_within_the_bound_of_the_truth() -> None:
    out = subprocess.run([sys.executable, "-c", doc_example()], capture_output=True, text=True, timeout=120,
                         check=False, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    m = re.match(r"work: ([\d.]+) s, ([\d.]+) J \+- ([\d.]+) J \(truth ([\d.]+) J\), ([\d.]+) W, emulated=True",
                 lines[0])
    assert m is not None, out.stdout
    time_s, energy_j, err_j, truth_j, power_w = map(float, m.groups())
    assert 0.5 <= time_s < 0.6
    assert truth_j == pytest.approx(60.0 * time_s, abs=0.04)      # 60 W x the window (printed to 1 ms): ~30 J
    assert 0 < err_j < 0.05 * truth_j                              # a bound that says something
    assert abs(energy_j - truth_j) <= err_j + 1e-3                 # (printed to 3 decimals)
    assert power_w == pytest.approx(60.0, abs=err_j / time_s + 0.01)
    g = re.match(r"gpu: ([\d.]+) J over rails \['aux_6pin_12v', 'aux_8pin_12v', 'pcie_slot_12v', 'pcie_slot_3v3'\]",
                 lines[1])
    assert g is not None and float(g.group(1)) == pytest.approx(energy_j, abs=1e-3)   # one device: every rail
    steps = [re.match(r"step: ([\d.]+) s, ([\d.]+) J \+- ([\d.]+) J", ln) for ln in lines[2:]]
    assert len(steps) == 2 and all(s is not None for s in steps)
    for s in steps:
        assert s is not None
        t, e, err = map(float, s.groups())
        assert 0.25 <= t < 0.35 and abs(e - 60.0 * t) <= err + 0.031  # edges = the device's switches (t to 1 ms)


def test_windows_nest_cancel_and_say_why_there_is_no_energy() -> None:
    import archline

    with archline.Monitor([archline.NullMeter("no meter on this test box")]) as mon:
        mon.begin_window("outer")
        with mon.window("inner") as w:
            with pytest.raises(archline.MeterError, match="still open"):
                _ = w.energy_j
            time.sleep(0.01)
        outer = mon.end_window("outer")
        with pytest.raises(RuntimeError), mon.window("failing"):
            raise RuntimeError("boom")
        assert "failing" not in mon.open_names                  # an exception cancels the window
        with pytest.raises(archline.MeterError, match="never begun"):
            mon.end_window("nope")
        mon.begin_window("twice")
        with pytest.raises(archline.MeterError, match="already open"):
            mon.begin_window("twice")
        mon.end_window("twice")

        @mon.measure()
        def f(x: int) -> int:
            return 2 * x

        assert f(21) == 42 and f(1) == 2
    assert w.time_s >= 0.01 and outer.time_s >= w.time_s
    assert math.isnan(w.energy_j) and not w.has_energy and w.reason == "time only: no meter on this test box"
    assert w.as_dict()["energy_j"] is None and w.as_dict()["reason"] == w.reason
    assert [m.name for m in mon.measurements] == [f.__qualname__] * 2
    assert mon.reason == "time only: no meter on this test box"


def test_open_monitor_without_meters_is_the_null_meter_with_the_reason(tmp_path: Path) -> None:
    import archline

    prof = tmp_path / "nometer.toml"
    gtx = (ROOT / "formats" / "platforms" / "gtx580.toml").read_text()
    prof.write_text(gtx.split("[[meters]]")[0].replace('name = "gtx580"', 'name = "nometer"', 1))
    mon = archline.open_monitor(str(prof))
    assert "configures no meter" in mon.reason
    with mon, mon.window("w") as w:
        pass
    assert not w.has_energy and "configures no meter" in w.reason
    with pytest.raises(Exception, match="emulate=True"):
        archline.open_monitor(str(prof), busy_w=10.0)


def test_from_env_sends_each_edge_to_the_marks_channel() -> None:
    import archline
    from archline.powermon.marks import MarksReader, pair_marks

    alone = archline.Monitor.from_env({})
    assert "not running under 'archline measure'" in alone.reason
    reader = MarksReader()
    try:
        with archline.Monitor.from_env({archline.MARKS_ENV: str(reader.path)}) as mon:
            with mon.window("load") as w:
                time.sleep(0.01)
            mon.begin_window("solve step")
            mon.end_window("solve step")
        deadline = time.monotonic() + 5
        while len(reader.marks) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        phases, problems = pair_marks(reader.take())
    finally:
        reader.close()
    assert not reader.path.exists() and not reader.path.parent.exists()
    assert problems == [] and [p[0] for p in phases] == ["load", "solve step"]
    assert phases[0][1] == pytest.approx(w.t_start_s, abs=1e-9) and phases[0][2] == pytest.approx(w.t_end_s, abs=1e-9)
    assert "measured by the parent" in w.reason


def test_pair_marks_reports_what_does_not_pair() -> None:
    from archline.powermon.marks import Mark, pair_marks, parse_line

    assert parse_line("begin a b\t12.5\n", 1.0) == Mark("begin", "a b", 12.5)
    assert parse_line("end x\n", 3.0) == Mark("end", "x", 3.0)
    assert parse_line("start x\n", 3.0) is None and parse_line("begin \n", 3.0) is None
    marks = [Mark("begin", "a", 1), Mark("end", "a", 2), Mark("begin", "a", 3), Mark("end", "a", 4),
             Mark("end", "b", 5), Mark("begin", "c", 6), Mark("begin", "c", 7)]
    phases, problems = pair_marks(marks)
    assert phases == [("a", 1, 2), ("a#2", 3, 4)]
    assert problems == ["phase 'b' ended without a begin; ignored",
                        "phase 'c' begun twice without an end; the second begin ignored",
                        "phase 'c' never ended; not reported"]


def test_import_archline_is_light_and_exports_lazily() -> None:
    code = ("import sys, archline; heavy = [m for m in ('archline.powermon.monitor', 'archline.bench', 'numpy', "
            "'pydantic') if m in sys.modules]; assert not heavy, heavy; "
            "assert archline.Monitor.__module__ == 'archline.powermon.record.recorder'; "
            "assert callable(archline.open_monitor); print(sorted(archline.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    assert "'Measurement'" in out.stdout and "'open_monitor'" in out.stdout


def test_the_bench_runner_measures_through_the_monitor() -> None:
    """One path: the runner's windows are a Monitor's (a Recorder is one: the same class, driven as it is)."""
    from archline.bench.run.rows import MeterInfo, RunContext
    from archline.bench.run.runner import Runner
    from archline.bench.run.session import Session
    from archline.powermon.monitor import Monitor
    from archline.powermon.record.null import NullMeter
    from archline.powermon.record.recorder import Recorder

    rec = Recorder([NullMeter("test")])
    r = Runner(None, rec, MeterInfo("", None, False, "time only: test"),  # type: ignore[arg-type]
               RunContext.new("x", "dev", "fake", False), None)  # type: ignore[arg-type]
    assert isinstance(r.rec, Monitor) and r.rec is rec
    assert Session.__annotations__["recorder"] in ("Monitor", Monitor)


def test_open_windows_is_the_one_way_to_a_recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """powermon.monitor.open_windows: meters kept in order, [[meters]] entries opened (one that cannot be is the
    caller's error), none at all the null meter with the reason, ``start`` names a meter that cannot start."""
    from support.fakes import StartFailsMeter

    from archline.powermon.errors import DeviceError, MeterError
    from archline.powermon.monitor import Monitor, open_windows
    from archline.powermon.record.null import NullMeter
    from archline.powermon.spec import MeterSpec

    rec = open_windows(reason="time only: nothing here")
    assert isinstance(rec, Monitor) and [m.name for m in rec.meters] == ["none"]
    assert rec.reason == "time only: nothing here" and not rec.stopped and rec.open_names == []
    a, b = NullMeter("a", "a"), NullMeter("b", "b")
    rec = open_windows([b, a], settle_timeout_s=1.5, keep_regions=False)
    assert rec.meters == [b, a] and rec.settle_timeout_s == 1.5 and rec.keep_regions is False
    with rec:
        rec.begin_window("x")
        w = rec.end_window_later("x")
        assert not w.measured and w.t0_s is not None and w.t1_s is not None and w.t0_s <= w.t1_s
        m = w.measurement()
        assert w.measured and w.measurement() is m and m.name == "x" and math.isnan(m.energy_j)
    assert rec.stopped

    monkeypatch.setenv("ARCHLINE_POWERCAP_ROOT", str(tmp_path / "no-powercap"))   # no RAPL here, whatever the host
    monkeypatch.setenv("ARCHLINE_PERF_POWER_ROOT", str(tmp_path / "no-perf"))
    spec = MeterSpec(name="cpu", kind="rapl")
    with pytest.raises(DeviceError, match="RAPL"):
        open_windows([spec])
    with pytest.raises(KeyError, match=r"meter 'cpu' \(rapl\)"):
        open_windows([spec], cannot_open=lambda s, e: KeyError(f"meter '{s.name}' ({s.kind}): {e}"))

    bad = StartFailsMeter("ps3")
    with pytest.raises(MeterError, match=r"^sensor meter 'ps3' of platform 'P': its port is gone$"):
        open_windows([NullMeter("ok", "ok"), bad], start=True, labels={"ps3": "sensor meter 'ps3' of platform 'P'"})
    assert bad.stopped == 0
    with pytest.raises(MeterError, match=r"^its port is gone$"):    # no label given: the meter's own words
        open_windows([bad], start=True)
