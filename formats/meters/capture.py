"""The one owner of raw PowerMon 2 captures (``C.raw.bin``) and their sidecars (``C.raw.bin.json``,
:class:`archline.formats.meters.sidecar.CaptureSidecar`), and of the byte-stream meters' captures (PowerSensor3,
PMD-USB: the same bytes-as-read file, with a :data:`STREAM_RAW_FORMAT` sidecar that :func:`read_stream_capture` reads).

Writing (:class:`RawCapture`): every byte read, written as it arrives under a hidden temporary name
(``.NAME.PID.tmp``) and renamed onto its final name, with its JSON sidecar, when the stream stops. A killed process
never leaves a truncated capture under the final name; a full disk removes the temporary file and raises the
OSError naming the capture. The output policy applies: a capture never replaces an input of the command and is
written through a symlink to its target.

Reading (:func:`read_capture`): once, as a stream (a pipe or ``<(...)`` works; a device such as ``/dev/zero`` is
refused), a pipe bounded by :data:`archline.formats.meters.versions.MAX_CAPTURE_STREAM_BYTES`; the sidecar is validated.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from archline.common.atomic import commit_temp, write_atomic
from archline.common.outputs import check_output, make_dirs, temp_name
from archline.common.processes import process_gone
from archline.formats.meters.errors import MeterError
from archline.formats.meters.versions import MAX_CAPTURE_STREAM_BYTES

if TYPE_CHECKING:  # pragma: no cover
    from archline.formats.meters.sidecar import CaptureSidecar


#: the sidecar format of a byte-stream meter's capture (its ``type`` names the meter kind that decodes it)
STREAM_RAW_FORMAT = "archline.stream.raw/1"


_JSON = ".json"     #: a capture's sidecar is its name plus this (the temporary file's too: room is kept for it)


def sidecar_path(raw_path: str | Path) -> Path:
    p = Path(raw_path)
    return p.with_name(p.name + _JSON)


def _read_bytes(p: Path) -> bytes:
    from archline.common.files import open_input, read_stream

    with open_input(p, error=MeterError, what="capture", give="the .raw.bin file") as f:
        regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        return read_stream(f, p, error=MeterError, what="capture",
                           limit_bytes=None if regular else MAX_CAPTURE_STREAM_BYTES)


def stream_capture_kind(path: str | Path) -> str | None:
    """The meter kind of a byte-stream meter's capture (from its sidecar), or None (a PowerMon 2 capture, or none)."""
    from archline.formats.meters.samples_file import find_sidecar

    sp = find_sidecar(Path(path))
    if sp is None or not sp.is_file():  # a FIFO or device beside it is not read here (read_capture says why)
        return None
    try:
        side = json.loads(sp.read_text())
    except (OSError, ValueError):
        return None                     # read_capture says what is wrong with it
    if not isinstance(side, dict) or side.get("format") != STREAM_RAW_FORMAT:
        return None
    return str(side.get("type"))


def read_stream_capture(path: str | Path, kind: str) -> tuple[bytes, dict[str, Any]]:
    """A byte-stream meter's capture (read once) and its sidecar, which must name ``kind``."""
    from archline.common.files import read_json
    from archline.formats.meters.samples_file import find_sidecar

    p = Path(path)
    data = _read_bytes(p)
    sp = find_sidecar(p)
    if sp is None:
        raise MeterError(f"capture {p} has no sidecar {sidecar_path(p).name}: a {kind} capture cannot be decoded "
                         "without it (keep the two together)")
    side = read_json(sp, error=MeterError)
    if not isinstance(side, dict) or side.get("format") != STREAM_RAW_FORMAT or side.get("type") != kind:
        raise MeterError(f"{sp} is not the sidecar of a {kind} capture (format {STREAM_RAW_FORMAT})")
    rate = side.get("rate_hz")
    if not isinstance(rate, (int, float)) or not rate > 0:
        raise MeterError(f"{sp}: rate_hz must be a positive number, got {rate!r}")
    return data, side


def read_capture(path: str | Path) -> tuple[bytes, CaptureSidecar | None]:
    """A capture's bytes (read once) and its validated sidecar (None when it has none, e.g. a pipe)."""
    p = Path(path)
    data = _read_bytes(p)
    from archline.formats.meters.samples_file import find_sidecar

    sp = find_sidecar(p)
    if sp is None:
        return data, None
    from archline.formats.meters.sidecar import CaptureSidecar

    return data, CaptureSidecar.load(sp)


