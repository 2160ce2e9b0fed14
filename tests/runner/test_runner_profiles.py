"""Profile sections ([bench], [[meters]], [emulate], [dvfs]), localhost detection, the emulated model and the
runner's small parts (issue 7)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from archline.bench.config.profile import (
    ProfileSectionError,
    bench_profile,
    load_bench_profile,
    localhost_profile,
    parse_bench,
)
from archline.bench.emulated.backend import EmulatedBackend
from archline.bench.emulated.device import PowerSchedule
from archline.bench.emulated.model import EmulatedModel
from archline.bench.kernels import Counts
from archline.bench.run.progress import Progress
from archline.bench.run.rows import ResultsFile, ci_halfwidth_rel, repair_tail
from archline.formats.platforms.profiles import load_platform
from archline.formats.schema import row_line
from archline.powermon.errors import MeterError
from archline.powermon.spec import parse_meters


def test_runner_shipped_profiles_have_valid_bench_sections() -> None:
    gtx = load_bench_profile("gtx580")
    pm, ps3 = gtx.meters                     # the PowerMon 2 first (real runs), a PowerSensor3 riser (issue 24)
    assert pm.kind == "powermon2" and pm.rate_hz == 128 and ps3.kind == "powersensor3"
    assert [c.rail for c in pm.channels] == ["pcie_slot_12v", "pcie_slot_3v3", "aux_6pin_12v", "aux_8pin_12v"]
    assert [c.rail for c in ps3.channels] == [c.rail for c in pm.channels]
    assert {c.device for c in pm.channels} == {"gpu"}
    cpu = load_bench_profile("i7-950")
    assert [c.rail for c in cpu.meters[0].channels] == ["atx_3v3", "atx_5v", "atx_12v", "eps_4pin_12v"]
    jet = load_bench_profile("jetson-tk1")
    assert len(jet.dvfs.settings) == 8 and jet.dvfs.core_clock_files[0].endswith("override.gbus/rate")


@pytest.mark.parametrize(("table", "text"), [
    ({"reps": 5, "warmup_repz": 1}, "unknown key 'warmup_repz' (did you mean 'warmup_reps'?)"),
    ({"backend": "cudaa"}, "backend must be one of"),
    ({"kernels": ["intensity", "stream"]}, "kernels[1] must be one of intensity, cache, chase, int, ceilings"),
    ({"reps": True}, "reps: expected a valid integer, got True"),
    ({"sweep": {"intensity_sp": {"min": 4.0, "max": 1.0}}}, "max (1) is below min (4)"),
    ({"sweep": {"intensity_qp": {}}}, "unknown key 'intensity_qp'"),
    ({"min_regions": 5, "max_regions": 2}, "exceeds max_regions"),
])
def test_runner_bench_section_errors_name_the_key(table: dict[str, object], text: str) -> None:
    with pytest.raises(ProfileSectionError) as e:
        parse_bench(table, "p.toml")
    assert text in str(e.value)


@pytest.mark.parametrize(("meters", "text"), [
    ([{"name": "a", "kind": "powermon3"}], "kind must be one of"),
    ([{"name": "a", "kind": "rapl", "zonez": []}], "unknown key 'zonez' (did you mean 'zones'?)"),
    ([{"name": "a", "kind": "powermon2"}], "needs 'channels'"),
    ([{"name": "a", "kind": "powermon2", "channels": [{"id": 9, "rail": "x", "nominal_v": 12.0}]}], "0-7"),
    ([{"name": "a", "kind": "powermon2", "channels": [{"id": 1, "rail": "x", "nominal_v": 12.0, "shunt": 1}]}],
     "unknown key 'shunt'"),
    ([{"name": "a", "kind": "powermon2", "channels": [{"id": 1, "rail": "x", "nominal_v": 12.0, "share": 0.4}]}],
     "sum to 0.4"),
    ([{"name": "a", "kind": "rapl"}, {"name": "a", "kind": "rapl"}], "used twice"),
])
def test_runner_meter_section_errors(meters: list[dict[str, object]], text: str) -> None:
    """The one [[meters]] schema is powermon's; the bench profile raises it as its own error type."""
    with pytest.raises(MeterError) as e:
        parse_meters(meters, "p.toml")
    assert text in str(e.value)
    with pytest.raises(ProfileSectionError) as e2:
        parse_meters(meters, "p.toml", ProfileSectionError)
    assert text in str(e2.value)


