"""`archline fit`, `model plot` and `plot` outputs: valid CSV whatever the platform is called, names made from data
stay inside --out, an output that is an input is refused, and when any output is refused or cannot be made nothing
is written at all."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

ODD = ['a,"b"\nc', "../escaped", "/abs/path", "a/b", "x\ny", "..", "-rf"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)


@pytest.fixture(scope="module")
def evil_csv(tmp_path_factory: pytest.TempPathFactory, frame: pd.DataFrame) -> Path:
    d = tmp_path_factory.mktemp("evil")
    frames = []
    for name in ODD:
        g = frame.copy()
        g["platform"] = name
        frames.append(g)
    return write_results_csv(pd.concat(frames, ignore_index=True), d / "evil.csv")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_csv_round_trips_odd_platform_names(run_cli: Callable[..., Any], evil_csv: Path) -> None:
    r = run_cli("fit", str(evil_csv), "--model", "basic", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout, newline="")))
    assert {row["platform"] for row in rows} == set(ODD)
    assert all(len(row) == 10 and None not in row for row in rows)
    df = pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)
    assert set(df["platform"]) == set(ODD)


def test_names_from_data_stay_inside_out(run_cli: Callable[..., Any], evil_csv: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    out = work / "costs"
    before = _tree(tmp_path)
    r = run_cli("fit", str(evil_csv), "--model", "basic", "--format", "json", "--out", str(out) + "/")
    assert r.exit_code == 0, r.stderr
    new = _tree(tmp_path) - before
    assert new and all(n.startswith("work/costs") for n in new), new
    files = sorted(out.iterdir())
    assert len(files) == len(ODD)
    assert all(f.parent == out and "\n" not in f.name and not f.name.startswith(".") for f in files)
    assert {json.loads(f.read_text())["platform"] for f in files} == set(ODD)
    assert not (tmp_path / "escaped-emulated.costs.json").exists() and not Path("/abs").exists()


def test_several_figures_get_safe_names(run_cli: Callable[..., Any], tmp_path: Path, frame: pd.DataFrame) -> None:
    frames = []
    for name in ("../up", "a/b"):
        g = frame.copy()
        g["platform"] = name
        frames.append(g)
    src = write_results_csv(pd.concat(frames, ignore_index=True), tmp_path / "two.csv")
    work = tmp_path / "w"
    work.mkdir()
    before = _tree(tmp_path)
    r = run_cli("fit", str(src), "--model", "basic", "--figure", str(work / "f.png"))
    assert r.exit_code == 0, r.stderr
    new = _tree(tmp_path) - before
    assert len(new) == 2 and all(n.startswith("w/f-") and n.endswith(".png") for n in new), new


@pytest.mark.parametrize("option", ["--out", "--points"])
def test_an_input_as_output_is_refused_and_nothing_is_written(run_cli: Callable[..., Any], tmp_path: Path,
                                                              frame: pd.DataFrame, option: str) -> None:
    src = write_results_csv(frame, tmp_path / "a.csv")
    data = src.read_bytes()
    other = "--points" if option == "--out" else "--out"
    other_path = tmp_path / ("p.csv" if other == "--points" else "o.csv")
    r = run_cli("fit", str(src), "--model", "basic", "--format", "csv", option, str(src), other, str(other_path))
    assert r.exit_code == 2 and "is an input" in r.stderr and "Traceback" not in r.stderr
    assert src.read_bytes() == data and not other_path.exists()
    assert _tree(tmp_path) == {"a.csv"}


def test_a_figure_linked_to_an_input_is_refused(run_cli: Callable[..., Any], tmp_path: Path,
                                                frame: pd.DataFrame) -> None:
    src = write_results_csv(frame, tmp_path / "a.csv")
    data = src.read_bytes()
    (tmp_path / "f.png").symlink_to(src)
    r = run_cli("fit", str(src), "--model", "basic", "--figure", str(tmp_path / "f.png"), "--format", "json",
                "--out", str(tmp_path / "o.json"))
    assert r.exit_code == 2 and "is an input" in r.stderr
    assert src.read_bytes() == data and not (tmp_path / "o.json").exists()


def test_two_outputs_on_one_file_are_refused(run_cli: Callable[..., Any], tmp_path: Path,
                                             frame: pd.DataFrame) -> None:
    src = write_results_csv(frame, tmp_path / "a.csv")
    r = run_cli("fit", str(src), "--model", "basic", "--format", "csv", "--out", str(tmp_path / "x.csv"),
                "--points", str(tmp_path / "x.csv"))
    assert r.exit_code == 2 and "same file" in r.stderr
    assert _tree(tmp_path) == {"a.csv"}


@pytest.fixture()
def no_tex(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without TeX, whatever this machine has."""
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if "tex" in str(cmd) else real_which(cmd, *a, **k))


def test_pgf_without_tex_is_one_line_and_writes_nothing(run_cli: Callable[..., Any], tmp_path: Path,
                                                        frame: pd.DataFrame, no_tex: None) -> None:
    src = write_results_csv(frame, tmp_path / "a.csv")
    r = run_cli("fit", str(src), "--model", "basic", "--format", "json", "--out", str(tmp_path / "o.json"),
                "--points", str(tmp_path / "p.csv"), "--figure", str(tmp_path / "f.pgf"))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "TeX" in r.stderr and "Traceback" not in r.stderr
    assert _tree(tmp_path) == {"a.csv"}
    for args in (["model", "plot", "gtx580", "--out", str(tmp_path / "m.pgf")],
                 ["plot", "gtx580", "--out", str(tmp_path / "p.pgf")]):
        r = run_cli(*args)
        assert r.exit_code == 2 and "TeX" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert _tree(tmp_path) == {"a.csv"}


