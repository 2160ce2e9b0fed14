"""Every ``bench run`` option on every path (time-only, metered, emulated): honoured or refused with one line
saying why (issue 14). Honoured options are checked on the session the runner builds (points, settings, meter)
and, for the ones that shape rows, on rows a real run writes. Bad values are errors on every path.

Paths here: time-only = localhost without readable RAPL; metered = localhost with a (fake) readable RAPL zone;
emulated = --emulate on the GTX 580 profile.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.fakes import make_powercap_tree

from archline.bench.config.options import RunOptions
from archline.bench.errors import BenchError
from archline.bench.run.session import Session, open_session, run_once

PATHS = ("time-only", "metered", "emulated")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user profiles; a powercap tree whose zone has a settable limit (caps) and, for 'metered', a counter."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ARCHLINE_PLATFORM_PATH", str(tmp_path / "profiles"))
    (tmp_path / "profiles").mkdir()
    return tmp_path


def _powercap(tmp: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp / "powercap"
    make_powercap_tree(root, {"intel-rapl:0": {"name": "package-0", "energy_uj": 1000,
                                               "max_energy_range_uj": 262143328850}})
    zone = root / "intel-rapl:0"
    (zone / "constraint_0_power_limit_uw").write_text("65000000\n")
    (zone / "constraint_0_max_power_uw").write_text("125000000\n")
    if path == "time-only":     # a limit to set, but no counter to read: no meter
        (zone / "energy_uj").unlink()
    monkeypatch.setenv("ARCHLINE_POWERCAP_ROOT", str(root))


def _opts(path: str, **kw: Any) -> RunOptions:
    if path == "emulated":
        tc = kw.pop("time_compression", 100.0)
        return RunOptions(platform="gtx580", emulate=True, quick=True, time_compression=tc, **kw)
    return RunOptions(platform="localhost", quick=True, **kw)


@contextmanager
def _session(tmp: Path, path: str, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Iterator[Session]:
    _powercap(tmp, path, monkeypatch)
    s = open_session(_opts(path, **kw), restore_file=tmp / "restore.json")
    try:
        assert s.path == path
        yield s
    finally:
        s.close()


def _refused(tmp: Path, path: str, monkeypatch: pytest.MonkeyPatch, says: str, **kw: Any) -> None:
    _powercap(tmp, path, monkeypatch)
    with pytest.raises(BenchError) as e:
        open_session(_opts(path, **kw), restore_file=tmp / "restore.json").close()
    msg = str(e.value)
    assert says in msg and "\n" not in msg, msg


# --- honoured on every path -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", PATHS)
def test_platform_kernel_precision_quick_all_kernels(env: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = "chase" if path != "emulated" else "cache"
    with _session(env, path, monkeypatch, kernels=(kernel,)) as s:
        assert s.ctx.platform == s.profile.name and {p.spec.kernel for p in s.points} == {kernel}
        assert s.settings.max_regions == 3                                     # --quick
    with _session(env, path, monkeypatch, precisions=("sp",)) as s:          # intensity, sp only
        assert {(p.spec.kernel, p.spec.precision) for p in s.points} == {("intensity", "sp")}
    with _session(env, path, monkeypatch, all_kernels=True) as s:
        assert {p.spec.kernel for p in s.points} == set(s.profile.bench.kernels)


@pytest.mark.parametrize("path", PATHS)
def test_reps_and_min_time(env: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with _session(env, path, monkeypatch, reps=3, min_time_s=0.5) as s:
        assert s.settings.fixed_reps == 3 and s.settings.min_region_s == 0.5


@pytest.mark.parametrize("path", PATHS)
def test_power_cap(env: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 150.0 if path == "emulated" else 50.0
    with _session(env, path, monkeypatch, power_caps_w=(cap,)) as s:
        assert {p.power_cap_w for p in s.points} == {cap}
        assert s.set_point is not None
        got = s.set_point(s.points[0])
        assert got["power_cap_w"] == pytest.approx(cap) and got["power_cap_requested_w"] == cap
    assert not (env / "restore.json").exists()      # the RAPL limit was put back when the session closed


@pytest.mark.parametrize("path", PATHS)
def test_rows_on_every_path(env: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One real run per path: --reps and --out honoured, the platform column is the profile's name, the
    default precision is the same rule on every path, the meter column says which path it was."""
    _powercap(env, path, monkeypatch)
    kw: dict[str, Any] = {"kernels": ("cache",), "reps": 2}
    if path != "emulated":
        kw["working_set_bytes"] = 64 << 10
    out = run_once(_opts(path, **kw), env / "out", restore_file=env / "restore.json")
    rows = list(csv.DictReader(out.results.open()))
    assert out.results.parent == env / "out" and rows and out.failed == 0
    assert {r["platform"] for r in rows} == {"gtx580" if path == "emulated" else "localhost"}
    assert {r["reps"] for r in rows} == {"2"}
    if path == "emulated":
        assert {r["precision"] for r in rows} == {"sp"}   # the emulated cache kernel is sp whatever is asked
        assert all(r["meter"].endswith("powermon2-emulated") and float(r["energy_j"]) > 0 for r in rows)
    else:
        assert {r["precision"] for r in rows} == {"dp"}   # non-intensity kernels: dp on every path
        assert {int(r["bytes_l1"] or 0) + int(r["bytes_l2"] or 0) + int(r["bytes_l3"] or 0)
                + int(r["bytes_mem"] or 0) > 0 for r in rows} == {True}
        if path == "metered":
            assert {r["meter"] for r in rows} == {"rapl:rapl"} and all(r["energy_j"] != "" for r in rows)
        else:
            assert {r["meter"] for r in rows} == {""} and all(r["note"].startswith("time only") for r in rows)


