"""Regressions from the 26th hostile pass over the CLI's conventions: shell completion with a malformed
environment, tables on a terminal (NO_COLOR, narrow), and the one-line messages of typed values."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

_RUN = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())"]


def _run_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_RUN, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("cword", ["abc", None, "1.5"])
@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_with_a_malformed_environment_offers_nothing(shell: str, cword: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COMP_CWORD", "COMP_WORDS")}
    env.update({"_ARCHLINE_COMPLETE": f"{shell}_complete", "COMP_WORDS": "archline bench run --kernel "})
    if cword is not None:
        env["COMP_CWORD"] = cword
    res = _run_env(env)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and res.stdout.strip() == ""
    env.pop("COMP_WORDS")    # nothing at all: still nothing
    res = _run_env(env)
    assert (res.returncode, res.stderr, res.stdout.strip()) == (0, "", "")


def test_completion_still_completes_kernels() -> None:
    env = {**os.environ, "_ARCHLINE_COMPLETE": "bash_complete", "COMP_WORDS": "archline bench run --kernel cha",
           "COMP_CWORD": "4"}
    res = _run_env(env)
    assert res.returncode == 0 and res.stdout.splitlines() == ["plain,chase"], res.stderr


def _on_a_terminal(env: dict[str, str], *args: str) -> str:
    """What the command prints with stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*_RUN, *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:       # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    return b"".join(chunks).decode()


def test_no_color_means_no_escapes_on_a_terminal() -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    out = _on_a_terminal(env, "platforms", "list")
    assert "gtx580" in out and "\x1b" not in out
    env.pop("NO_COLOR")
    assert "\x1b[1m" in _on_a_terminal(env, "platforms", "list")   # the bold header, when colour is allowed


def test_a_narrow_terminal_never_cuts_a_value() -> None:
    env = {**os.environ, "COLUMNS": "20", "NO_COLOR": "1"}
    out = _on_a_terminal(env, "platforms", "list")
    assert "…" not in out
    listed = subprocess.run([*_RUN, "platforms", "list", "--format", "json"], env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout
    rows = json.loads(listed)
    rows = rows if isinstance(rows, list) else next(v for v in rows.values() if isinstance(v, list))
    words = {w for r in rows for k in ("name", "device_kind", "title") for w in str(r[k]).split()}
    assert words and all(w in out for w in words), sorted(w for w in words if w not in out)[:5]