def test_runner_localhost_detects_rapl_or_says_why(tmp_path: Path) -> None:
    none = localhost_profile(tmp_path / "missing")
    assert none.meters == () and "time only" in none.detected_note and "no RAPL" in none.detected_note
    z = tmp_path / "pc" / "intel-rapl:0"
    z.mkdir(parents=True)
    (z / "name").write_text("package-0\n")
    (z / "energy_uj").write_text("123\n")
    found = localhost_profile(tmp_path / "pc")
    assert found.meters[0].kind == "rapl" and found.meters[0].zones == ("package-0",)
    assert "RAPL zones: package-0" in found.detected_note


def test_runner_emulated_model_is_the_capped_model() -> None:
    """Time and energy of counted work equal fit's Machine (eq.34/35, eq.32) at the emulated rates."""
    prof = bench_profile(load_platform("gtx580"))
    model = EmulatedModel.from_profile(prof)
    from archline.model.machine import Machine

    m = Machine(tau_flop_s=1 / 1398e9, tau_mem_s_per_byte=1 / 170e9, eps_flop_j=99.7e-12,
                eps_mem_j_per_byte=513e-12, pi0_w=122.0)
    for i in (0.25, 1.0, 8.0, 64.0):
        q = 1 << 30
        c = Counts(flops_sp=round(i * q), bytes_mem=q)
        w = c.flops_sp
        assert model.time_s(c) / w == pytest.approx(float(m.time_per_flop_s(w / q)), rel=1e-12)
        assert model.energy_j(c) / w == pytest.approx(float(m.energy_per_flop_j(w / q)), rel=1e-12)
    capped = model.with_cap(200.0)
    mc = Machine(tau_flop_s=1 / 1398e9, tau_mem_s_per_byte=1 / 170e9, eps_flop_j=99.7e-12,
                 eps_mem_j_per_byte=513e-12, pi0_w=122.0, delta_pi_w=78.0)
    c = Counts(flops_sp=8 << 30, bytes_mem=1 << 30)
    assert capped.power_w(c) == pytest.approx(float(mc.power_w(8.0)), rel=1e-12)
    assert capped.power_w(c) <= 200.0 + 1e-9
    with pytest.raises(Exception, match="allowed range"):
        model.with_cap(100.0)
    assert model.idle_w == 39.6


def test_runner_emulated_sweep_counts_are_exact_and_match_design() -> None:
    be = EmulatedBackend("gtx580")
    sp, dp = be.sweep("intensity", "sp"), be.sweep("intensity", "dp")
    assert (len(sp), len(dp)) == (25, 36)        # model.md §6.4: 25 SP and 36 DP intensity samples
    for spec in sp + dp:
        c = be.counts(spec)
        q, i = int(spec.params["bytes_per_rep"]), float(spec.params["intensity"])
        assert c.bytes_mem == q and c.flops == round(i * q)
        assert c.scaled(7).bytes_mem == 7 * q
    assert {s.level for s in be.sweep("cache", "sp")} == {"l1", "l2"}   # gtx580 gives eps_l1 and eps_l2 only


def test_runner_power_schedule_steps() -> None:
    t = [0.0]
    s = PowerSchedule(10.0, clock=lambda: t[0])
    assert s.power_at(5.0) == 10.0
    t[0] = 1.0
    s.set_now(100.0)
    t[0] = 2.0
    s.set_now(10.0)
    import numpy as np

    got = s.power_array(np.array([0.5, 1.0, 1.5, 2.5]))
    assert got.tolist() == [10.0, 100.0, 100.0, 10.0]


