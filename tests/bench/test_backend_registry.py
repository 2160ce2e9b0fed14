"""The back-end registry (bench/registry.py, issue 37 item 2): every back end is one folder declaring a
BackendInfo, and third parties add theirs through the ``archline.backends`` entry point group. A toy back end is
written into tmp_path as an installed distribution (a module and its ``.dist-info`` with ``entry_points.txt``, which
importlib.metadata discovers on sys.path) and used with no change to archline: ``bench run`` writes its rows,
``bench list``, ``bench run --help`` and shell completion name it; a broken plugin is one warning line."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.shell_completion import BashComplete
from click.testing import CliRunner

from archline.bench import registry
from archline.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]

TOY = '''
"""A toy back end: one 'intensity' kernel whose device takes 1 ms per repetition (it computes its checksum)."""
from archline.bench.kernels import BackendBase, Counts, KernelSpec, RunResult
from archline.bench.registry import BackendInfo

N_ELEMS = 1000


class ToyPrepared:
    def __init__(self, spec):
        self.spec = spec
        f = int(spec.params["fma_per_elem"])
        self.counts_per_rep = Counts(flops_dp=2 * f * N_ELEMS, bytes_mem=8 * N_ELEMS)

    def run(self, reps):
        total = sum(range(N_ELEMS)) * reps
        return RunResult(time_s=1e-3 * reps, reps=reps, counts=self.counts_per_rep.scaled(reps),
                         checksum_ok=total == N_ELEMS * (N_ELEMS - 1) // 2 * reps, extra={"device": "toy"})

    def close(self):
        pass


class ToyBackend(BackendBase):
    name = "toy"

    def availability(self):
        return True, "the toy device (a test's plugin)"

    def describe(self):
        return [{"name": "intensity", "precision": "dp", "level": "mem", "available": True, "reason": ""}]

    def sweep(self, kernel, precision, *, quick=False):
        return [KernelSpec("toy", kernel, precision, "mem", {"fma_per_elem": f}) for f in (1, 4, 16)]

    def prepare(self, spec, device=None):
        return ToyPrepared(spec)


BACKEND = BackendInfo(name="toy", opener=ToyBackend, help="a toy device from a plugin", device_kind="gpu",
                      kernels=("intensity",), precisions=("dp",), control_vendors=())
'''


def _install_toy(where: Path, *, broken: bool = False) -> Path:
    """``toy_backend`` as pip would leave it in a target directory: the module and its dist-info."""
    (where / "toy_backend.py").write_text(TOY)
    info = where / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    eps = "[archline.backends]\ntoy = toy_backend:BACKEND\n"
    if broken:
        eps += "broken = toy_backend_missing:BACKEND\nnot_info = toy_backend:ToyBackend\n"
    (info / "entry_points.txt").write_text(eps)
    return where


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(_install_toy(tmp_path)))
    registry.backends.cache_clear()
    yield tmp_path
    registry.backends.cache_clear()     # the next test sees the built-in back ends only
    sys.modules.pop("toy_backend", None)


def test_the_gpu_vendors_and_the_emulator_are_declared_in_their_back_ends_folders() -> None:
    """Issue 37: the controls and --emulate read these declarations, not the names. cuda's NVML and hip's AMD SMI
    each in its own folder; opencl declares none, so its device takes every vendor's, NVML's first (as before)."""
    from archline.bench.cuda.vendor import NvmlPowerLimit
    from archline.bench.hip.vendor import AmdSmiClockRange
    from archline.powermon.counters.nvml import NvmlGpu

    known = registry.backends()
    assert [v.name for v in registry.gpu_vendors()] == ["nvml", "amdsmi"]
    assert [v.name for v in known["cuda"].vendors()] == ["nvml"] and [v.name for v in known["hip"].vendors()] == [
        "amdsmi"]
    assert [v.name for v in known["opencl"].vendors()] == ["nvml", "amdsmi"]
    nvml, amdsmi = registry.gpu_vendors()
    assert nvml.power is NvmlPowerLimit and amdsmi.clock is AmdSmiClockRange and nvml.layer is NvmlGpu
    assert nvml.power(object(), 1).kind == "nvml_power" and amdsmi.clock(object(), 0, "mem").kind == "amdsmi_mem_clock"
    assert registry.emulator().name == "emulated" and registry.emulator().steady_power is not None


def test_the_built_in_back_ends_each_declare_themselves_in_their_folder() -> None:
    known = registry.backends()
    assert list(known) == ["cpu_asm", "opencl", "cuda", "hip", "emulated"]
    for name, info in known.items():
        assert info.name == name and isinstance(info.opener, str)
        assert info.opener.startswith(f"archline.bench.{name}.backend:")   # opened from its own folder
    assert registry.names(emulated=False) == ("cpu_asm", "opencl", "cuda", "hip")
    assert registry.of_kind("gpu") == ("opencl", "cuda", "hip") and registry.of_kind("cpu") == ("cpu_asm",)
    assert registry.taking("isa") == ("cpu_asm",) and registry.takers("store") == "the cpu_asm back end"


def test_every_optional_capability_is_a_declared_member() -> None:
    """What session.py and points.py call on a back end is in the Backend protocol, with a default in BackendBase:
    a back end that declares none of them still answers each."""
    from archline.bench.kernels import Backend, BackendBase

    class Bare(BackendBase):
        name = "bare"

    b = Bare()
    assert (b.has_roofline, b.sweeps_profile_ranges) == (False, False)
    assert b.kernel_precisions("intensity") is None and b.check_device("0") is None and b.plan_notes() == []
    assert b.check_plans([], None) is None
    for member in ("has_roofline", "sweeps_profile_ranges", "kernel_precisions", "check_device", "check_plans",
                   "plan_notes", "roofline"):
        assert hasattr(BackendBase, member) and (member in Backend.__annotations__ or member in vars(Backend))
    with pytest.raises(NotImplementedError, match="has no quick roofline"):
        b.roofline(("dp",))


def test_a_plugin_back_end_is_listed_helped_and_completed(toy: Path) -> None:
    assert "toy" in registry.names(emulated=False) and registry.of_kind("gpu")[-1] == "toy"
    runner = CliRunner()
    res = runner.invoke(cli, ["bench", "list", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert '"backend": "toy"' in res.output and "the toy device (a test's plugin)" in res.output
    res = runner.invoke(cli, ["bench", "run", "--help"])
    assert res.exit_code == 0 and "cpu_asm, opencl, cuda, hip, toy" in " ".join(res.output.split())
    got = BashComplete(cli, {}, "archline", "_ARCHLINE_COMPLETE").get_completions(["bench", "run", "--backend"], "t")
    assert [(c.value, c.help) for c in got] == [("toy", "a toy device from a plugin")]


def test_a_plugin_back_end_runs_end_to_end_and_a_broken_one_is_one_warning(tmp_path: Path) -> None:
    """A real `archline bench run --backend toy` in a fresh interpreter that finds the plugin by its dist-info."""
    (tmp_path / "site").mkdir()
    where = _install_toy(tmp_path / "site", broken=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), os.environ.get("PYTHONPATH", "")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("ARCHLINE_PLATFORM_PATH", None)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", "from archline.cli.main import main; main()", "bench", "run",
                        "--backend", "toy", "--quick", "--reps", "2", "--min-time", "0.001", "--out", str(out)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if "back-end plugin" in ln]
    assert warnings == [
        "archline: warning: back-end plugin 'broken' (toy-backend, toy_backend_missing:BACKEND) cannot be loaded: "
        "ModuleNotFoundError: No module named 'toy_backend_missing'; it is left out",
        "archline: warning: back-end plugin 'not_info' (toy-backend, toy_backend:ToyBackend) is a type, not a "
        "BackendInfo; it is left out"]                                         # each said once: the lookup is cached
    rows = [row for f in sorted(out.rglob("*.csv")) for row in csv.DictReader(f.open())]
    assert len(rows) == 3 and {r["backend"] for r in rows} == {"toy"}
    assert sorted(int(r["flops_dp"]) // int(r["reps"]) for r in rows) == [2000, 8000, 32000]
    assert {r["kernel"] for r in rows} == {"intensity"} and {r["precision"] for r in rows} == {"dp"}



# ---- a hostile plugin (issue 37 item 2, the plugin author's findings 1-5, 9, 10, 12-14): never trusted ----------

HOSTILE = """
import os, sys
from archline.bench.kernels import BackendBase, Counts, KernelSpec, RunResult
from archline.bench.registry import BackendInfo

