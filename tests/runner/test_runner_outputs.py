"""``bench run``'s outputs on the OpenCL path (PoCL here; issue 23's review round): bad requests refused before any work
with nothing written; per-run ``<run_id>.roofline.json`` (a second run never replaces the first's); every output
checked before the first point; a write error after the rows keeps the complete CSV and names what failed; a run with
no row leaves no ``.partial`` and no directory."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from archline.cli.main import main

QUICK = ["bench", "run", "--backend", "opencl", "--kernel", "chase", "--quick", "--working-set", "64K"]


def _opencl_ok() -> bool:
    try:
        from archline.bench.opencl.backend import OpenCLBackend

        return OpenCLBackend().availability()[0]
    except Exception:
        return False


needs_opencl = pytest.mark.skipif(not _opencl_ok(), reason="no OpenCL device (PoCL) here")


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ARCHLINE_PLATFORM_PATH", str(tmp_path / "profiles"))
    (tmp_path / "profiles").mkdir()

    def go(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as e:
            code = int(e.code or 0)
        got = capsys.readouterr()
        return code, got.out, got.err
    return go


@pytest.mark.parametrize(("extra", "code", "says"), [
    (["--working-set", "1T"], 2, "more than this machine's memory"),
    (["--working-set", "999999G"], 2, "more than this machine's memory"),
    (["--device", "9"], 4, "no OpenCL device matches '9'"),
    (["--device", "nvidia"], 4, "no OpenCL device matches 'nvidia'"),
    (["--device", "0:9"], 4, "no OpenCL device matches '0:9'"),
    (["--device", ""], 2, "--device: empty"),
    (["--device", " "], 2, "--device: empty"),
    (["--device", "0:-1"], 2, "malformed"),
    (["--device", "0:0:0"], 2, "malformed"),
    (["--device", ":"], 2, "malformed"),
    (["--device", "-1"], 2, "malformed"),
    (["--precision", "sp"], 2, "kernel 'chase' on opencl runs at int32"),
    (["--kernel", "intensity", "--precision", "int32"], 2, "kernel 'intensity' on opencl runs at sp or dp"),
    (["--kernel", "int", "--precision", "sp"], 2, "kernel 'int' on opencl runs at int32"),
    (["--working-set", "1"], 2, "below the chase kernel's minimum on this device, 64 B"),
    (["--working-set", "3", "--kernel", "cache"], 2, "below the cache kernel's minimum"),
    (["--working-set", "1", "--kernel", "ceilings"], 2, "below the ceil_mem kernel's minimum"),
    (["--power-cap", "1e9"], 2, "below 1e+06 (1 MW)"),
])
@needs_opencl
def test_refused_before_any_work_nothing_written(run: Any, tmp_path: Path, extra: list[str], code: int,
                                                 says: str) -> None:
    out = tmp_path / "rws"
    rc, stdout, err = run(*QUICK, "--out", str(out), *extra)
    assert rc == code, err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert stdout == "" and not out.exists()


def test_backend_without_device_is_exit_4(run: Any, tmp_path: Path) -> None:
    pytest.importorskip("archline.bench.cuda.backend")
    from archline.bench.cuda.backend import CudaBackend

    if CudaBackend().availability()[0]:
        pytest.skip("a CUDA device is usable here")
    rc, _, err = run("bench", "run", "--backend", "cuda", "--kernel", "chase", "--quick", "--out", str(tmp_path / "o"))
    assert rc == 4 and "has no usable device here" in err, err
    assert not (tmp_path / "o").exists()


@needs_opencl
def test_per_run_roofline_json(run: Any, tmp_path: Path) -> None:
    out = tmp_path / "r"
    rc, stdout, err = run(*QUICK, "--out", str(out))
    assert rc == 0, err
    (csv1,) = out.glob("*.csv")
    ert1 = out / (csv1.name[:-4] + ".roofline.json")
    first = ert1.read_bytes()
    assert json.loads(first)["empirical"]["metadata"]["results"] == [csv1.name]
    assert stdout.strip() == str(csv1)
    assert "localhost: CPU kernels (cpu_asm)" not in csv1.read_text() + err   # the back end is opencl
    assert "peak" in err and "no compute kernel ran" in err                   # a chase has no flop peak


@needs_opencl
def test_full_disk_after_rows_keeps_them_and_names_the_file(run: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r"
    out.mkdir()
    ert1 = out / "localhost-20261125T000000Z-aaaaaa.roofline.json"      # an earlier run's export
    ert1.write_text("{}\n")
    first = ert1.read_bytes()
    import archline.formats.ert_roofline as ert

    def full(*a: Any, **k: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ert, "write_ert", full)
    rc, stdout, err = run(*QUICK, "--out", str(out))
    assert rc == 7, err
    (csv2,) = out.glob("*.csv")
    assert "roofline.json: No space left on device" in err and f"kept in {csv2}" in err, err
    assert stdout.strip() == str(csv2) and csv2.read_text().count("\n") == 3      # header + 2 complete rows
    assert ert1.read_bytes() == first                                         # the first run's export untouched
    assert sorted(p.name for p in out.iterdir()) == sorted([ert1.name, csv2.name])


@needs_opencl
def test_outputs_checked_before_any_point(run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An output that is an input (here the run's own results name, linked to the profile) is refused before the
    session measures anything: exit 2, nothing written."""
    from archline.bench.run import session as sess
    from archline.bench.run.files import RunFiles

    victim = tmp_path / "victim.toml"
    victim.write_text('name = "victim"\n[bench]\nbackend = "opencl"\n')
    before = victim.read_bytes()
    out = tmp_path / "rn2"
    out.mkdir()
    measured: list[int] = []
    monkeypatch.setattr(sess.Session, "run_indexed", lambda *a, **k: measured.append(1) or (0, 0))
    real_check = RunFiles.check

    def check(self: RunFiles) -> None:      # the run id is random: link its ERT name to the profile first
        (self.out / f"{self.run_id}.roofline.json").symlink_to(victim)
        real_check(self)

    monkeypatch.setattr(RunFiles, "check", check)
    rc, _, err = run("bench", "run", "--platform", str(victim), "--kernel", "chase", "--quick", "--working-set",
                     "64K", "--out", str(out))
    assert rc == 2 and "is an input of this command" in err, err
    assert measured == [] and victim.read_bytes() == before
    assert [p.is_symlink() for p in out.iterdir()] == [True]     # only the link the test made


