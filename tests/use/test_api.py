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


def _edges_seen() -> tuple[list[tuple[str, str]], object]:
    """A window hook that records each edge it sees (kind, name)."""
    seen: list[tuple[str, str]] = []

    def hook(kind: str, name: str) -> None:
        seen.append((kind, name))
    return seen, hook


def test_raw_dir_never_overwrites_and_a_bad_raw_dir_is_one_meter_error(tmp_path: Path) -> None:
    """Issue 37 Y#1, #2: a capture of an earlier run is never replaced; an empty raw_dir is not the cwd; a file or a
    device is one MeterError naming raw_dir (nothing opened, nothing written)."""
    import archline

    d = tmp_path / "r"
    d.mkdir()
    (d / "powermon-0000.raw").write_text("precious\n")
    regular = tmp_path / "regfile"
    regular.write_text("x")
    for raw_dir, words in ((d, r"already holds raw captures \(powermon-0000.raw\).*never overwritten"),
                           ("", "raw_dir is empty"), (" ", "raw_dir is empty"),
                           (regular, "regfile is not a directory"), ("/dev/null", "/dev/null is not a directory")):
        with pytest.raises(archline.MeterError, match=words):
            archline.open_monitor("gtx580", emulate=True, busy_w=60.0, idle_w=20.0, raw_dir=raw_dir)
    assert (d / "powermon-0000.raw").read_text() == "precious\n" and sorted(p.name for p in d.iterdir()) == \
        ["powermon-0000.raw"]
    assert regular.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["r", "regfile"]


def test_a_window_open_when_the_monitor_stops_is_cancelled_with_a_warning() -> None:
    """Y#5: a window left open is cancelled at stop (its hooks see a 'cancel' edge: an emulated device goes idle,
    archline measure is told), a RuntimeWarning names it, and ending it afterwards is refused (never measured as
    if the device kept drawing); from_env's marks channel refuses a write once closed (no bare OSError)."""
    import archline
    from archline.powermon.marks import MarksReader, MarksWriter

    seen, hook = _edges_seen()
    mon = archline.Monitor([archline.NullMeter("test")], hooks=[hook])  # type: ignore[list-item]
    with pytest.warns(RuntimeWarning, match=r"window\(s\) 'x', 'y' still open when the monitor stopped: cancelled"):
        with mon:
            mon.begin_window("x")
            mon.begin_window("y")
            with mon.window("done"):
                pass
    assert mon.open_names == [] and mon.stopped
    assert seen == [("begin", "x"), ("begin", "y"), ("begin", "done"), ("end", "done"), ("cancel", "x"),
                    ("cancel", "y")]
    assert [(m.name, m.kind) for m in mon.marks][-2:] == [("x", "cancel"), ("y", "cancel")]
    with pytest.raises(archline.MeterError, match="'x' was still open when the monitor stopped and was cancelled"):
        mon.end_window("x")
    with pytest.raises(archline.MeterError, match="'z' cannot be ended: this monitor is stopped"):
        mon.end_window("z")
    mon.cancel_window("x")                                 # cancelled already (a tuner's clean-up): nothing to do
    with pytest.raises(archline.MeterError, match="'z' cannot be ended: this monitor is stopped"):
        mon.cancel_window("z")
    with pytest.raises(archline.MeterError, match="stopped"):
        mon.begin_window("again")
    assert len(seen) == 6                                  # nothing after the stop reached a hook
    reader = MarksReader()
    try:
        w = MarksWriter(reader.path)
        w.close()
        with pytest.raises(archline.MeterError, match=r"marks channel .* is closed"):
            w("end", "x")
    finally:
        reader.close()


def test_edges_given_are_finite_in_order_and_never_in_the_future() -> None:
    """Y#3, #4: a window ending after now (no samples yet) is refused, never 0 J with a bound of 0; end_window's
    t0_s/t1_s are held to the same rules as window_between's (one given: the other is the window's own edge)."""
    import archline

    with archline.Monitor([archline.NullMeter("test")]) as mon:
        t = time.monotonic()
        with pytest.raises(archline.MeterError, match=r"^window 'future' ends 1\d(\.\d+)? s after now"):
            mon.window_between("future", t + 10, t + 11)
        with pytest.raises(archline.MeterError, match=r"^window 'rev' ends 1 s before it begins: give t0_s <= t1_s"):
            mon.window_between("rev", t, t - 1)
        tb = mon.begin_window("d")
        with pytest.raises(archline.MeterError, match=r"^window 'd' ends [45](\.\d+)? s after now"):
            mon.end_window("d", t1_s=tb + 5)
        with pytest.raises(archline.MeterError, match=r"^window 'd' ends 1 s before it begins"):
            mon.end_window("d", t1_s=tb - 1)
        with pytest.raises(archline.MeterError, match=r"^window 'd': its edges must be finite"):
            mon.end_window("d", t0_s=math.nan, t1_s=tb)
        assert mon.open_names == ["d"]                   # a refused edge leaves the window open
        t1 = time.monotonic()
        m = mon.end_window("d", t1_s=t1)
        assert (m.t_start_s, m.t_end_s) == (tb, t1)
        assert "future" not in mon.open_names and mon.open_names == []