MODE = lambda: os.environ.get("HOSTILE_MODE", "")
N = 1000


class Prepared:
    def __init__(self, spec):
        self.spec = spec
        self.counts_per_rep = Counts(flops_dp=2 * N, bytes_mem=8 * N)

    def run(self, reps):
        m = MODE()
        if m == "raise_run":
            raise RuntimeError("kernel crashed")
        if m == "exit_run":
            sys.exit(3)
        t = {"nan_time": float("nan"), "neg_time": -1e-3, "zero_time": 0.0}.get(m, 1e-4 * reps)
        c = Counts(flops_dp=-2 * N * reps) if m == "neg_counts" else self.counts_per_rep.scaled(reps)
        return RunResult(time_s=t, reps=reps, counts=c, checksum_ok=m != "checksum_fail")

    def close(self):
        pass


class Hostile(BackendBase):
    def __init__(self, **options):
        if MODE() == "raise_open":
            raise RuntimeError("open exploded")

    def availability(self):
        return "yes please" if MODE() == "avail_garbage" else (True, "the hostile device")

    def describe(self):
        if MODE() == "describe_raise":
            raise RuntimeError("describe exploded")
        if MODE() == "describe_garbage":
            return [{"oops": 1}, 7]
        return [dict(name="intensity", precision="dp", level="mem", available=True, reason="")]

    def sweep(self, kernel, precision, *, quick=False):   # takes no threads=, though it declares the option
        return [KernelSpec("toy_be", kernel, precision, "mem", {"fma_per_elem": 1})]

    def prepare(self, spec, device=None):
        if MODE() == "raise_prepare":
            raise RuntimeError("prepare exploded")
        return Prepared(spec)


