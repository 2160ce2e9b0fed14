"""Each file format has one module that reads and writes it (issue 22): the results rows
(``formats/results_file.ResultsFile``, the Parquet data set ``formats/dataset.ResultsDataset``), cost tables
(``formats/costs.CostTable``) and samples files (``formats/meters/samples_file.SamplesFile``).

The check is by behaviour: the owner's entry point is replaced by one that raises, and every command that reads or
writes the format is run. A command that still succeeds parsed or wrote the file some other way, and fails this
test. (The rooms' own static scans, in tests/fit/test_results_owner.py, tests/fit/test_costs_owner.py and
tests/powermon/test_samples_owner.py, catch a second parser that no command reaches yet.)"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import badinputs as bi


class OwnerBypassed(Exception):
    """Raised by a replaced owner entry point: the command went through the owner."""


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> bi.Fixtures:
    return bi.Fixtures(tmp_path_factory.mktemp("fx"))


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise OwnerBypassed("the owner was called")


def _replace(monkeypatch: pytest.MonkeyPatch, owner: str, attr: str) -> None:
    import importlib

    module, cls = owner.rsplit(".", 1)
    target = getattr(importlib.import_module(module), cls)
    kind = type(target.__dict__[attr])
    monkeypatch.setattr(target, attr, kind(_boom) if kind in (classmethod, staticmethod) else _boom)


def _through_owner(run_cli: Callable[..., Any], args: list[str]) -> None:
    """The command reached the replaced entry point: an internal error naming it, nothing else."""
    r = run_cli(*args)
    assert r.exit_code == 1 and "OwnerBypassed" in r.stderr, \
        f"`archline {' '.join(args)}` did not go through the owner (exit {r.exit_code}): {r.stderr[-400:]}"


RESULTS_READERS: list[Callable[[dict[str, str]], list[str]]] = [
    lambda f: ["fit", f["results"]],
    lambda f: ["fit", f["results"], "--format", "json", "--model", "basic"],
    lambda f: ["plot", f["results"], "--kind", "roofline", "--out", "r.png"],
    lambda f: ["compare", f["results"], "--by", "host"],
    lambda f: ["plot", f["results"], "gtx580", "--kind", "ceilings", "--out", "c.png"],
]


@pytest.mark.parametrize("make", RESULTS_READERS, ids=lambda m: " ".join(m({k: k for k in
                                                                               ("results", "costs")})[:2]))
def test_results_are_read_only_by_their_owner(make: Callable[[dict[str, str]], list[str]], fx: bi.Fixtures,
                                              run_cli: Callable[..., Any], in_tmp: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    files = {k: os.fspath(v) for k, v in fx.files.items()}
    ok = run_cli(*make(files))
    assert ok.exit_code in (0, 2), ok.stderr        # the command itself runs (2: ceilings need energy rows)
    _replace(monkeypatch, "archline.formats.results_file.ResultsFile", "open")
    _through_owner(run_cli, make(files))


def test_results_are_written_only_by_their_owner(run_cli: Callable[..., Any], in_tmp: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _replace(monkeypatch, "archline.formats.results_file.ResultsFile", "append")
    _through_owner(run_cli, ["bench", "run", "--platform", "gtx580", "--emulate", "--quick", "--kernel",
                             "intensity", "--precision", "sp", "--out", "run-out"])
    assert not list(in_tmp.rglob("*.csv")), "a results file was written without the owner"


def test_the_data_set_is_written_only_by_its_owner(fx: bi.Fixtures, run_cli: Callable[..., Any], in_tmp: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shutil.copy(fx.files["lab"], in_tmp / "lab.toml")
    r = run_cli("lab", "submit", "lab.toml", "--wait")
    assert r.exit_code == 0, r.stderr
    _replace(monkeypatch, "archline.formats.dataset.ResultsDataset", "write")
    _through_owner(run_cli, ["lab", "collect", "lab.toml", "--out", "fleet"])
    assert not (in_tmp / "fleet").exists()


COST_READERS: list[Callable[[dict[str, str]], list[str]]] = [
    lambda f: ["model", "show", f["costs"]],
    lambda f: ["model", "predict", f["costs"], "--intensity", "1"],
    lambda f: ["plot", f["costs"], "--kind", "roofline", "--out", "c.png"],
    lambda f: ["predict", f["counts"], "--costs", f["costs"]],
]


@pytest.mark.parametrize("make", COST_READERS, ids=lambda m: " ".join(m({k: k for k in
                                                                            ("costs", "counts")})[:2]))
def test_cost_tables_are_read_only_by_their_owner(make: Callable[[dict[str, str]], list[str]], fx: bi.Fixtures,
                                                  run_cli: Callable[..., Any], in_tmp: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    files = {k: os.fspath(v) for k, v in fx.files.items()}
    ok = run_cli(*make(files))
    assert ok.exit_code == 0, ok.stderr
    _replace(monkeypatch, "archline.formats.costs.CostTable", "from_doc")
    _through_owner(run_cli, make(files))


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_cost_tables_are_written_only_by_their_owner(fmt: str, fx: bi.Fixtures, run_cli: Callable[..., Any],
                                                     in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.formats import costs

    monkeypatch.setitem(costs.RENDERERS, fmt, _boom)    # json renders through CostTable, csv and table beside it
    for out in ([], ["--out", f"costs.{fmt}"]):
        _through_owner(run_cli, ["fit", os.fspath(fx.files["results"]), "--model", "basic", "--format", fmt, *out])
    assert not list(in_tmp.iterdir())


def test_samples_are_read_only_by_their_owner(fx: bi.Fixtures, run_cli: Callable[..., Any], in_tmp: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["meter", "integrate", os.fspath(fx.files["samples"])]
    assert run_cli(*args).exit_code == 0
    _replace(monkeypatch, "archline.formats.meters.samples_file.SamplesFile", "load")
    _through_owner(run_cli, args)


@pytest.mark.parametrize("entry", ["dump", "csv_stream"])
def test_samples_are_written_only_by_their_owner(entry: str, fx: bi.Fixtures, run_cli: Callable[..., Any],
                                                 in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _replace(monkeypatch, "archline.formats.meters.samples_file.SamplesFile", "dump")
    _replace(monkeypatch, "archline.formats.meters.samples_file.SamplesFile", "csv_stream")
    for args in (["meter", "decode", os.fspath(fx.files["raw"]), "--out", "s.csv"],
                 ["meter", "decode", os.fspath(fx.files["raw"]), "--out", "s.parquet"],
                 ["meter", "record", "--meter", "emulated:4", "--channels", "0,1", "--duration", "0.3", "--out",
                  "rec.csv"]):
        _through_owner(run_cli, args)
    assert not [p for p in in_tmp.rglob("*") if p.suffix in (".csv", ".parquet", ".gz")]


def test_lab_files_sweep_configs_and_lab_state_go_through_their_owners(
        fx: bi.Fixtures, run_cli: Callable[..., Any], in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab file (formats/lab_file.py ``Lab.read``), the sweep config (formats/sweep_config.py
    ``SweepConfigFile.read``, ``.write``: the sweep.toml ``lab submit`` writes for each machine) and the lab's
    submission record (formats/lab_state.py ``Submissions.read``), issue 37."""
    import shutil

    shutil.copy(fx.files["lab"], in_tmp / "lab.toml")
    with monkeypatch.context() as m:
        _replace(m, "archline.formats.lab_file.Lab", "read")
        for args in (["status"], ["submit"], ["collect", "--out", "fleet"]):
            _through_owner(run_cli, ["lab", args[0], "lab.toml", *args[1:]])
    with monkeypatch.context() as m:
        _replace(m, "archline.formats.sweep_config.SweepConfigFile", "write")
        _through_owner(run_cli, ["lab", "submit", "lab.toml"])
    assert not list(in_tmp.rglob("sweep.toml"))
    with monkeypatch.context() as m:
        _replace(m, "archline.formats.sweep_config.SweepConfigFile", "read")
        _through_owner(run_cli, ["bench", "sweep", os.fspath(fx.files["sweep"])])
    with monkeypatch.context() as m:        # the lab's state (formats/lab_state.py): the submission record
        _replace(m, "archline.formats.lab_state.Submissions", "read")
        for args in (["status"], ["submit"]):
            _through_owner(run_cli, ["lab", args[0], "lab.toml"])


