"""The console helpers: rich tables that stay plain columns when piped, and the sweep progress (a rich bar on a
terminal with the log lines above it, the log lines alone elsewhere)."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from archline.bench.run.progress import Progress
from archline.cli.output import echo_table, panels


def test_piped_table_is_plain_aligned_columns(capsys: pytest.CaptureFixture[str]) -> None:
    echo_table(["name", "value", "unit"], [["peak SP [emulated]", 1398, "GFLOP/s"], ["T", "25 °C", ""]])
    assert capsys.readouterr().out == (
        "name                value  unit\n"
        "------------------  -----  -------\n"
        "peak SP [emulated]  1398   GFLOP/s\n"          # brackets are text, not rich markup
        "T                   25 °C\n")


def test_piped_table_is_never_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    long = "x" * 500
    echo_table(["a", "b"], [[long, "end"]], err=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and lines[2] == f"{long}  end"


def test_panels_in_words() -> None:
    assert panels(("roofline", "archline", "powerline")) == "roofline, arch line and power line"
    assert panels(("roofline",)) == "roofline"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_prints_log_lines_above_it_and_leaves_nothing_running() -> None:
    from archline.common.logs import configure

    stream = _Tty()
    log = configure(stream=stream)
    handler = next(h for h in log.handlers if getattr(h, "_archline_console", False))
    threads = threading.active_count()
    p = Progress(2, stream)
    p.update("intensity/sp", 123.0)
    assert "123.0 W" in stream.getvalue() and "0/2" in stream.getvalue()
    p.point_done("p1", {"time_s": 0.5, "flops_sp": 2e9, "energy_j": 2.0, "power_w": 4.0, "checksum_ok": True})
    p.update("intensity/sp", 99.0)
    out = stream.getvalue()
    assert "point 1/2 p1 time_s=0.5 gflop_per_s=4 energy_j=2 power_w=4 checksum ok" in out  # above the bar
    assert "1/2" in out and "4 GFLOP/s" in out and "ETA" in out
    assert threading.active_count() == threads           # no refresh thread
    p.close()
    assert handler.stream is stream                       # the log handler is given back its stream
    logging.getLogger("archline.bench").info("after")
    assert stream.getvalue().endswith("after\n")


def test_progress_not_a_terminal_prints_plain_log_lines_only() -> None:
    from archline.common.logs import configure

    stream = io.StringIO()
    configure(stream=stream)
    p = Progress(1, stream)
    p.update("intensity/sp", 123.0)
    p.point_done("p1", {"time_s": 0.123456789, "energy_j": None, "checksum_ok": True})
    p.close()
    assert stream.getvalue() == "point 1/1 p1 time_s=0.1235 time only checksum ok ETA 0:00\n"


def test_control_characters_in_a_cell_are_shown_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    echo_table(["name", "n"], [["a\tb\nc", 1]])
    assert capsys.readouterr().out.splitlines() == ["name     n", "-------  -", "a\\tb\\nc  1"]


def test_a_terminal_gets_a_rich_table(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    out = _Tty()
    monkeypatch.setattr(sys, "stdout", out)
    echo_table(["name", "value"], [["peak [emulated]", "1398"]])
    text = out.getvalue()
    assert "\x1b[1m" in text and "─" in text and "peak [emulated]" in text    # bold header, a rule, no markup


# --- folded from test_breaker23_streams.py (a review round's regression tests) -----------------------------------
# Breaker findings (issue 23's hostile run): a closed or full stderr never changes the exit code or stops a run
# before its outputs are written; a symlink loop as an output is one line and exit 7, not a traceback.


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
