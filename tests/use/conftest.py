"""Shared helpers for the tests of issue 9 (using a cost table)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

_MAIN = "import sys; from archline.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, check=False,
                          timeout=120)


@pytest.fixture
def archline_run() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the archline CLI in a subprocess (its real error handling: one line, exit code, no traceback)."""
    return _run