def test_runner_rows_and_files(tmp_path: Path) -> None:
    f = tmp_path / "r.csv"
    ResultsFile(f).append({"schema": "archline.results/1", "note": 'a, "quoted" note', "time_s": 1.5})
    assert f.read_text().count("\n") == 2
    # a file begun with other columns keeps them: rows follow the file's own header
    g = tmp_path / "old.csv"
    g.write_text("schema,time_s\n")
    ResultsFile(g).append({"schema": "archline.results/1", "time_s": 2.0, "energy_j": 1.0})
    assert g.read_text().splitlines()[1] == "archline.results/1,2.0"
    line = row_line({"schema": "x", "emulated": True, "energy_j": math.nan})
    assert line.endswith(b"\n") and b"true" in line
    with open(f, "ab") as fh:
        fh.write(b"partial")
    assert repair_tail(f) == len(b"partial") and f.read_bytes().endswith(b"\n")
    assert ci_halfwidth_rel([1.0]) == math.inf
    assert ci_halfwidth_rel([1.0, 1.0, 1.0]) == 0.0


def test_runner_progress_plain_lines_when_not_a_tty(caplog: pytest.LogCaptureFixture) -> None:
    buf = io.StringIO()
    p = Progress(2, buf, tty=False)
    p.update("intensity/sp", 123.0)       # no live line on a pipe
    with caplog.at_level("INFO", logger="archline.bench"):
        p.point_done("p1", {"time_s": 1.0, "energy_j": 2.0, "power_w": 2.0})
    assert buf.getvalue() == ""
    assert caplog.records[0].getMessage().startswith("point 1/2 p1 time_s=1 energy_j=2 power_w=2")  # rounded
    tty = io.StringIO()
    p = Progress(2, tty, tty=True)
    p.update("intensity/sp", 123.0)
    assert "\r" in tty.getvalue() and "123.0 W" in tty.getvalue() and "ETA" in tty.getvalue()


class _SlowingKernel:
    """A fake prepared kernel whose repetitions get slower (a throttling device) and whose clock drops."""

    def __init__(self, spec: object) -> None:
        from archline.bench.kernels import Counts

        self.spec = spec
        self.counts_per_rep = Counts(flops_dp=1000, bytes_mem=8000)
        self.calls = 0

    def run(self, reps: int) -> object:
        import time

        from archline.bench.kernels import RunResult

        self.calls += 1
        per_rep = 1e-4 * (1.0 + 0.1 * self.calls)
        time.sleep(per_rep * reps)
        clock = 3e9 / (1.0 + 0.1 * self.calls)
        return RunResult(per_rep * reps, reps, self.counts_per_rep.scaled(reps), True,
                         {"effective_clock_hz": clock})

    def close(self) -> None:
        pass


class _FakeBackend:
    name = "fake"

    def prepare(self, spec: object, device: object = None) -> _SlowingKernel:
        return _SlowingKernel(spec)


def _runner(meter: object, info: object, settings: object, platform: str = "x") -> object:
    from archline.bench.run.rows import RunContext
    from archline.bench.run.runner import Runner
    from archline.powermon.record.recorder import Recorder

    rec = Recorder([meter]).start()  # type: ignore[list-item]
    ctx = RunContext.new(platform, "dev", "fake", False)
    return rec, Runner(_FakeBackend(), rec, info, ctx, settings)  # type: ignore[arg-type]