def test_a_failing_writer_leaves_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           frame: pd.DataFrame) -> None:
    """The second output cannot be made: the first, already written to its temporary file, is not renamed, and
    the directory made for it is removed again."""
    from archline.formats.costs_files import text_job, write_all

    def boom(tmp: Path) -> None:
        raise OSError(28, "No space left on device", str(tmp))

    first = tmp_path / "new" / "dir" / "a.json"
    with pytest.raises(OSError):
        write_all([text_job(first, "{}"), (tmp_path / "b.csv", boom)])
    assert _tree(tmp_path) == set()
    assert not any(n.endswith(".tmp") for n in os.listdir(tmp_path))


def test_model_plot_default_name_from_data_is_safe(run_cli: Callable[..., Any], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sample = Path(__file__).resolve().parents[2] / "results" / "sample" / "gtx580.costs.json"
    doc = json.loads(sample.read_text())
    doc["platform"] = "../../up"
    costs = tmp_path / "in" / "c.json"
    costs.parent.mkdir()
    costs.write_text(json.dumps(doc))
    work = tmp_path / "in" / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    r = run_cli("model", "plot", str(costs), "--precision", "sp")
    assert r.exit_code == 0, r.stderr
    assert [p.name for p in work.iterdir()] and all(p.suffix == ".png" for p in work.iterdir())
    assert _tree(tmp_path) - {"in", "in/c.json", "in/cwd"} == {f"in/cwd/{p.name}" for p in work.iterdir()}


def test_model_plot_and_plot_refuse_a_figure_that_is_an_input(run_cli: Callable[..., Any], tmp_path: Path,
                                                               frame: pd.DataFrame) -> None:
    sample = Path(__file__).resolve().parents[2] / "results" / "sample" / "gtx580.costs.json"
    costs = tmp_path / "c.json"
    costs.write_bytes(sample.read_bytes())
    src = write_results_csv(frame, tmp_path / "a.csv")
    kept = {p: p.read_bytes() for p in (costs, src)}
    (tmp_path / "l1.png").symlink_to(costs)
    (tmp_path / "l2.png").symlink_to(src)
    for args in (["model", "plot", str(costs), "--out", str(tmp_path / "l1.png")],
                 ["plot", str(src), "gtx580", "--out", str(tmp_path / "l2.png")]):
        r = run_cli(*args)
        assert r.exit_code == 2 and "is an input" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert all(p.read_bytes() == data for p, data in kept.items())
    assert _tree(tmp_path) == {"c.json", "a.csv", "l1.png", "l2.png"}


# --- folded from test_fit_breaker28.py (a review round's regression tests) --------------------
# Breaker 28 item 1: `archline fit DATASET --out DATASET/.../part-0.parquet` wrote the cost table over a part of
# the data set it read (the next fit found no Parquet there). Every part of an input data set is an input.


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_output_named_as_a_part_of_an_input_data_set_is_refused(run_cli, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    part_dir = tmp_path / "ds" / "platform=gtx580" / "host=a" / "run_id=r0"
    part_dir.mkdir(parents=True)
    frame = synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)
    part = part_dir / "part-0.parquet"
    frame.drop(columns=[c for c in ("platform", "host", "run_id") if c in frame]).to_parquet(part)
    (tmp_path / "link.out").symlink_to(part)
    before = part.read_bytes()
    for out in (part, tmp_path / "link.out", Path(os.path.relpath(part))):
        r = run_cli("fit", str(tmp_path / "ds"), "--model", "basic", "--format", fmt, "--out", str(out))
        assert r.exit_code == 2 and "is an input" in r.stderr, r.stderr
        assert part.read_bytes() == before
    ok = run_cli("fit", str(tmp_path / "ds"), "--model", "basic", "--format", "json")
    assert ok.exit_code == 0, ok.stderr


@pytest.mark.parametrize(("column", "value", "says"), [
    ("energy_j", 1e300, "is not a measurement"), ("energy_j", 0.0, "is not a measurement"),
    ("energy_j", 1e-300, "is not a measurement"), ("time_s", 1e-300, "is not a measurement"),
    ("time_s", 1e300, "is not a measurement"), ("checksum_ok", "falsch", "checksum_ok must be true, false or empty"),
])
def test_a_row_no_machine_gives_is_refused_naming_its_line(run_cli, tmp_path: Path, column: str, value: object,  # type: ignore[no-untyped-def]
                                                           says: str) -> None:
    """Breaker 28 items 2, 3, 6, 8: energy 1e300 J, 0 J or a 1e-300 s time moved the coefficients silently (up to
    28%); an unknown checksum_ok word counted as a pass."""
    from archline.fit.regress.synthetic import write_results_csv

    frame = synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)
    frame[column] = frame[column].astype(object)
    frame.loc[5, column] = value
    src = write_results_csv(frame, tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 2 and says in r.stderr and ":7:" in r.stderr.replace("r.csv", ""), r.stderr
