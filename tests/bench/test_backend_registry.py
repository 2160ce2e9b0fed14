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
        "archline: warning: back-end plugin 'broken' (toy_backend_missing:BACKEND) cannot be loaded: "
        "ModuleNotFoundError: No module named 'toy_backend_missing'; it is left out",
        "archline: warning: back-end plugin 'not_info' (toy_backend:ToyBackend) is a type, not a BackendInfo; "
        "it is left out"]                                         # each said once: the lookup is cached
    rows = [row for f in sorted(out.rglob("*.csv")) for row in csv.DictReader(f.open())]
    assert len(rows) == 3 and {r["backend"] for r in rows} == {"toy"}
    assert sorted(int(r["flops_dp"]) // int(r["reps"]) for r in rows) == [2000, 8000, 32000]
    assert {r["kernel"] for r in rows} == {"intensity"} and {r["precision"] for r in rows} == {"dp"}