def test_runner_flags_throttling_and_states_time_only_reason() -> None:
    from archline.bench.kernels import KernelSpec
    from archline.bench.run.points import Point, RunSettings
    from archline.bench.run.rows import MeterInfo
    from archline.powermon.record.null import NullMeter

    meter = NullMeter("no meter on this box (test)")
    s = RunSettings(fixed_reps=10, min_regions=3, max_regions=4, min_region_s=0.0, idle_s=0.0, warmup_reps=1)
    rec, r = _runner(meter, MeterInfo("", None, False, meter.reason), s)
    row = r.measure(Point(KernelSpec("fake", "intensity", "dp", "mem", {})), 0)  # type: ignore[attr-defined]
    rec.stop()  # type: ignore[attr-defined]
    assert row["throttled"] is True and "throttling suspected" in row["note"]
    assert "MHz over the regions" in row["note"] and "time only: no meter on this box" in row["note"]
    assert row["energy_j"] is None and row["n_regions"] == 4 and row["reps"] == 10
    assert row["flops_dp"] == 10_000 and row["bytes_mem"] == 80_000


def test_runner_localhost_with_rapl_measures_energy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """localhost on a machine with readable RAPL: the runner reads the package counter around each region."""
    import threading
    import time

    from support.fakes import make_powercap_tree

    from archline.bench.kernels import KernelSpec
    from archline.bench.run.points import Point, RunSettings
    from archline.bench.run.rows import MeterInfo
    from archline.powermon.spec import open_meter

    root = make_powercap_tree(tmp_path / "pc", {"intel-rapl:0": {"name": "package-0", "energy_uj": 0,
                                                                 "max_energy_range_uj": 262143328850}})
    monkeypatch.setenv("ARCHLINE_POWERCAP_ROOT", str(root))
    prof = load_bench_profile("localhost")
    (spec,) = prof.meters
    assert spec.kind == "rapl" and "RAPL zones: package-0" in prof.detected_note
    stop = threading.Event()
    t0 = time.monotonic()

    def burn() -> None:  # the package draws 40 W
        while not stop.is_set():
            tmp = root / "intel-rapl:0" / ".e.tmp"   # atomic, as sysfs reads are
            tmp.write_text(f"{int((time.monotonic() - t0) * 40e6)}\n")
            tmp.replace(root / "intel-rapl:0" / "energy_uj")
            time.sleep(0.002)

    th = threading.Thread(target=burn, daemon=True)
    th.start()
    meter = open_meter(spec)
    try:
        s = RunSettings(reps=200, min_regions=2, max_regions=2, min_samples=100, idle_s=0.0, warmup_reps=1)
        rec, r = _runner(meter, MeterInfo("rapl:rapl", meter.update_hz, False, "rapl"), s, "localhost")
        try:
            row = r.measure(Point(KernelSpec("fake", "intensity", "dp", "mem", {})), 0)  # type: ignore[attr-defined]
        finally:
            rec.stop()  # type: ignore[attr-defined]
    finally:
        stop.set()
        th.join()
    assert row["meter"] == "rapl:rapl" and row["energy_j"] > 0
    assert row["power_w"] == pytest.approx(40.0, rel=0.25)


def test_runner_time_roofline_plot_from_time_only_rows(tmp_path: Path) -> None:
    from archline.fit.plots.inputs import load_plot_inputs, plot_results

    f = tmp_path / "r.csv"
    out = ResultsFile(f)
    for i in (0.25, 1.0, 4.0, 16.0):
        q = 1 << 20
        w = round(i * q)
        t = max(w / 50e9, q / 10e9)
        out.append({"schema": "archline.results/1", "platform": "box", "backend": "cpu_asm",
                    "kernel": "intensity", "precision": "dp", "flops_dp": w, "bytes_mem": q,
                    "time_s": t, "checksum_ok": True})
    (curve,), _ = load_plot_inputs([str(f)], "dp")
    assert curve.time_only
    assert 1 / curve.machine.tau_flop_s == pytest.approx(50e9)
    assert 1 / curve.machine.tau_mem_s_per_byte == pytest.approx(10e9)
    png = plot_results([f], tmp_path / "roof.png", "dp")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
