"""A pipe a thread feeds, seen as ``/dev/fd/N``: what ``<(cat file)`` gives a command (the tests' one copy)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def pipe_of(data: bytes | None) -> Iterator[str]:
    """A /dev/fd path of a pipe fed ``data`` (None: fed forever) by a thread, as ``<(...)`` gives."""
    r, w = os.pipe()
    stop = threading.Event()

    def feed() -> None:
        with contextlib.suppress(OSError):
            if data is not None:
                os.write(w, data) if len(data) < 60000 else [os.write(w, data[i:i + 60000])
                                                             for i in range(0, len(data), 60000)]
            else:
                block = b"\x00" * 65536
                while not stop.is_set():
                    os.write(w, block)
        os.close(w)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        yield f"/dev/fd/{r}"
    finally:
        stop.set()
        os.close(r)
        t.join(5)