if os.environ.get("HOSTILE_NAME") is not None:
    Hostile.name = os.environ["HOSTILE_NAME"]
if os.environ.get("HOSTILE_LOAD") == "exit":
    sys.exit(3)
if os.environ.get("HOSTILE_LOAD") == "print":
    print("HELLO FROM PLUGIN")


def version():
    if MODE() == "version_raise":
        raise RuntimeError("no version here")
    return "hostile 0.1\\n(built today)"


BACKEND = BackendInfo(name="hostile", opener=Hostile, help="a hostile plugin", device_kind="cpu",
                      kernels=("intensity",), precisions=("dp",), options=frozenset({"threads"}),
                      version_line="hostile_backend:version")
VENDOR = BackendInfo(name="badvendor", opener=Hostile, help="its GPU vendor is missing", device_kind="gpu",
                     control_vendors=("hostile_missing:VENDOR",))
NOOPEN = BackendInfo(name="noopen", opener="hostile_missing:Backend", help="its opener is missing", device_kind="cpu")
EMPTY = BackendInfo(name="", opener=Hostile, help="no name", device_kind="cpu")
SPACED = BackendInfo(name="my backend", opener=Hostile, help="two words", device_kind="cpu")
NEWLINE = BackendInfo(name="two\\nlines", opener=Hostile, help="a newline", device_kind="cpu")
BANANA = BackendInfo(name="banana", opener=Hostile, help="a fruit", device_kind="banana")
FP8 = BackendInfo(name="fp8", opener=Hostile, help="a precision", device_kind="cpu", precisions=("fp8",))
TURBO = BackendInfo(name="turbo", opener=Hostile, help="an option", device_kind="cpu", options=frozenset({"turbo"}))
"""

HOSTILE_EPS = {name: f"hostile_backend:{attr}" for name, attr in (
    ("hostile", "BACKEND"), ("noopen", "NOOPEN"), ("badvendor", "VENDOR"),
    ("empty", "EMPTY"), ("spaced", "SPACED"), ("newline", "NEWLINE"),
    ("banana", "BANANA"), ("fp8", "FP8"), ("turbo", "TURBO"))}


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    where = tmp_path / "site"
    (where / "hostile_backend-0.1.dist-info").mkdir(parents=True)
    (where / "hostile_backend.py").write_text(HOSTILE)
    info = where / "hostile_backend-0.1.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[archline.backends]\n" + "".join(f"{k} = {v}\n" for k, v in HOSTILE_EPS.items()))
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.chdir(tmp_path)
    for var in ("HOSTILE_MODE", "HOSTILE_NAME", "HOSTILE_LOAD"):
        monkeypatch.delenv(var, raising=False)
    sys.modules.pop("hostile_backend", None)
    registry.backends.cache_clear()
    yield tmp_path
    registry.backends.cache_clear()
    sys.modules.pop("hostile_backend", None)


def _run(run_cli: Any, *args: str) -> Any:
    return run_cli("bench", "run", "--backend", "hostile", "--reps", "2", "--min-time", "0.001", "--out", "o", *args)


def _one_error(res: Any, code: int, *parts: str) -> None:
    """Exit ``code``, no traceback, and the error is one line holding every part."""
    assert res.exit_code == code, res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("archline: error:")]
    assert len(errors) == 1 and all(p in errors[0] for p in parts), res.stderr


def test_a_plugin_declaration_that_is_not_a_back_end_is_one_warning_each(
        hostile: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Findings 5 and 16: no empty or two-word name, no unknown device kind, precision or option; each refusal is one
    line naming the distribution and the entry point (a newline in a name is escaped, never printed)."""
    assert [n for n in registry.names() if n not in ("cpu_asm", "opencl", "cuda", "hip", "emulated")] == [
        "hostile", "noopen", "badvendor"]
    got = sorted(r.getMessage() for r in caplog.records if "back-end plugin" in r.getMessage())
    who = "archline: warning: back-end plugin '{}' (hostile-backend, hostile_backend:{}) "
    assert got == sorted([
        who.format("banana", "BANANA") + "declares device_kind 'banana', not one of cpu, gpu, model; it is left out",
        who.format("empty", "EMPTY") + "names back end '', which is not a name (letters, digits, _); it is left out",
        who.format("fp8", "FP8") + "declares precision 'fp8', not one of dp, int32, sp; it is left out",
        who.format("newline", "NEWLINE") + "names back end 'two\\nlines', which is not a name (letters, digits, _); "
                                           "it is left out",
        who.format("spaced", "SPACED") + "names back end 'my backend', which is not a name (letters, digits, _); "
                                         "it is left out",
        who.format("turbo", "TURBO") + "declares option 'turbo', not one of cpus, isa, store, threads; it is left "
                                       "out"])
    assert all("\n" not in m for m in got)


