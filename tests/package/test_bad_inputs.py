"""Nothing a user types crashes archline (issue 15). Every command, enumerated from the click tree (a new command is
covered without editing this file), is run with bad files (binary, empty, truncated, a directory, missing), files
that parse but hold the wrong thing, unwritable output paths and bad values: each must exit non-zero with one line
on stderr and leave no file behind (tests/support/badinputs.py holds the matrix; benchmarks/bad_inputs.py counts
it, with the may-pass values and the issue's own list)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import badinputs as bi

COMMANDS = [" ".join(p) for p, _ in bi.commands()]


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> bi.Fixtures:
    return bi.Fixtures(tmp_path_factory.mktemp("fx"))


@pytest.fixture(scope="module")
def all_cases(fx: bi.Fixtures) -> list[tuple[tuple[str, ...], bi.Case]]:
    return bi.cases(fx, include_may_pass=False) + bi.content_cases(fx)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temp dir the commands see: whatever they leave there is theirs (other processes write to /tmp)."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    yield d


def _run(cases: list[bi.Case], fx: bi.Fixtures, work: Path) -> list[str]:
    problems = []
    for k, case in enumerate(cases):
        out = bi.run_case(case, work / f"c{k}", fx, watch_tmp=True)
        bad = bi.judge(case, out)
        if bad:
            problems.append(f"{case.name}: {'; '.join(bad)} :: {out.stderr.strip()[-300:]}")
    return problems


def test_every_command_is_in_the_matrix(all_cases: list[tuple[tuple[str, ...], bi.Case]],
                                        fx: bi.Fixtures) -> None:
    covered = {" ".join(p) for p, _ in all_cases}
    assert set(COMMANDS) <= covered
    # a command without a known valid invocation is still run with bad files in its required places
    assert {" ".join(p) for p, _ in bi.commands() if bi.baseline(p, fx) is None} <= covered
    assert len(all_cases) >= 500


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_inputs_fail_in_one_line(command: str, all_cases: list[tuple[tuple[str, ...], bi.Case]],
                                     fx: bi.Fixtures, tmp_path: Path, private_tmp: Path) -> None:
    cases = [c for p, c in all_cases if " ".join(p) == command]
    assert cases
    problems = _run(cases, fx, tmp_path)
    assert not problems, f"{len(problems)} of {len(cases)} cases:\n" + "\n".join(problems)
    assert not list(private_tmp.iterdir()), "left in the temp dir"


def test_issue_15_cases(fx: bi.Fixtures, tmp_path: Path, private_tmp: Path) -> None:
    """The cases the issue lists (its meter-record cases run in tests/powermon/test_faults_cli.py)."""
    cases = [c for _, c in bi.issue_cases(fx) if "record" not in c.args]
    problems = _run(cases, fx, tmp_path)
    assert not problems, "\n".join(problems)


def test_baselines_are_valid(fx: bi.Fixtures, tmp_path: Path, private_tmp: Path) -> None:
    """Each command's valid invocation succeeds, so the matrix changes one thing of something that works (the
    slow ones, bench run/sweep and lab submit, run in benchmarks/bad_inputs.py)."""
    slow = {("bench", "run"), ("bench", "sweep"), ("lab", "submit"), ("meter", "record"), ("meter", "emulate")}
    cases = [c for p, c in bi.baseline_cases(fx) if p not in slow]
    assert len(cases) >= 25
    problems = _run(cases, fx, tmp_path)
    assert not problems, "\n".join(problems)


def test_exit_codes_are_documented_in_one_table() -> None:
    """--help, docs/errors.md and docs/cron.md list the codes of archline.common.exits."""
    import re

    from archline.cli.main import cli
    from archline.common.exits import EXIT_CODES

    repo = Path(__file__).resolve().parents[2]
    codes = {c for c, _, _ in EXIT_CODES}
    assert codes == {0, 1, 2, 3, 4, 5, 6, 7, 75, 130}
    assert all(f"  {c:>3}  " in (cli.epilog or "") for c in codes)
    rows = {doc: {int(m) for m in re.findall(r"^\| (\d+) \|", (repo / doc).read_text(), re.M)}
            for doc in ("docs/errors.md", "docs/cron.md")}
    assert rows["docs/errors.md"] == codes
    assert rows["docs/cron.md"] == codes - {6}     # a sweep turns a lossy point into a failed point (3)


def test_each_commands_codes_are_documented_and_are_the_ones_its_help_gives() -> None:
    """docs/errors.md's table of commands is ``COMMAND_CODES`` (issue 36); it names real commands and documented
    codes; and every code a command's own --help names ('Exit codes: ...', 'exits 75', '(exit 4)') is in its
    row. The situation harness holds each command's outcomes to the same row."""
    import re

    from archline.common.exits import (
        CHILD_CODE_COMMANDS,
        COMMAND_CODES,
        COMMON_CODES,
        EXIT_CODES,
        command_codes,
        command_rows,
    )

    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs/errors.md").read_text()
    assert "\n".join(command_rows()) in doc
    known = {c for c, _, _ in EXIT_CODES}
    tree = {" ".join(p): cmd for p, cmd in bi.commands()}
    assert set(COMMAND_CODES) <= set(tree) and set(CHILD_CODE_COMMANDS) <= set(tree)
    assert COMMON_CODES <= known and all(c <= known for c in COMMAND_CODES.values())
    assert command_codes("measure") is None and command_codes("fit") == COMMON_CODES
    said: dict[str, set[int]] = {}
    for name, cmd in tree.items():
        text = " ".join((cmd.help or "").split())
        got = {int(n) for n in re.findall(r"\b(?:exits?|exit status|exit code) (\d+)\b", text, re.I)}
        for block in re.findall(r"Exit (?:codes|status): (.*?)(?:\.|$)", text):
            got |= {int(n) for n in re.findall(r"\b(\d+) (?:done|when|while|bad|some|meter|stopped|another|"
                                                r"interrupted|on)\b", block)}
        said[name] = got & known
        allowed = command_codes(name)
        assert allowed is None or got & known <= allowed, f"{name}: its --help names {sorted(got & known)}"
    assert said["bench sweep"] >= {0, 2, 3, 4, 5, 75, 130} and said["lab submit"] >= {3, 75}     # the parse works


def test_debug_shows_the_traceback_of_a_user_error(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("model", "show", "no-such-platform")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run_cli("--debug", "model", "show", "no-such-platform")
    assert r.exit_code == 2 and "Traceback" in r.stderr and r.stderr.strip().splitlines()[-1].startswith(
        "archline: error: unknown platform")
