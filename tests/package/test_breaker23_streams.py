"""Breaker findings (issue 23's hostile run): a closed or full stderr never changes the exit code or stops a run
before its outputs are written; a symlink loop as an output is one line and exit 7, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_MAIN = "import sys; from archline.cli.main import main; sys.exit(main())"
RUN = ["bench", "run", "--platform", "gtx580", "--emulate", "--quick", "--kernel", "intensity", "--precision", "sp"]


def _archline(args: list[str], cwd: Path, stderr: int | None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=stderr,
                          timeout=300, check=False)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stderr_keeps_exit_0_and_every_output(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        res = _archline([*RUN, "--out", "R"], tmp_path, full.fileno())
    assert res.returncode == 0
    names = sorted(p.name for p in (tmp_path / "R").iterdir())
    assert any(n.endswith(".csv") for n in names) and any("roofline" in n and n.endswith(".json") for n in names)


@pytest.mark.slow
def test_a_closed_stderr_keeps_exit_0_and_every_output(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-c", _MAIN, *RUN, "--out", "R"], cwd=tmp_path, stdout=subprocess.PIPE,
                         timeout=300, check=False, preexec_fn=lambda: os.close(2))
    assert res.returncode == 0
    names = sorted(p.name for p in (tmp_path / "R").iterdir())
    assert any(n.endswith(".csv") for n in names) and any("roofline" in n and n.endswith(".json") for n in names)


def test_a_symlink_loop_as_the_output_is_one_line_exit_7(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    res = _archline([*RUN, "--out", "loop"], tmp_path, subprocess.PIPE)
    err = res.stderr.decode()
    assert res.returncode == 7, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "loop" in err


def test_a_dangling_link_output_makes_no_directories_for_its_target(tmp_path: Path) -> None:
    """Breaker 26 item 4: the link's target directory was created (at the filesystem root)."""
    target = tmp_path / "elsewhere" / "deeper" / "x.png"
    (tmp_path / "dangling.png").symlink_to(target)
    res = _archline(["model", "plot", "gtx580", "--out", "dangling.png"], tmp_path, subprocess.PIPE)
    assert res.returncode == 7 and "does not exist" in res.stderr.decode()
    assert not (tmp_path / "elsewhere").exists()
    target.parent.mkdir(parents=True)                   # the directory exists: written through the link
    res = _archline(["model", "plot", "gtx580", "--out", "dangling.png"], tmp_path, subprocess.PIPE)
    assert res.returncode == 0 and target.stat().st_size > 0 and (tmp_path / "dangling.png").is_symlink()