# --- path-specific: honoured where they apply, refused elsewhere -------------------------------------------

@pytest.mark.parametrize("path", ("time-only", "metered"))
def test_cpu_options_on_real_paths(env: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.bench.registry import get_backend

    isa = get_backend("cpu_asm").availability()[1].split()[0]
    with _session(env, path, monkeypatch, isa=isa, working_set_bytes=1 << 16, store="none", backend="cpu_asm") as s:
        assert s.backend.name == "cpu_asm"
        assert {(p.spec.params["isa"], p.spec.params["working_set_bytes"], p.spec.params["store"])
                for p in s.points} == {(isa, 1 << 16, "none")}
    _refused(env, path, monkeypatch, "the cpu_asm back end runs on this CPU's cores", device="0")
    _refused(env, path, monkeypatch, "--time-compression does not apply here: it applies to --emulate only",
             time_compression=10.0)
    _refused(env, path, monkeypatch, "--store applies to the cpu_asm back end, not 'opencl'", backend="opencl",
             store="nt")
    _refused(env, path, monkeypatch, "--isa applies to the cpu_asm back end, not 'opencl'", backend="opencl",
             isa="avx2")
    with _session(env, path, monkeypatch, backend="opencl", device="0:0", kernels=("chase",)) as s:
        assert s.backend.name == "opencl" and s.device == "0:0"           # --device honoured by OpenCL


def test_meter_option(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _session(env, "metered", monkeypatch, meter="rapl") as s:
        assert s.meter.label == "rapl:rapl"
    _refused(env, "metered", monkeypatch, "has no meter 'nosuch'", meter="nosuch")
    _refused(env, "time-only", monkeypatch, "--meter does not apply here: platform 'localhost' configures no meter",
             meter="rapl")
    with _session(env, "emulated", monkeypatch, meter="powermon") as s:
        assert s.meter.label == "powermon:powermon2-emulated"


def test_emulated_options(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _session(env, "emulated", monkeypatch, time_compression=20.0, backend="emulated") as s:
        assert s.backend.device.time_compression == 20.0  # type: ignore[attr-defined]
    for kw, says in (({"isa": "avx2"}, "--isa does not apply here"),
                     ({"working_set_bytes": 65536}, "--working-set does not apply here"),
                     ({"store": "nt"}, "--store does not apply here"),
                     ({"device": "0"}, "--device does not apply here"),
                     ({"backend": "cpu_asm"}, "--emulate runs the emulated back end, not 'cpu_asm'"),
                     ({"dvfs_settings": ("S1",)}, "not modelled by the emulated device")):
        _refused(env, "emulated", monkeypatch, says, **kw)


def test_user_localhost_profile_is_honoured(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (env / "profiles" / "localhost.toml").write_text(
        'schema = "archline.platform/1"\nname = "localhost"\n[constants]\n[bench]\nbackend = "cpu_asm"\n'
        'precisions = ["sp"]\n')
    with _session(env, "time-only", monkeypatch) as s:
        assert s.profile.platform.origin.endswith("localhost.toml")
        # --quick: the whole roofline, its peak and DRAM points in the profile's precision (the cache kernel's
        # loads are dp whatever the profile says)
        assert {p.spec.precision for p in s.points if p.spec.kernel == "intensity"} == {"sp"}
        assert s.ctx.platform == "localhost"


# --- bad values: errors on every path ----------------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["--reps", "-1"], "--reps: expected greater than or equal to 1"),
    (["--reps", "0"], "--reps: expected greater than or equal to 1"),
    (["--min-time", "-1"], "--min-time: expected greater than 0"),
    (["--time-compression", "0"], "--time-compression: expected greater than 0"),
    (["--working-set", "abc"], "--working-set: cannot read size 'abc'"),
    (["--working-set", "-5"], "--working-set"),
    (["--power-cap", "-5"], "power caps must be positive watts"),
    (["--precision", "qp"], "--precision must be one of sp, dp, int32, got 'qp'"),
    (["--kernel", "stream"], "--kernel must be one of intensity, cache, chase, int, ceilings"),
    (["--backend", "fpga"], "--backend must be one of"),
])
@pytest.mark.parametrize("path", PATHS)
def test_bad_values_are_errors(env: Path, path: str, args: list[str], says: str, run_cli: Any,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    _powercap(env, path, monkeypatch)
    base = ["--platform", "gtx580", "--emulate"] if path == "emulated" else ["--platform", "localhost"]
    res = run_cli("bench", "run", *base, *args, "--out", str(env / "o"))
    assert res.exit_code == 2 and says in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1
    assert not (env / "o").exists()


def test_sweep_config_unknown_precision_is_an_error(env: Path) -> None:
    from archline.bench.config.sweep import SweepConfigError, load_config

    cfg = env / "s.toml"
    cfg.write_text('[sweep]\nplatform = "gtx580"\nemulate = true\nprecisions = ["qp"]\n')
    with pytest.raises(SweepConfigError, match=r"precisions\[0\] must be one of sp, dp, int32, got 'qp'"):
        load_config(cfg)
    cfg.write_text('[sweep]\nplatform = "gtx580"\nworking_set = "64M"\nreps = 5\n')
    assert load_config(cfg).options.working_set_bytes == 64 << 20


def test_sweep_config_owner_reads_back_what_it_writes(tmp_path: Path) -> None:
    """The sweep config's one owner (formats/sweep_config.py, issue 37): a table it writes is read back key for
    key, validated; writing the same table again leaves the file untouched (the lab's sweep.toml keeps its mtime)."""
    import os

    from archline.bench.config.sweep import SweepTable
    from archline.formats.sweep_config import SweepConfigFile

    read, write = SweepConfigFile.read, SweepConfigFile.write

    table = {"platform": "gtx580", "emulate": True, "kernels": ["intensity", "cache"], "reps": 3, "min_time_s": 0.5,
             "power_caps_w": [150.0, 200.0], "name": 'a "quoted" name', "host": "node03", "working_set": "64M",
             "max_points": 2, "time_compression": 50.0}
    p = tmp_path / "s.toml"
    write(p, table, comment="written by a test")
    assert p.read_text().splitlines()[:2] == ["# written by a test", "[sweep]"]
    f = read(p, SweepTable)
    assert f.raw == table
    assert (f.name, f.out, f.platform) == ('a "quoted" name', tmp_path / 'results/a "quoted" name', "gtx580")
    assert f.table.working_set_bytes == 64 << 20 and f.table.power_caps_w == (150.0, 200.0)
    assert f.table.kernels == ("intensity", "cache") and f.table.max_points == 2 and f.table.host == "node03"
    os.utime(p, ns=(1, 1))
    write(p, table, comment="written by a test")
    assert p.stat().st_mtime_ns == 1
    write(p, {**table, "reps": 4}, comment="written by a test")
    assert p.stat().st_mtime_ns != 1 and read(p, SweepTable).table.reps == 4


# --- the schedule path: --emulate on a platform with no power model (localhost before a fit) --------------------

def _schedule_opts(**kw: Any) -> RunOptions:
    return RunOptions(platform="localhost", emulate=True, quick=True, kernels=("chase",), **kw)


@pytest.mark.parametrize("power", [{"busy_w": 30.0, "idle_w": 10.0}, {"tdp_w": 40.0}])
def test_schedule_path_plays_busy_in_regions_idle_outside(env: Path, monkeypatch: pytest.MonkeyPatch,
                                                          power: dict[str, float]) -> None:
    """The real cpu_asm kernels, an emulated meter playing the schedule: a kernel window reads busy_w x its time,
    the runner's idle windows idle_w x theirs, each within the meter's own bound; rows say so."""
    from archline.bench.emulated.schedule import NOTE, TDP_IDLE_SHARE

    _powercap(env, "time-only", monkeypatch)
    busy_w, idle_w = (40.0, TDP_IDLE_SHARE * 40.0) if "tdp_w" in power else (30.0, 10.0)
    s = open_session(_schedule_opts(**power), restore_file=env / "restore.json")
    try:
        assert s.path == "schedule" and s.backend.name == "cpu_asm" and s.points
        assert s.ctx.emulated and s.meter.emulated and s.meter.sample_hz == 1024.0
        assert s.ctx.note.startswith(NOTE) and f"{busy_w:g} W inside each timed region" in s.ctx.note
        assert f"{idle_w:g} W otherwise" in s.ctx.note and s.ctx.note in s.describe()
        for name, want_w in (("idle-first", idle_w), ("p0-r0", busy_w)):
            s.recorder.begin_window(name)
            time.sleep(0.3)
            (r,) = s.recorder.end_region(name).meters.values()
            assert r.emulated and abs(r.energy_j - want_w * r.duration_s) <= r.energy_err_j + 0.02 * want_w, name
    finally:
        s.close()


def test_schedule_window_energy_is_busy_w_times_the_timed_region(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 #6: the window opens before the kernel's threads start and closes after they stop; its energy must
    be busy_w x time_s (the row's timed region) within the meter's bound, not busy_w x the longer window."""
    from archline.bench.kernels import Counts, RunResult
    from archline.bench.run.runner import Runner

    _powercap(env, "time-only", monkeypatch)
    s = open_session(_schedule_opts(tdp_w=40.0), restore_file=env / "restore.json")
    try:
        runner = Runner(s.backend, s.recorder, s.meter, s.ctx, s.settings, timed_windows=True)
        s.recorder.begin_window("p0-r0")
        time.sleep(0.45)                      # threads start, the timed region (0.3 s), threads join
        region = runner._window("p0-r0", RunResult(time_s=0.3, reps=1, counts=Counts(), checksum_ok=True))
        assert region.energy_j is not None and region.energy_err_j is not None  # type: ignore[union-attr]
        assert abs(region.energy_j - 40.0 * 0.3) <= region.energy_err_j + 0.02 * 40.0   # type: ignore[union-attr]
        # the schedule's energy needs no meter floor: the quick roofline keeps the measured run's short regions
        assert runner.region_target_s() == s.settings.min_region_s and runner.region_reps(0.01) == 3
        metered = Runner(s.backend, s.recorder, s.meter, s.ctx, s.settings)
        assert metered.region_target_s() > s.settings.min_region_s and metered.region_reps(0.01) == 20
    finally:
        s.close()


def test_schedule_path_takes_the_quick_roofline(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 #5: --emulate --quick on localhost (real kernels, a schedule's energy) runs the whole quick
    roofline (SP and DP peaks, caches, DRAM), as the measured quick run does, not the DP memory sweep."""
    from archline.bench.run.points import quick_roofline

    _powercap(env, "time-only", monkeypatch)
    opts = RunOptions(platform="localhost", emulate=True, quick=True, tdp_w=65.0)
    assert quick_roofline(opts)
    s = open_session(opts, restore_file=env / "restore.json")
    try:
        specs = [p.spec for p in s.points]
        assert s.path == "schedule" and s.settings.min_region_s == pytest.approx(0.03)
        assert {sp.precision for sp in specs if sp.kernel == "intensity"} == {"sp", "dp"}
        assert {"l1", "mem"} <= {sp.level for sp in specs} and any(sp.kernel == "cache" for sp in specs)
    finally:
        s.close()



def test_quick_roofline_gives_its_intensity_points_longer_regions(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 #1: the quick roofline's peak and DRAM points (the intensity kernel) run 100 ms regions, its cache
    points 30 ms; --min-time rules every point alike."""
    from archline.bench.run.points import ROOFLINE_INTENSITY_REGION_S, ROOFLINE_REGION_S
    from archline.bench.run.runner import Runner

    _powercap(env, "time-only", monkeypatch)
    for min_time_s, intensity_s, cache_s in ((None, ROOFLINE_INTENSITY_REGION_S, ROOFLINE_REGION_S),
                                             (0.05, 0.05, 0.05)):
        s = open_session(RunOptions(platform="localhost", emulate=True, quick=True, tdp_w=65.0,
                                    min_time_s=min_time_s), restore_file=env / "restore.json")
        try:
            runner = Runner(s.backend, s.recorder, s.meter, s.ctx, s.settings, timed_windows=True)
            by_kernel = {p.spec.kernel: p.spec for p in s.points}
            assert runner.region_target_s(by_kernel["intensity"]) == pytest.approx(intensity_s)
            assert runner.region_target_s(by_kernel["cache"]) == pytest.approx(cache_s)
            assert runner.region_reps(0.001, by_kernel["intensity"]) == round(intensity_s / 0.001)
        finally:
            s.close()

def test_schedule_path_refusals(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _powercap(env, "time-only", monkeypatch)
    for kw, says in (({}, "give --busy-w W and --idle-w W (or --tdp-w W)"),
                     ({"busy_w": 30.0}, "give --busy-w W and --idle-w W"),
                     ({"tdp_w": 40.0, "idle_w": 5.0}, "give --tdp-w alone, or --busy-w and --idle-w"),
                     ({"tdp_w": 40.0, "meter": "rapl"}, "--meter does not apply here"),
                     ({"tdp_w": 40.0, "time_compression": 10.0}, "runs in real time"),
                     ({"tdp_w": 40.0, "power_caps_w": (30.0,)}, "has no cap or clock to set")):
        with pytest.raises(BenchError) as e:
            open_session(_schedule_opts(**kw), restore_file=env / "restore.json").close()
        assert says in str(e.value) and "\n" not in str(e.value), (kw, str(e.value))
    with pytest.raises(BenchError, match="add --emulate"):
        open_session(RunOptions(platform="localhost", quick=True, busy_w=30.0, idle_w=10.0)).close()
    with pytest.raises(BenchError, match="platform 'gtx580' is emulated by its model"):
        open_session(RunOptions(platform="gtx580", emulate=True, quick=True, tdp_w=200.0)).close()
    with pytest.raises(BenchError, match="--tdp-w"):
        RunOptions.from_cli(platform="localhost", emulate=True, tdp_w=0.0)