class RawCapture:
    def __init__(self, path: str | Path, sidecar_format: str | None = None) -> None:
        self.path = Path(path)
        self.sidecar_format = sidecar_format   #: written as the sidecar's ``format`` (a stream meter's)
        self.tmp = temp_name(self.path, len(_JSON))
        self.target = self.path                #: the file the capture replaces (a symlink's target)
        self.error: OSError | None = None      #: a write that failed (full disk): the capture cannot be kept
        self._f: IO[bytes] | None = None

    def open(self) -> None:
        """Start the temporary file beside the capture's real target (an input of the command is refused); the
        temporary files a killed recording of the same capture left (their process is gone) are removed."""
        self.target = check_output(self.path)
        check_output(sidecar_path(self.path))
        # the one temp-name rule (long and non-UTF-8 names too), with room for the temp's own sidecar (.json)
        self.tmp = temp_name(self.target, len(_JSON))
        _remove_stale_temps(self.target)
        try:
            make_dirs(self.tmp.parent)
            self._f = open(self.tmp, "wb")
        except OSError as e:    # the capture the user will look for is named, not the hidden temp file
            raise OSError(e.errno, e.strerror, str(self.path)) from None

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Open the capture for a stream being started; if the start fails or is interrupted (SIGTERM) before the
        stream runs, no temporary file is left."""
        self.open()
        try:
            yield
        except BaseException:
            self.abandon()
            raise

    def note_open(self, meta: Callable[[], dict[str, Any]]) -> None:
        """A stream meter's sidecar as the stream opens (``meta()``: configuration, rate, version), beside the
        temporary file (``.NAME.PID.tmp.json``): a killed recording (kill -9) leaves a capture that ``meter decode
        --partial`` can still read (without the final clock map and counts). Removed once the capture is kept."""
        if self.sidecar_format is None or self._f is None:
            return
        side = {"format": self.sidecar_format, **meta(), "recovery": "written when the stream opened: the "
                "recording did not finish (no final clock map, counts or hints)"}
        with contextlib.suppress(OSError):        # a help for later, never a reason to fail the recording
            write_atomic(sidecar_path(self.tmp), json.dumps(side, indent=1))

    def write(self, chunk: bytes) -> bool:
        """Append ``chunk``; False (and ``error`` set) when it could not be written."""
        if self._f is None or self.error is not None:
            return self.error is None
        try:
            self._f.write(chunk)
        except OSError as e:
            self.error = e
            return False
        return True

    def finish(self, meta: Callable[[], dict[str, Any]]) -> None:
        """Flush, fsync and rename onto the final name, then write the sidecar (``meta()``, once the stream's
        counts are final)."""
        f, self._f = self._f, None
        if f is None:
            return
        try:
            if self.error is not None:
                raise self.error
            f.flush()
            os.fsync(f.fileno())
            f.close()
            commit_temp(self.tmp, self.target)     # the one atomic-write mechanism's rename (and directory fsync)
            side = meta() if self.sidecar_format is None else {"format": self.sidecar_format, **meta()}
            write_atomic(sidecar_path(self.path), json.dumps(side, indent=1))
            sidecar_path(self.tmp).unlink(missing_ok=True)
        except OSError as e:
            with contextlib.suppress(OSError):   # the buffered rest cannot be written either
                f.close()
            self.tmp.unlink(missing_ok=True)
            sidecar_path(self.tmp).unlink(missing_ok=True)
            raise OSError(e.errno, e.strerror, str(self.path)) from None
        except BaseException:                    # interrupted (a second Ctrl-C or SIGTERM): no temp file is left
            with contextlib.suppress(OSError):
                f.close()
            self.tmp.unlink(missing_ok=True)
            sidecar_path(self.tmp).unlink(missing_ok=True)
            raise

    def abandon(self) -> None:
        """Close and remove the temporary file (an interrupted stop: nothing half-written is left)."""
        f, self._f = self._f, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
        self.tmp.unlink(missing_ok=True)
        sidecar_path(self.tmp).unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the capture and its sidecar (a stream that never delivered a sample)."""
        self.abandon()
        for p in (self.path, sidecar_path(self.path)):
            p.unlink(missing_ok=True)


def _temp_pid(name: str, target: Path) -> int | None:
    """The process id in ``name`` where it is one of ``target``'s temporary files (``.NAME.PID.tmp`` or its
    ``.json``, or the form ``temp_name`` shortens a long NAME to, ``.NA-HASH.PID.tmp``); else None."""
    end = ".tmp.json" if name.endswith(".tmp.json") else ".tmp" if name.endswith(".tmp") else None
    if end is None:
        return None
    head, _, pid_text = name[: -len(end)].rpartition(".")
    if not pid_text.isdigit():
        return None
    digest = hashlib.sha1(os.fsencode(target.name)).hexdigest()[:8]
    if head == f".{target.name}" or (head.startswith(".") and head.endswith(f"-{digest}")):
        return int(pid_text)
    return None


def _remove_stale_temps(target: Path) -> None:
    """Remove ``.NAME.PID.tmp`` (and its ``.json``) beside ``target`` whose process no longer runs: what a killed
    recording of the same capture left (a running one's are kept)."""
    try:
        found = [(p, _temp_pid(p.name, target)) for p in target.parent.iterdir() if p.name.startswith(".")]
    except OSError:
        return
    for p, pid in found:
        if pid is not None and pid != os.getpid() and process_gone(pid):  # alive, another user's: not ours to remove
            p.unlink(missing_ok=True)


def stream_capture(kind: str, raw_dir: str | Path | None, raw_path: str | Path | None) -> RawCapture | None:
    """A stream meter's raw capture (``archline.stream.raw/1``): at ``raw_path``, else ``raw_dir/KIND-0000.raw``
    (the PowerMon 2's naming), else none."""
    if raw_path is None and raw_dir is None:
        return None
    path = Path(raw_path) if raw_path is not None else Path(raw_dir or ".") / f"{kind}-0000.raw"
    return RawCapture(path, STREAM_RAW_FORMAT)
