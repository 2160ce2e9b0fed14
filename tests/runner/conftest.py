"""Fixtures shared by the runner's tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.powermon_helpers import run as run_inproc


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[int, str, str]]:
    """``archline ARGS`` in this process, in ``tmp_path`` with its own config home: (exit code, stdout, stderr)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    return lambda *args: run_inproc(capsys, *args)