def test_a_plugin_exiting_at_import_is_left_out(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                run_cli: Any) -> None:
    """sys.exit() at a plugin's import (SystemExit) is a warning, not the end of archline."""
    monkeypatch.setenv("HOSTILE_LOAD", "exit")
    res = run_cli("bench", "run", "--help")
    assert res.exit_code == 0 and "hostile" not in res.stdout and "cpu_asm, opencl, cuda, hip" in " ".join(
        res.stdout.split())
    assert "archline: warning: back-end plugin 'hostile' (hostile-backend, hostile_backend:BACKEND) cannot be " \
           "loaded: SystemExit: 3; " \
           "it is left out" in res.stderr.splitlines()[0]
    assert len(res.stderr.splitlines()) == len(HOSTILE_EPS)     # one line per entry point of the module


def test_an_empty_backend_name_is_refused_not_the_default(hostile: Path, run_cli: Any) -> None:
    """Finding 5: --backend '' once ran the profile's default back end (cpu_asm) in full."""
    _one_error(run_cli("bench", "run", "--backend", "", "--out", "o"), 2,
               "--backend must be one of cpu_asm, opencl, cuda, hip, emulated, hostile, noopen, badvendor, got ''")
    assert not (hostile / "o").exists()


def test_a_plugin_back_end_runs_under_its_registered_name(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                          run_cli: Any) -> None:
    """Findings 1 and 3: rows, point ids and the header carry the registered name (its specs said toy_be; its class
    has no `name`); it is a CPU back end on localhost, yet never becomes localhost's kept roofline. Finding 2: its
    counts are the whole run(reps) call's, and the rows' throughput is theirs over its time."""
    from archline.formats.ert_roofline import host_roofline_path

    res = _run(run_cli)
    assert res.exit_code == 0, res.stderr
    assert "backend hostile" in res.stderr
    rows = [r for f in sorted((hostile / "o").glob("*.csv")) for r in csv.DictReader(f.open())]
    assert len(rows) == 1 and rows[0]["backend"] == "hostile" and rows[0]["point_id"].startswith("hostile:")
    assert int(rows[0]["flops_dp"]) == 2000 * int(rows[0]["reps"]) and rows[0]["reps"] == "2"
    assert float(rows[0]["time_s"]) == pytest.approx(2e-4)   # 1e-4 s per repetition, the call's total
    assert list((hostile / "o").glob("*.roofline.json")) and not host_roofline_path().exists()