#: the formats issue 37 moved out of fit: (owner module, its entry point, a command that reads or writes the format)
FIT_FORMATS: list[tuple[str, str, Callable[[Path, bi.Fixtures], list[str]]]] = [
    ("archline.formats.results_read", "checked_batches", lambda d, fx: ["fit", os.fspath(fx.files["results"])]),
    ("archline.formats.app_counts", "read_counts",
     lambda d, fx: ["predict", str(d / "counts.csv"), "--costs", "gtx580"]),
    ("archline.formats.counters.recipe", "read_events_export",
     lambda d, fx: ["predict", str(d / "events.csv"), "--costs", "gtx580"]),
    ("archline.formats.hongkim_rows", "read_rows", lambda d, fx: ["ipp", "fit", str(d / "rows.csv")]),
    ("archline.formats.hongkim_rows", "rows_csv", lambda d, fx: ["ipp", "microbench"]),
    ("archline.formats.dvfs_rows", "read_dvfs_rows",
     lambda d, fx: ["tune", "--costs", str(d / "c.json"), "--measured", str(d / "m.csv")]),
]


@pytest.mark.parametrize(("owner", "entry", "make"), FIT_FORMATS, ids=[f"{o.rsplit('.', 1)[1]}.{e}"
                                                                       for o, e, _ in FIT_FORMATS])
def test_the_fit_side_formats_are_read_and_written_only_by_their_owners(
        owner: str, entry: str, make: Callable[[Path, bi.Fixtures], list[str]], fx: bi.Fixtures,
        run_cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import json

    (tmp_path / "counts.csv").write_text("name,flops_sp,bytes_mem\nk,1e9,1e9\n")
    (tmp_path / "events.csv").write_text('"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"\n'
                                         '"GPU","k","1","inst_integer","1","1","1","1"\n')
    (tmp_path / "rows.csv").write_text("name,gpu_power_w,rate_fp\nfp,120,0.5\n")
    (tmp_path / "c.json").write_text(json.dumps({"schema": "archline.costs/1", "platform": "two", "model": "dvfs",
                                                 "settings": [{"core_mhz": 800, "mem_mhz": 900, "eps_flop_sp": 1e-9,
                                                               "eps_mem": 1e-9, "pi0": 1.0}]}))
    (tmp_path / "m.csv").write_text("kernel,precision,level,core_mhz,mem_mhz,time_s,energy_j,flops_sp,bytes_mem\n"
                                    "intensity,sp,mem,800,900,1.0,10.0,1e9,1e9\n")
    monkeypatch.setattr(importlib.import_module(owner), entry, _boom)
    _through_owner(run_cli, make(tmp_path, fx))