@needs_opencl
def test_run_ending_without_rows_leaves_nothing(run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.bench.run import session as sess

    def oom(self: Any, todo: Any, results: Any, **k: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(sess.Session, "run_indexed", oom)
    out = tmp_path / "rws"
    rc, _, err = run(*QUICK, "--out", str(out))
    assert rc == 7 and "out of memory" in err, err
    assert not out.exists()


def test_power_cap_named_twice_measured_once(caplog: pytest.LogCaptureFixture) -> None:
    from archline.bench.config.options import RunOptions

    assert RunOptions.from_cli(power_caps_w=(100.0, 150.0, 100.0)).power_caps_w == (100.0, 150.0)
    assert "named twice is measured once" in caplog.text


def test_quick_cache_runs_every_level_bench_list_shows() -> None:
    from archline.bench.gpu.catalogue import describe, sweep
    from archline.bench.opencl.backend import OpenCLDriver

    offer = OpenCLDriver.offer
    listed = {r["level"] for r in describe("opencl", offer, True, "", True) if r["name"] == "cache"}
    assert {s.level for s in sweep("opencl", offer, "cache", "dp", quick=True)} == listed == set(offer.cache_levels)


def test_progress_of_a_bandwidth_kernel_says_gb_per_s() -> None:
    from archline.bench.run.progress import point_numbers

    line = point_numbers({"kernel": "ceil_mem", "time_s": 2.0, "flops_dp": 1e9, "bytes_mem": 8e9, "checksum_ok": True})
    assert line == "time_s=2 gb_per_s=4 time only checksum ok"
    assert "not computed" in point_numbers({"kernel": "intensity", "time_s": 1.0, "checksum_ok": None})


def test_help_names_every_backend() -> None:
    from click.testing import CliRunner

    from archline.cli.main import cli

    out = CliRunner().invoke(cli, ["bench", "run", "--help"]).output
    assert "emulated with --emulate" in out and "opencl/cuda/hip also 'ceilings'" in out


@needs_opencl
def test_every_point_failing_prints_no_path_and_leaves_no_folder(run: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.bench.errors import BenchError
    from archline.bench.run import runner

    def fail(*a: Any, **k: Any) -> Any:
        raise BenchError("the kernel failed")

    monkeypatch.setattr(runner.Runner, "measure", fail)
    out = tmp_path / "rws"
    rc, stdout, err = run(*QUICK, "--out", str(out))
    assert rc == 3, err
    assert stdout == "" and "2 point(s) failed" in err and "no row was written" in err and "rows are kept" not in err
    assert not out.exists()


@needs_opencl
def test_working_set_over_device_allocation_refused_up_front(run: Any, tmp_path: Path) -> None:
    from archline.bench.config.options import machine_memory_bytes
    from archline.bench.opencl.backend import OpenCLDriver

    alloc, mem = OpenCLDriver().open(None).max_alloc_bytes, machine_memory_bytes() or 0
    if not 2 * alloc < mem:
        pytest.skip("the device's largest allocation is not below this machine's memory")
    out = tmp_path / "big"
    rc, stdout, err = run(*QUICK, "--out", str(out), "--working-set", str(2 * alloc))
    assert rc == 2 and "largest allocation" in err, err
    assert stdout == "" and not out.exists()
