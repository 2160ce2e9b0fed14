"""One owner of the results rows (formats/results_file.py for the CSV, formats/dataset.py for the Parquet data set),
varied by situation: the input is a pipe, a FIFO or ``/dev/stdin``; a file is named twice; the file to append to
is not ours, or ours with other columns; the data set directory holds a user's files; names come from the data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.pipes import pipe_of

from archline.fit.io.results import read_results
from archline.fit.regress.synthetic import GTX580, I7_950, synthetic_results, write_results_csv
from archline.formats.dataset import DatasetError, owned_files, read_dataset_table, write_dataset
from archline.formats.results_file import NotResultsError, ResultsFile, SourceError

ROOT = Path(__file__).resolve().parents[2]


def _frame(seed: int = 1, plat: Any = GTX580) -> Any:
    return synthetic_results(plat, n_sp=12, n_dp=12, n_l1=0, n_l2=0, n_rand=0, seed=seed)


@pytest.fixture(autouse=True)
def _new_command() -> Iterator[None]:
    """Each test is one command: the inputs noted by the previous one are forgotten (as the CLI does)."""
    from archline.common.outputs import reset

    reset()
    yield
    reset()


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    return write_results_csv(_frame(), tmp_path / "a.csv")




def _fit_json(run_cli: Callable[..., Any], *paths: str) -> dict[str, Any]:
    r = run_cli("fit", *paths, "--model", "basic", "--format", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


# --- 1. read once, as a stream ------------------------------------------------------------------------------

def test_fit_plot_and_compare_read_apipe_of(run_cli: Callable[..., Any], csv_file: Path, tmp_path: Path) -> None:
    direct = _fit_json(run_cli, str(csv_file))
    with pipe_of(csv_file.read_bytes()) as p:
        piped = _fit_json(run_cli, p)
    assert piped["n_points"] == direct["n_points"] == 24
    assert piped["coefficients"] == direct["coefficients"]
    with pipe_of(csv_file.read_bytes()) as p:
        r = run_cli("plot", p, "--kind", "roofline", "--precision", "sp", "--out", str(tmp_path / "r.png"))
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    import pandas as pd

    two = pd.concat([_frame(1), _frame(2, I7_950)], ignore_index=True)
    both = write_results_csv(two, tmp_path / "both.csv")
    with pipe_of(both.read_bytes()) as p:
        r = run_cli("compare", p, "--by", "platform", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert sorted(json.loads(r.stdout)["blocks"][0]["groups"]) == ["gtx580", "i7-950"]


def test_fit_reads_a_fifo_and_ceilings_read_apipe_of(run_cli: Callable[..., Any], csv_file: Path,
                                                   tmp_path: Path) -> None:
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(csv_file.read_bytes())

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    assert _fit_json(run_cli, str(fifo))["n_points"] == 24
    t.join(5)
    from archline.fit.analyses.s4.inputs import load_ceiling_inputs

    with pipe_of(csv_file.read_bytes()) as p:
        got = load_ceiling_inputs([p], "sp")
    assert got.points and all(pt.kind in ("compute", "memory") for pt in got.points)


def test_a_pipe_is_checked_like_a_file(run_cli: Callable[..., Any], csv_file: Path) -> None:
    for data, needle in ((b"", "is empty"), (b"\x00\x01binary\n", "binary"),
                         (csv_file.read_bytes()[:-40], "cut off")):
        with pipe_of(data) as p:
            r = run_cli("fit", p)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and needle in lines[0], r.stderr


def test_stdin_and_process_substitution_in_a_real_shell(csv_file: Path) -> None:
    """The shell's own ``<(...)`` and ``/dev/stdin`` as a pipe, in one process each."""
    cmd = f"{sys.executable} -m archline.cli fit --model basic --format json"
    r = subprocess.run(["bash", "-c", f"{cmd} <(cat {csv_file}) && cat {csv_file} | {cmd} /dev/stdin"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    dec, text, docs = json.JSONDecoder(), r.stdout.strip(), []
    while text:
        doc, end = dec.raw_decode(text)
        docs.append(doc)
        text = text[end:].strip()
    assert len(docs) == 2 and docs[0]["n_points"] == docs[1]["n_points"] == 24


def test_a_regular_file_is_opened_once(csv_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    opened: list[str] = []
    real_open = builtins.open

    def counting(file: Any, *a: Any, **k: Any) -> Any:
        if str(file) == str(csv_file):
            opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", counting)
    rs = read_results([csv_file])
    assert rs.data.n_rows == 24 and opened == [str(csv_file)]


# --- 2. a file given twice ----------------------------------------------------------------------------------

def test_a_file_named_twice_is_read_once_with_a_warning(run_cli: Callable[..., Any], csv_file: Path) -> None:
    link = csv_file.with_name("b.csv")
    link.symlink_to(csv_file.name)
    once = _fit_json(run_cli, str(csv_file))
    for args in ((str(csv_file), str(csv_file)), (str(csv_file), str(link)),
                 (str(csv_file), str(csv_file.parent / "." / csv_file.name))):
        r = run_cli("fit", *args, "--model", "basic", "--format", "json")
        assert r.exit_code == 0, r.stderr
        twice = json.loads(r.stdout)
        assert twice["n_points"] == once["n_points"] == 24
        assert twice["coefficients"] == once["coefficients"]        # error bars not sqrt(2) too narrow
        warn = [ln for ln in r.stderr.splitlines() if "same file" in ln]
        assert len(warn) == 1 and warn[0].startswith("archline: warning:") and "read once" in warn[0], r.stderr


def test_plot_inputs_read_a_file_named_twice_once(csv_file: Path) -> None:
    from archline.fit.plots.inputs import load_plot_inputs

    _, once = load_plot_inputs([str(csv_file)], "sp")
    _, twice = load_plot_inputs([str(csv_file), str(csv_file)], "sp")
    assert len(once) == len(twice) == 1 and len(twice[0].intensity_flop_per_byte) == 12


# --- 3. appending to a results file ------------------------------------------------------------------------

def test_a_foreign_results_csv_is_refused_and_untouched(tmp_path: Path) -> None:
    for text in (b"a,b\n1,2\n", b"a,b\n1,2", b"no newline at all", b"\xff\xfe\x00binary\n",
                 b"schema,time_s\narchline.results/2,1.0\n"):
        f = tmp_path / "results.csv"
        f.write_bytes(text)
        for act in (ResultsFile, ResultsFile.repair_tail, ResultsFile.check_appendable):
            with pytest.raises(NotResultsError, match=r"results\.csv is not an archline\.results/1 file") as e:
                act(f)
            assert "move it away" in str(e.value) and "\n" not in str(e.value)
            assert f.read_bytes() == text


def test_rows_follow_the_files_own_header_and_read_back(tmp_path: Path) -> None:
    f = tmp_path / "old.csv"
    f.write_text("kernel,precision,time_s,schema,energy_j,platform,my_extra\n")
    row = _frame().iloc[0].to_dict()
    out = ResultsFile(f)
    assert out.columns[-1] == "my_extra"
    out.append({**row, "my_extra": "x,y"})
    line = f.read_text().splitlines()[1]
    assert line.startswith(f"{row['kernel']},{row['precision']},{row['time_s']!r},archline.results/1,")
    assert line.endswith(',"x,y"')
    with ResultsFile.open(f) as rf:
        assert rf.n_rows() == 1 and rf.table().column("my_extra").to_pylist() == ["x,y"]
    with open(f, "ab") as h:
        h.write(b"kernel,sp,1.0,archline.res")          # power lost mid-row
    assert ResultsFile.repair_tail(f) == len(b"kernel,sp,1.0,archline.res")
    assert f.read_text().count("\n") == 2


def test_done_points_go_through_the_owner(tmp_path: Path) -> None:
    from archline.bench.run.sweep import done_points

    f = tmp_path / "results.csv"
    out = ResultsFile(f)
    for i in range(3):
        out.append({**_frame().iloc[i].to_dict(), "point_id": f"p{i}", "config_hash": "h1" if i < 2 else "h2"})
    with open(f, "ab") as h:
        h.write(b"archline.results/1,x,y")                # a partial row is not a done point
    assert done_points(f, "h1") == {"p0", "p1"} and done_points(f, "h2") == {"p2"}
    assert done_points(tmp_path / "none.csv", "h1") == set()
    f.write_text("a,b\n1,2\n")
    with pytest.raises(NotResultsError):
        done_points(f, "h1")


def test_sweep_refuses_a_foreign_results_csv(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    foreign = out / "results.csv"
    foreign.write_bytes(b"a,b\n1,2\n")
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'[sweep]\nplatform = "gtx580"\nemulate = true\nquick = true\ntime_compression = 100.0\n'
                   f'out = "{out}"\nmax_points = 2\n')
    for _ in range(2):
        r = run_cli("bench", "sweep", str(cfg))
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.exit_code == 2, r.stderr
        assert len(lines) == 1 and str(foreign) in lines[0] and "move it away" in lines[0], r.stderr
        assert foreign.read_bytes() == b"a,b\n1,2\n"


# --- 4. the data set directory is shared with the user -----------------------------------------------------

def _csv(tmp: Path, name: str, host: str, run_id: str, seed: int, platform: str | None = None) -> Path:
    f = _frame(seed)
    f["host"], f["run_id"], f["config_hash"] = host, run_id, "hash"
    if platform is not None:
        f["platform"] = platform
    f["point_id"] = [f"p{i:03d}" for i in range(len(f))]
    return write_results_csv(f, tmp / f"{name}.csv")


def test_collect_touches_only_its_own_files(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    (fleet / ".git").mkdir(parents=True)                     # `git init fleet` first is fine
    (fleet / ".git" / "config").write_text("[core]\n")
    a, b = _csv(tmp_path, "a", "node01", "run-a", 1), _csv(tmp_path, "b", "node02", "run-b", 2)
    write_dataset([a], fleet)
    (fleet / "notes.md").write_text("my notes\n")
    (fleet / "platform=gtx580" / "README").write_text("mine\n")
    rep = write_dataset([a, b], fleet)
    assert (rep.rows, rep.duplicates, rep.partitions) == (48, 24, 2)
    assert (fleet / "notes.md").read_text() == "my notes\n" and (fleet / ".git" / "config").exists()
    assert (fleet / "platform=gtx580" / "README").exists()
    rep = write_dataset([b], fleet, merge=False)            # --replace: run-a's partition goes, the user's stay
    assert (rep.rows, rep.partitions) == (24, 1)
    assert [p.relative_to(fleet).as_posix() for p in owned_files(fleet)] == \
        ["platform=gtx580/host=node02/run_id=run-b/part-0.parquet"]
    assert not (fleet / "platform=gtx580" / "host=node01").exists()
    assert (fleet / "notes.md").exists() and (fleet / ".git" / "config").exists()
    assert (fleet / "platform=gtx580" / "README").exists()
    assert read_dataset_table(fleet).num_rows == 24            # the README is not read as Parquet
    assert not [p for p in fleet.rglob("*") if p.name.endswith(".tmp")]


def test_collect_refuses_an_out_that_is_not_a_data_set(tmp_path: Path) -> None:
    a = _csv(tmp_path, "a", "node01", "run-a", 1)
    (tmp_path / "file").write_text("x")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "thesis.tex").write_text("x")
    for out, needle in ((tmp_path / "file", "not a data set directory"), (docs, "not an archline data set")):
        with pytest.raises(DatasetError, match=needle) as e:
            write_dataset([a], out)
        assert "\n" not in str(e.value)
    assert (tmp_path / "file").read_text() == "x" and [p.name for p in docs.iterdir()] == ["thesis.tex"]
    hidden = tmp_path / "hidden"                             # a fresh git repository is a fine place
    (hidden / ".git").mkdir(parents=True)
    assert write_dataset([a], hidden).rows == 24


# --- 5. names from data ------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["platform", "host", "run_id"])
def test_names_from_data_stay_inside_the_data_set(tmp_path: Path, key: str) -> None:
    values = ["../escaped", "/abs/path", "a/b", "line\nbreak", "..", ".", "-dash", "x" * 60]
    frames = []
    import pandas as pd

    for i, v in enumerate(values):
        f = _frame(i)
        f["host"], f["run_id"], f["config_hash"] = "node01", f"run-{i}", "hash"
        f["point_id"] = [f"{i}-{j}" for j in range(len(f))]
        f[key] = v
        frames.append(f)
    src = write_results_csv(pd.concat(frames, ignore_index=True), tmp_path / "odd.csv")
    out = tmp_path / "sub" / "ds"
    write_dataset([src], out)
    everything = {p for p in tmp_path.rglob("*")}
    assert everything <= {src, tmp_path / "sub", *out.rglob("*"), out}
    assert {p.relative_to(out).parts[:3].__len__() for p in owned_files(out)} == {3}
    got = read_dataset_table(out).column(key).to_pylist()
    assert set(got) == set(values)                              # readers get the values back unchanged
    rs = read_results([out], carry=(key,) if key != "platform" else ())
    assert rs.data.n_rows == len(frames) * 24


def test_an_empty_partition_value_is_refused_before_any_write(tmp_path: Path) -> None:
    for i, bad in enumerate(("", " ")):
        f = _frame()
        f["host"], f["run_id"], f["config_hash"], f["point_id"] = "n", bad, "h", "p"
        src = write_results_csv(f, tmp_path / f"e{i}.csv")
        with pytest.raises(DatasetError, match="empty 'run_id'"):
            write_dataset([src], tmp_path / "ds")
        assert not (tmp_path / "ds").exists()


# --- 6. one owner ------------------------------------------------------------------------------------------

OWNERS = {"formats/results_file.py", "formats/dataset.py", "formats/schema.py"}   # schema: the cell format
#: modules that still parse or write results rows themselves (not this owner's files); each says why
KNOWN_ELSEWHERE = {
    "fit/analyses/choi/dvfs_tune.py": "paper_table8 reads the shipped S1 Table 8 seed CSV: another format",
    "fit/analyses/choi/app_predict.py": "a counts CSV keyed by result column names: another format",
    "formats/counters/base.py": "profiler exports (ncu, rocprof, perf stat, likwid-perfctr): other formats",
    "formats/meters/samples_csv.py": "meter samples and traces (archline.samples/1): another format",
    "formats/meters/samples_file.py": "meter samples and traces (archline.samples/1): another format",
    "formats/meters/traces.py": "meter samples and traces (archline.samples/1): another format",
}


def test_only_the_owners_parse_or_write_results_rows() -> None:
    """No module of fit, bench, cli, formats or model imports pyarrow's CSV, Parquet or data set readers but the
    owners (meter samples and traces are another format), and none that names the results contract parses or writes
    CSV itself."""
    import ast

    parsers = {"read_csv", "open_csv", "DictReader", "reader", "to_csv", "writer", "DictWriter", "header_line",
               "row_line", "read_table", "write_table", "write_dataset"}
    found = []
    for room in ("fit", "bench", "cli", "formats", "model"):
        for path in sorted((ROOT / room).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in OWNERS or rel in KNOWN_ELSEWHERE:
                continue
            text = path.read_text()
            tree = ast.parse(text)
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(n in ("pyarrow.csv", "pyarrow.parquet", "pyarrow.dataset") for n in names):
                    found.append(f"{rel}:{node.lineno} imports {names}")
            if "archline.results" in text or "RESULTS_NAME" in text or "schema.SCHEMA" in text:
                for node in ast.walk(tree):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                            node.func.attr in parsers and not (isinstance(node.func.value, ast.Name)
                                                               and node.func.value.id in ("rf", "f", "self")):
                        found.append(f"{rel}:{node.lineno} calls {node.func.attr}")
    assert not found, "\n".join(found)


def test_reader_and_writer_share_the_schema_version(tmp_path: Path) -> None:
    f = tmp_path / "r.csv"
    rows = [{**_frame().iloc[i].to_dict(), "point_id": f"p{i}"} for i in range(3)]
    ResultsFile.dump(rows, f)
    with ResultsFile.open(f) as rf:
        assert ResultsFile.SCHEMA == "archline.results/1" and rf.n_rows() == 3
        assert set(rf.table().column("schema").to_pylist()) == {ResultsFile.SCHEMA}
    with pytest.raises(SourceError, match="does not exist"):
        with ResultsFile.open(tmp_path / "nope.csv"):
            pass
