"""The one output policy (common/outputs.py, common/atomic.py) and the read-once inputs (common/files.py)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from archline.common import outputs
from archline.common.atomic import atomic_path, write_atomic
from archline.common.errors import OutputError
from archline.common.files import open_input, read_bytes, read_text, unique_inputs


class Bad(Exception):
    pass


@pytest.fixture(autouse=True)
def _fresh_registry():
    outputs.reset()
    yield
    outputs.reset()


def test_an_input_is_never_an_output_also_through_links_and_other_spellings(tmp_path, monkeypatch):
    a = tmp_path / "a.csv"
    a.write_text("x\n1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(a)
    hard = tmp_path / "hard.csv"
    os.link(a, hard)             # links made before the command runs, as a user's would be
    read_text(a, error=Bad)
    monkeypatch.chdir(tmp_path)
    for out in (a, link, hard, Path("./a.csv"), Path("sub/../a.csv")):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(OutputError, match="is an input of this command"):
            write_atomic(out, "cost table")
    assert a.read_text() == "x\n1\n"
    assert link.is_symlink()
    write_atomic(tmp_path / "other.csv", "ok")      # another file is fine
    assert (tmp_path / "other.csv").read_text() == "ok"


def test_reset_forgets_the_previous_commands_inputs(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("1\n")
    read_text(a, error=Bad)
    outputs.reset()
    write_atomic(a, "2\n")
    assert a.read_text() == "2\n"


def test_a_symlink_output_is_written_through_to_its_target(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "out.json"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made" / "here.json")
    with pytest.raises(OSError, match="whose directory does not exist"):    # no tree made for a link's target
        write_atomic(dangling, "x")
    assert not (tmp_path / "made").exists()
    (tmp_path / "made").mkdir()
    write_atomic(dangling, "x")
    assert dangling.is_symlink() and (tmp_path / "made" / "here.json").read_text() == "x"
    assert not list(tmp_path.rglob(".*.tmp"))


def test_a_symlink_loop_is_an_os_error_and_nothing_is_written(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OSError) as e:
        write_atomic(a, "x")
    assert e.value.errno == errno.ELOOP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_devices_are_streams_not_replaced():
    write_atomic("/dev/null", "nothing")
    assert Path("/dev/null").is_char_device()
    with atomic_path("/dev/null") as p:
        assert p == Path("/dev/null")
        p.write_text("x")
    assert Path("/dev/null").is_char_device()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_dev_full_reports_a_full_disk():
    with pytest.raises(OSError) as e:
        write_atomic("/dev/full", "x" * 10000)
    assert e.value.errno == errno.ENOSPC
    assert Path("/dev/full").is_char_device()


def test_a_fifo_output_is_written_as_a_stream(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    write_atomic(fifo, "streamed\n")
    t.join(10)
    assert got == [b"streamed\n"] and fifo.is_fifo()


@pytest.mark.parametrize("text", ["../escaped", "/etc/passwd", "a/b", "..", ".", "", "x\ny", "-rf", "a\x00b",
                                  ".hidden", "C:\\x", "\u202e"])
def test_safe_component_never_leaves_its_directory(tmp_path, text):
    name = outputs.safe_component(text)
    assert name and "/" not in name and "\x00" not in name and "\n" not in name
    assert name not in (".", "..") and not name.startswith((".", "-"))
    p = tmp_path / name
    assert p.parent == tmp_path
    outputs.inside(tmp_path, p)


def test_safe_component_keeps_safe_names_and_keeps_different_names_apart():
    assert outputs.safe_component("gtx580") == "gtx580"
    assert outputs.safe_component("gtx580-20261123T010316Z-16c5ec") == "gtx580-20261123T010316Z-16c5ec"
    assert outputs.safe_component("a/b") != outputs.safe_component("a_b")
    assert outputs.safe_component("a/b") != outputs.safe_component("a\\b")


def test_inside_refuses_an_escape(tmp_path):
    with pytest.raises(OutputError, match="outside"):
        outputs.inside(tmp_path / "costs", tmp_path / "costs" / ".." / "escaped.json")


def test_inputs_are_read_once_from_a_pipe(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    t = threading.Thread(target=lambda: fifo.write_bytes(b"a,b\n1,2\n"))
    t.start()
    assert read_text(fifo, error=Bad, lines=True) == "a,b\n1,2\n"
    t.join(10)


def test_a_device_or_a_directory_is_not_an_input(tmp_path):
    with pytest.raises(Bad, match="is a device"):
        read_bytes("/dev/zero", error=Bad, what="capture")
    with pytest.raises(Bad, match="is a directory"):
        read_bytes(tmp_path, error=Bad)
    with pytest.raises(Bad, match="does not exist"):
        read_bytes(tmp_path / "nope", error=Bad)


def test_a_stream_input_is_bounded(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    t = threading.Thread(target=lambda: fifo.write_bytes(b"x" * 5000))
    t.start()
    with pytest.raises(Bad, match="more than 1000 bytes"):
        read_bytes(fifo, error=Bad, limit_bytes=1000)
    t.join(10)


def test_open_input_notes_the_input_for_the_output_policy(tmp_path):
    a = tmp_path / "a.bin"
    a.write_bytes(b"\x01")
    with open_input(a, error=Bad) as f:
        assert f.read() == b"\x01"
    assert str(a) in outputs.inputs()


def test_a_file_named_twice_is_kept_once_with_a_warning(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("x\n")
    (tmp_path / "b.csv").symlink_to(a)
    warned: list[str] = []
    kept = unique_inputs([a, tmp_path / "b.csv", tmp_path / "." / "a.csv", tmp_path / "missing.csv"], warned.append)
    assert kept == [a, tmp_path / "missing.csv"]
    assert len(warned) == 2 and "same file" in warned[0]


def test_a_non_utf8_name_is_shown_not_a_traceback(tmp_path):
    name = os.fsdecode(b"\xff-results.csv")
    with pytest.raises(Bad, match=r"\\xff-results.csv does not exist"):
        read_bytes(tmp_path / name, error=Bad)


def _archline(*args: str, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "archline.cli", *args], capture_output=True, timeout=120, **kw)


def test_a_closed_stdout_ends_quietly():
    p = subprocess.Popen([sys.executable, "-m", "archline.cli", "platforms", "list"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(60) == 0, err
    assert b"Traceback" not in err and b"Exception ignored" not in err


def test_fit_refuses_its_input_as_output_and_leaves_it_alone(tmp_path):
    sample = next((Path(__file__).parents[2] / "results" / "sample").glob("*.csv"))
    a = tmp_path / "a.csv"
    a.write_bytes(sample.read_bytes())
    before = a.read_bytes()
    r = _archline("fit", str(a), "--format", "csv", "--out", str(a))
    assert r.returncode == 2 and r.stderr.decode().startswith("archline: error: output")
    assert r.stderr.count(b"\n") == 1
    assert a.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def test_a_new_file_on_a_reused_inode_is_not_an_old_input(tmp_path):
    """A library caller never resets the registry: a file deleted after it was read, whose inode a new file then
    gets, is not that input (its change time differs)."""
    a = tmp_path / "a.txt"
    a.write_text("1\n")
    read_text(a, error=Bad)
    st = a.stat()
    outputs._INPUTS[(st.st_dev, st.st_ino)] = (st.st_ctime_ns - 1, str(a))   # as if a.txt were a deleted file's
    write_atomic(a, "2\n")
    assert a.read_text() == "2\n"


def test_an_output_directory_named_through_a_link_is_made_at_its_target(tmp_path):
    (tmp_path / "out-link").symlink_to(tmp_path / "real" / "out")
    with pytest.raises(OSError, match="whose directory does not exist"):   # no tree made for a link's target
        write_atomic(tmp_path / "out-link" / "rows.csv", "x\n")
    assert not (tmp_path / "real").exists()
    (tmp_path / "real").mkdir()
    write_atomic(tmp_path / "out-link" / "rows.csv", "x\n")
    assert (tmp_path / "out-link").is_symlink()
    assert (tmp_path / "real" / "out" / "rows.csv").read_text() == "x\n"
