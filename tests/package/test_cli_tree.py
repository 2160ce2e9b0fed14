"""Every leaf command teaches by example: its own --help has an "Examples:" block whose lines run the command
itself (the docs-as-tests harness, tests/docs, executes them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from archline.cli.main import cli


def _leaves() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                walk(sub, [*path, name])
        else:
            out.append((" ".join(path), cmd))

    walk(cli, [])
    return out


LEAVES = _leaves()


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[p for p, _ in LEAVES])
def test_leaf_help_has_an_example_of_itself(path: str, cmd: click.Command) -> None:
    text = "\n".join(t for t in (cmd.help, cmd.epilog) if t)
    assert "Examples:" in text or "Example:" in text, f"'archline {path} --help' has no Examples: block"
    runs_itself = [ln for ln in text.splitlines() if ln.strip().startswith(f"archline {path}")]
    assert runs_itself, f"'archline {path} --help' has no example line starting 'archline {path}'"


def test_the_main_jobs_platform_is_listed_and_shown(run_cli) -> None:  # type: ignore[no-untyped-def]
    listed = run_cli("platforms", "list", "--format", "json")
    assert listed.exit_code == 0 and "localhost" in {r["name"] for r in __import__("json").loads(listed.stdout)}
    shown = run_cli("platforms", "show", "localhost")
    assert shown.exit_code == 0 and "<detected>" in shown.stdout and "cpu_asm" in shown.stdout


# --- --format json on every leaf that reports ---------------------------------------------------------------------

#: leaves that print no report: what they print IS a file, meant for `> file` (reason each); every other leaf has
#: --format json, and a new leaf that reports without it fails test_reporting_leaf_has_format_json
NOT_REPORTING: dict[str, str] = {
    "ipp example": "prints a kernel file (TOML) to copy and edit: stdout is the file, not a report",
    "ipp gpu": "prints a GPU parameter file (TOML) to copy: stdout is the file, not a report",
    "ipp microbench": "prints emulated microbenchmark rows (CSV) for `ipp fit`: stdout is the data file",
}


def test_not_reporting_names_real_leaves() -> None:
    assert set(NOT_REPORTING) <= {p for p, _ in LEAVES}


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[p for p, _ in LEAVES])
def test_reporting_leaf_has_format_json(path: str, cmd: click.Command) -> None:
    fmt = [p for p in cmd.params if isinstance(p, click.Option) and "--format" in p.opts]
    if path in NOT_REPORTING:
        assert not fmt, f"'archline {path}' has --format: take it off NOT_REPORTING"
        return
    assert fmt, f"'archline {path}' reports but has no --format (use archline.cli.output.format_option)"
    assert isinstance(fmt[0].type, click.Choice) and {"table", "json"} <= set(fmt[0].type.choices), path
    assert fmt[0].name == "fmt", f"'archline {path}': --format must be the shared option (parameter 'fmt')"


#: invocations the bad-input matrix has no baseline for
_MORE: dict[str, list[str]] = {
    "bench export-ert": ["{results}", "--out", "roofline.json"],
    "measure": ["--platform", "gtx580", "--emulate", "--", sys.executable, "-c", "print('to stderr')"],
    "meter probe": ["nvml0", "--emulate", "--out", "s.json"],
    "meter calibrate": ["nvml0", "--emulate", "--gain", "1.07", "--offset", "-3.5"],
}
#: the lab's commands run one after another on one lab: test_lab_json
_LAB = {"lab submit", "lab status", "lab collect"}
#: invocations of several seconds (an emulated sweep): in the slow run
_SLOW = {"bench run"}
REPORTING = [p for p, _ in LEAVES if p not in NOT_REPORTING and p not in _LAB]


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from support import badinputs as bi

    return bi.Fixtures(tmp_path_factory.mktemp("fx"))


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p in _SLOW else p for p in REPORTING])
def test_format_json_is_one_json_document_alone_on_stdout(path: str, fx: Any, tmp_path: Path) -> None:
    from support import badinputs as bi

    words = tuple(path.split())
    base = bi.baseline(words, fx)
    if base is None:
        assert path in _MORE, f"no cheap invocation of 'archline {path}': add one to _MORE"
        base = [a.format(**{k: str(v) for k, v in fx.files.items()}) for a in _MORE[path]]
    out = bi.run_inproc([*words, *base, "--format", "json"] if "--" not in base else
                        [*words, *base[:base.index("--")], "--format", "json", *base[base.index("--"):]],
                        tmp_path, None, timeout_s=120)
    assert not out.exception and out.code == 0, (out.code, out.stderr[-2000:], out.exception)
    doc = json.loads(out.stdout)          # one document, nothing before or after it
    assert isinstance(doc, (dict, list)) and doc, out.stdout[:500]


@pytest.mark.slow
def test_lab_json(fx: Any, tmp_path: Path) -> None:
    """lab submit (local), status and collect, each with --format json, on a copy of the fixture lab."""
    from support import badinputs as bi

    lab = tmp_path / "lab.toml"
    lab.write_bytes(fx.files["lab"].read_bytes())
    docs = {}
    for words in (["submit", "--scheduler", "local"], ["status"], ["collect", "--out", "fleet"]):
        out = bi.run_inproc(["lab", words[0], str(lab), *words[1:], "--format", "json"], tmp_path, None, 120)
        assert not out.exception and out.code == 0, (words, out.code, out.stderr[-2000:])
        docs[words[0]] = json.loads(out.stdout)
    assert [t["state"] for t in docs["submit"]["tasks"]] == ["done"]
    assert [t["state"] for t in docs["status"]] == ["done"]
    assert docs["collect"]


def test_plot_json_lists_the_files_with_what_they_show(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fig = tmp_path / "g.png"
    r = run_cli("model", "plot", "gtx580", "--precision", "sp", "--out", str(fig), "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"] == [{"path": str(fig), "shows": "roofline, arch line and power line of "
                                              "gtx580 SP"}]
    assert fig.stat().st_size > 0
    r = run_cli("model", "plot", "gtx580", "--precision", "sp", "--out", str(fig))
    assert r.stdout == f"wrote {fig}\n"


#: leaves whose figure option is reported elsewhere: fit writes its JSON to --out or stdout through the fit
#: report (the figures are named on stderr), measure's report is its own (cli/measure.py)
_FIGURE_ELSEWHERE = {"fit", "measure"}
FIGURE_LEAVES = [p for p, c in LEAVES if p not in _FIGURE_ELSEWHERE
                 and any(q.name in ("plot_path", "figure") for q in c.params)]


@pytest.mark.parametrize("path", FIGURE_LEAVES)
def test_json_report_lists_the_figure_it_drew(path: str, fx: Any, tmp_path: Path) -> None:
    from support import badinputs as bi

    words = tuple(path.split())
    cmd = dict(LEAVES)[path]
    flag = next(f"--{q.name.replace('_path', '')}" for q in cmd.params if q.name in ("plot_path", "figure"))
    base = bi.baseline(words, fx)
    assert base is not None, path
    out = bi.run_inproc([*words, *base, flag, "fig.png", "--format", "json"], tmp_path, None, timeout_s=120)
    assert out.code == 0 and not out.exception, (out.stderr[-2000:], out.exception)
    files = json.loads(out.stdout)["files"]
    assert [f["path"] for f in files] == ["fig.png"] and files[0]["shows"], files
    assert (tmp_path / "fig.png").stat().st_size > 0
