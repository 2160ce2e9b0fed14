"""Shared fixtures: run the real `archline` entry point in-process and capture what a user would see."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    from archline.cli.main import main

    def _run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return _run


@pytest.fixture(autouse=True)
def _reset_archline_logging() -> Iterator[None]:
    """The CLI configures the 'archline' logger (its own console handler, propagate off). A module- or
    session-scoped fixture that runs the CLI does so before any function fixture, so a snapshot would keep its
    state; put the logger back to Python's defaults before and after every test instead, so each test's caplog
    sees records whatever ran before it."""
    from archline.common.logs import reset

    reset()
    yield
    reset()


@pytest.fixture(autouse=True)
def _reset_archline_inputs() -> Iterator[None]:
    """The output policy remembers a command's inputs; the CLI forgets them per command, a test that calls the
    library directly must too (else a later test's new file on a reused inode could look like an old input)."""
    from archline.common.outputs import reset

    reset()
    yield
    reset()


@pytest.fixture(scope="session")
def _per_test_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The parent of the two fresh directories below. tempfile.mkdtemp in it costs the same for every test;
    tmp_path_factory.mktemp scans the whole base temp directory for its next number and links '<name>current'
    each time, which grew to about 14 ms a test by the end of a default run (thousands of entries)."""
    return tmp_path_factory.mktemp("per-test")


@pytest.fixture(autouse=True)
def _private_state_home(_per_test_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG_STATE_HOME in a fresh temp dir for every test (its subprocesses inherit it): a measured localhost run
    keeps its roofline.json there (archline.formats.ert_roofline.host_roofline_path), never in the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", tempfile.mkdtemp(prefix="state", dir=_per_test_dirs))


@pytest.fixture(autouse=True)
def _no_host_perf_power(_per_test_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The RAPL meter falls back to perf's power events when powercap is unreadable: point it at an empty
    directory, so a test's fake powercap tree decides alone also on a host whose perf events are open (a test
    that wants them builds a fake PMU tree, support.fakes.make_perf_power_tree)."""
    monkeypatch.setenv("ARCHLINE_PERF_POWER_ROOT", tempfile.mkdtemp(prefix="no-perf-power", dir=_per_test_dirs))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the default run's longest tests slow (tests/support/slow_tests.py) before ``-m`` deselects."""
    from support.slow_tests import SLOW_NODE_IDS

    for item in items:
        if item.nodeid in SLOW_NODE_IDS:
            item.add_marker(pytest.mark.slow)