def test_a_window_handle_says_why_it_has_no_numbers() -> None:
    """Y#6: a cancelled window says it was cancelled; end_window_later's handle says to call .measurement()."""
    import archline

    with archline.Monitor([archline.NullMeter("test")]) as mon:
        with pytest.raises(ValueError), mon.window("exc") as we:
            raise ValueError("boom")
        with pytest.raises(archline.MeterError, match=r"^window 'exc' was cancelled .*: it has no energy_j$"):
            _ = we.energy_j
        with pytest.raises(archline.MeterError, match="was cancelled"):
            we.measurement()
        mon.begin_window("later")
        h = mon.end_window_later("later")
        with pytest.raises(archline.MeterError, match=r"^window 'later' is closed .*call \.measurement\(\) first"):
            _ = h.time_s
        assert h.measurement().name == "later" and h.time_s >= 0


def test_each_call_of_a_measured_function_is_a_window_also_from_threads_and_recursion() -> None:
    """Y#7: overlapping calls (four threads at once, recursion) are windows step, step#2, ...: none refused."""
    import threading

    import archline

    with archline.Monitor([archline.NullMeter("test")]) as mon:
        gate = threading.Barrier(4)

        @mon.measure("step")
        def step() -> None:
            gate.wait(5)                       # all four windows are open at once
        errors: list[BaseException] = []

        def call() -> None:
            try:
                step()
            except BaseException as e:     # collected, asserted empty below
                errors.append(e)
        threads = [threading.Thread(target=call) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(10)
        assert errors == []
        assert sorted(m.name for m in mon.measurements) == ["step", "step#2", "step#3", "step#4"]

        @mon.measure()
        def down(n: int) -> int:
            return n if n == 0 else down(n - 1) + 1
        assert down(2) == 2
        assert [m.name for m in mon.measurements[4:]] == [f"{down.__qualname__}#3", f"{down.__qualname__}#2",
                                                          down.__qualname__]
        assert mon.open_names == []


def test_two_meters_on_one_device_are_refused_for_windows() -> None:
    """Y#13: a window adds every meter's energy, so two meters on one device would count it twice: refused (the
    per-meter Region of begin/end, as meter calibrate reads its reference and sensor, stays)."""
    import archline
    from archline.powermon.spec import MeterSpec

    def meter(name: str, kind: str) -> archline.NullMeter:
        m = archline.NullMeter("test", name)
        m.spec = MeterSpec(name=name, kind=kind)       # type: ignore[attr-defined]
        return m

    mon = archline.Monitor([meter("a", "rapl"), meter("b", "hwmon")])
    with mon:
        with pytest.raises(archline.MeterError, match=r"meters 'a' and 'b' both measure cpu: .*counted twice"):
            mon.begin_window("w")
        with pytest.raises(archline.MeterError, match="both measure cpu"):
            mon.window_between("w", time.monotonic(), time.monotonic())
        mon.begin("raw")
        assert set(mon.end("raw").meters) == {"a", "b"}
    with pytest.raises(archline.MeterError, match="'a' and 'b' both measure gpu, node"):
        archline.Monitor([meter("a", "nvml"), meter("b", "ipmi"), meter("c", "rapl")]).begin_window("w")
    with archline.Monitor([meter("a", "rapl"), meter("b", "nvml")]) as ok, ok.window("w") as w:
        pass
    assert w.time_s >= 0


def test_from_env_refuses_a_name_the_parent_would_read_otherwise() -> None:
    """Y#9: a window name from_env cannot send as it is (line breaks, white space at an end, a lone surrogate) is
    one MeterError in the child, never a phase renamed on the way or a bare UnicodeEncodeError."""
    import archline
    from archline.powermon.marks import MarksReader

    reader = MarksReader()
    try:
        with archline.Monitor.from_env({archline.MARKS_ENV: str(reader.path)}) as mon:
            for bad in ("a\nend b", "  pad  ", "tab\there", "two  spaces", "cr\r", "ls\u2028", "bad\udcffname"):
                with pytest.raises(archline.MeterError, match="window name"):
                    mon.begin_window(bad)
            assert mon.open_names == []
            with mon.window("fine name é"):
                pass
        time.sleep(0.05)
        assert [(m.kind, m.name) for m in reader.take()] == [("begin", "fine name é"), ("end", "fine name é")]
    finally:
        reader.close()


def test_plain_mistakes_are_one_error_that_says_what_to_do() -> None:
    """Y#14, #15: no meters but a string or None, a power given as a string, localhost emulated without a power
    model: each one error saying what works (never an AttributeError or TypeError from inside)."""
    import archline
    from archline.bench.emulated.model import EmulationError
    from archline.bench.errors import BenchError
    from archline.powermon.monitor import open_windows

    for bad, shown in (("x", "got 'x'"), ([None], "got None in the list"), (3, "got 3")):
        with pytest.raises(archline.MeterError, match=r"^a monitor takes a list of meters .*" + re.escape(shown)):
            archline.Monitor(bad)  # type: ignore[arg-type]
    with pytest.raises(archline.MeterError, match="got None in the list"):
        open_windows([None])
    with pytest.raises(BenchError, match=r"busy_w must be a finite number of watts >= 0, got '60'"):
        archline.open_monitor("gtx580", emulate=True, busy_w="60", idle_w=20.0)  # type: ignore[arg-type]
    with pytest.raises(EmulationError, match=r"no value for pi0 .*fit one .*archline measure --platform localhost "
                                             r"--emulate --busy-w W --idle-w W"):
        archline.open_monitor("localhost", emulate=True, busy_w=60.0, idle_w=20.0)