def test_a_plugin_calling_itself_a_built_in_is_refused(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                       run_cli: Any) -> None:
    from archline.formats.ert_roofline import host_roofline_path

    monkeypatch.setenv("HOSTILE_NAME", "cpu_asm")
    _one_error(_run(run_cli), 4, "backend 'hostile' (plugin hostile-backend) calls itself 'cpu_asm'; a back end's "
                                 "rows carry the name it registered")
    assert not (hostile / "o").exists() and not host_roofline_path().exists()


@pytest.mark.parametrize(("args", "says"), [
    (("--kernel", "cache"), "has no kernel 'cache' (it declares intensity)"),
    (("--kernel", "ceilings"), "has no kernel 'ceilings' (it declares intensity)"),
    (("--precision", "sp"), "does not run intensity at sp (it declares dp)"),
    (("--kernel", "int", "--precision", "int32"), "has no kernel 'int'"),
])
def test_a_plugin_runs_only_the_kernels_and_precisions_it_declares(hostile: Path, run_cli: Any,
                                                                   args: tuple[str, ...], says: str) -> None:
    """Finding 4: its BackendInfo's kernels and precisions hold; completion offers only its kernels."""
    _one_error(_run(run_cli, *args), 2, "nothing to run", says)
    assert not (hostile / "o").exists()


