"""The raw capture of one PowerMon 2 stream: every byte read, written as it arrives under a hidden temporary name
(``.NAME.PID.tmp``) and renamed onto its final name, with its JSON sidecar (``NAME.json``), when the stream stops. A
killed process never leaves a truncated capture under the final name; a full disk removes the temporary file and
raises the OSError naming the capture."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from archline.common.atomic import write_atomic


def sidecar_path(raw_path: str | Path) -> Path:
    p = Path(raw_path)
    return p.with_name(p.name + ".json")


class RawCapture:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.error: OSError | None = None      #: a write that failed (full disk): the capture cannot be kept
        self._f: IO[bytes] | None = None

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.tmp, "wb")

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
            os.replace(self.tmp, self.path)
            write_atomic(sidecar_path(self.path), json.dumps(meta(), indent=1))
        except OSError as e:
            with contextlib.suppress(OSError):   # the buffered rest cannot be written either
                f.close()
            self.tmp.unlink(missing_ok=True)
            raise OSError(e.errno, e.strerror, str(self.path)) from None

    def discard(self) -> None:
        """Remove the capture and its sidecar (a stream that never delivered a sample)."""
        for p in (self.path, sidecar_path(self.path), self.tmp):
            p.unlink(missing_ok=True)