def test_completion_offers_a_back_ends_own_kernels_and_says_no_warning(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    complete = BashComplete(cli, {}, "archline", "_ARCHLINE_COMPLETE")
    got = complete.get_completions(["bench", "run", "--backend", "hostile", "--kernel"], "")
    assert [c.value for c in got] == ["intensity"]
    got = complete.get_completions(["bench", "run", "--kernel"], "")
    assert [c.value for c in got] == ["intensity", "cache", "chase", "int", "ceilings"]
    assert [c.value for c in complete.get_completions(["bench", "run", "--backend"], "")][-3:] == [
        "hostile", "noopen", "badvendor"]
    assert capsys.readouterr().err == ""     # the six refused declarations say nothing on a Tab press


@pytest.mark.parametrize(("mode", "says"), [
    ("raise_prepare", " failed in prepare(): RuntimeError: prepare exploded"),
    ("raise_run", " failed in run(): RuntimeError: kernel crashed"),
    ("exit_run", " failed in run(): SystemExit: 3"),
    ("nan_time", ": run(1) reported time_s=nan, not a time (finite, > 0 s)"),
    ("neg_time", ": run(1) reported time_s=-0.001, not a time (finite, > 0 s)"),
    ("zero_time", ": run(1) reported time_s=0.0, not a time (finite, > 0 s)"),  # once a hang: sized to 1e9 reps
    ("neg_counts", ": run(1) counted flops_dp=-2000, not a count (an integer >= 0)"),
])
def test_a_plugin_fault_inside_a_point_fails_that_point_alone(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                              run_cli: Any, mode: str, says: str) -> None:
    """Findings 9 and 10: exit 3, the point's message names the back end and the hook, no traceback, no row."""
    monkeypatch.setenv("HOSTILE_MODE", mode)
    res = _run(run_cli)
    _one_error(res, 3, "1 point(s) failed", "no row was written")
    assert ("point hostile:intensity/dp/mem[fma_per_elem=1] failed: backend 'hostile' (plugin hostile-backend)"
            + says) in res.stderr.splitlines()
    assert not list(hostile.rglob("*.csv"))


def test_a_plugin_fault_when_opened_is_the_back_end_unusable(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                             run_cli: Any) -> None:
    """Findings 9, 12 and 13: opening, availability and sweep faults, and an opener that cannot be imported, are
    one line, exit 4 (a missing dependency is a reason, as a built-in's missing library is)."""
    monkeypatch.setenv("HOSTILE_MODE", "raise_open")
    _one_error(_run(run_cli), 4, "backend 'hostile' (plugin hostile-backend) cannot be opened: RuntimeError: "
                                 "open exploded")
    monkeypatch.setenv("HOSTILE_MODE", "avail_garbage")
    _one_error(_run(run_cli), 4, "availability() gave 'yes please', not (usable, reason)")
    monkeypatch.delenv("HOSTILE_MODE")
    _one_error(_run(run_cli, "--threads", "1"), 4, "failed in sweep(): TypeError:", "'threads'")
    res = run_cli("bench", "run", "--backend", "noopen", "--out", "o")
    _one_error(res, 4, "backend 'noopen' (plugin hostile-backend) cannot be opened", "cannot be loaded",
               "No module named 'hostile_missing'")
    assert not (hostile / "o").exists()


@pytest.mark.parametrize("mode", ["describe_raise", "describe_garbage", "avail_garbage", "raise_open"])
def test_bench_list_shows_a_broken_plugin_as_not_usable(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                        run_cli: Any, mode: str) -> None:
    """Finding 9: the listing goes on, the broken back end is 'no' with its reason on one line."""
    import json

    monkeypatch.setenv("HOSTILE_MODE", mode)
    res = run_cli("bench", "list", "--format", "json")
    assert res.exit_code == 0, res.stderr
    listed = {b["backend"]: b for b in json.loads(res.stdout)}
    assert list(listed)[:5] == ["cpu_asm", "opencl", "cuda", "hip", "emulated"]
    assert listed["hostile"]["available"] is False and listed["hostile"]["kernels"] == []
    assert listed["hostile"]["reason"].startswith("backend 'hostile' (plugin hostile-backend)")
    assert "\n" not in listed["hostile"]["reason"]


def test_every_checksum_failing_is_exit_3_with_no_roofline(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                           run_cli: Any) -> None:
    """Finding 14: the rows are kept (checksum_ok false), but no figure is measured: no roofline.json, no plot,
    exit 3 (points failed), not 2 ('nothing to plot': the input was not bad)."""
    monkeypatch.setenv("HOSTILE_MODE", "checksum_fail")
    res = _run(run_cli)
    _one_error(res, 3, "1 point(s) failed their checksum")
    rows = [r for f in sorted((hostile / "o").glob("*.csv")) for r in csv.DictReader(f.open())]
    assert [r["checksum_ok"] for r in rows] == ["False"] or [r["checksum_ok"] for r in rows] == ["false"]
    assert not list((hostile / "o").glob("*.json")) and not list((hostile / "o").glob("*.png"))


def test_a_plugin_printing_at_import_leaves_stdout_to_archline(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                               run_cli: Any) -> None:
    import json

    monkeypatch.setenv("HOSTILE_LOAD", "print")
    res = run_cli("bench", "list", "--format", "json")
    assert res.exit_code == 0 and "hostile" in [b["backend"] for b in json.loads(res.stdout)]
    assert ("archline: warning: back-end plugin 'hostile' (hostile-backend, hostile_backend:BACKEND) printed 18 "
            "character(s) on stdout when loaded; dropped (stdout is archline's)") in res.stderr.splitlines()


def test_a_plugins_version_line_and_gpu_vendor_cannot_break_others(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture,
                                                                   run_cli: Any) -> None:
    """archline --version gives the plugin's line on one line, or says its fault there; the controls' vendors are
    the built-ins' when a plugin's cannot be imported (one warning)."""
    res = run_cli("--version")
    assert res.exit_code == 0 and "hostile 0.1 (built today)" in res.stdout.splitlines()
    monkeypatch.setenv("HOSTILE_MODE", "version_raise")
    res = run_cli("--version")
    assert res.exit_code == 0
    assert ("hostile (plugin hostile-backend): no version line (RuntimeError: no version here)"
            in res.stdout.splitlines())
    assert [v.name for v in registry.gpu_vendors()] == ["nvml", "amdsmi"]
    assert ("archline: warning: GPU vendor hostile_missing:VENDOR of plugin hostile-backend cannot be loaded: "
            "ModuleNotFoundError: No module named 'hostile_missing'; it is left out") in caplog.messages
