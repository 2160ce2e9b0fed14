"""An input read as blocks of whole lines without holding it (a pipe, ``/dev/stdin``, ``<(...)``, a compressed
file): the CSV reader (:mod:`archline.formats.results_file`) parses each block with the header line before it, so
memory does not grow with the rows and every line keeps its number. The errors of reading a results file
(:class:`SourceError`, :class:`ReadError`) are defined here, at the bottom of its reading, and re-exported by its
owner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from archline.common.files import check_text_bytes
from archline.common.outputs import show
from archline.model.errors import ArchlineFitError

__all__ = ["HEADER_BYTES", "MAX_LINE_BYTES", "LineBlocks", "ReadError", "SourceError", "decompress"]

#: the most of a file's start read to find its header line
HEADER_BYTES = 1 << 20

#: the longest line a streamed input may hold (one without newlines is not a CSV)
MAX_LINE_BYTES = 64 << 20


class SourceError(ArchlineFitError):
    """A results file (or data set) that cannot be read as such; ``kind`` says how (a reader may re-raise it as
    its own type): read | empty | schema | malformed."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ReadError(SourceError):
    """Missing, unreadable, a directory or device, binary, empty or cut off (common.files' checks)."""

    def __init__(self, message: str) -> None:
        super().__init__("read", message)


class LineBlocks:
    """A pipe (or a compressed file) read as a CSV without holding it: its header line, then blocks of whole
    lines of about ``block_bytes`` with the line number of each block's first line. The checks
    :func:`check_text_bytes` makes of a file held whole are made here as the bytes pass: empty, binary (a NUL
    byte in the first 4 KiB), cut off (no newline after the last line, found at the end)."""

    def __init__(self, f: BinaryIO, path: Path, codec: str | None, what: str, block_bytes: int) -> None:
        self.path, self.what, self.codec, self.block_bytes = path, what, codec, block_bytes
        self._src: Any = f
        if codec == "xz":               # pyarrow is rarely built with lzma; Python always has it
            import lzma

            self._src = lzma.LZMAFile(f)
        elif codec is not None:
            import pyarrow as pa

            self._src = pa.CompressedInputStream(pa.PythonFile(f, mode="r"), codec)
        head = b""
        while b"\n" not in head and len(head) < HEADER_BYTES:
            more = self._read(min(1 << 16, HEADER_BYTES - len(head)))
            if not more:
                break
            head += more
        check_text_bytes(head, path, error=ReadError, what=what, lines=False)
        cut = head.find(b"\n") + 1
        if cut == 0:        # one line without a newline: cut off (or not a CSV)
            check_text_bytes(head, path, error=ReadError, what=what, lines=True)
            cut = len(head)
        self.header, self._rest = head[:cut], head[cut:]

    def _read(self, n: int) -> bytes:
        try:
            return bytes(self._src.read(n))
        except OSError as e:
            if self.codec is None:
                raise ReadError(f"{self.what} {show(self.path)}: cannot read ({e.strerror or e})") from None
            raise _codec_error(e, self.codec, self.path, self.what) from None
        except Exception as e:      # pyarrow's decompression errors (ArrowInvalid)
            raise _codec_error(e, self.codec or "", self.path, self.what) from None

    def blocks(self) -> Iterator[tuple[bytes, int]]:
        """(whole lines, the input line number of the first), at most ``block_bytes`` at a time (unless
        one line is longer); a last line without its newline is one line naming the input, as for a file held
        whole."""
        rest, line = self._rest, 2
        self._rest = b""
        while True:
            more = self._read(self.block_bytes)
            buf = rest + more if rest else more
            if not more:
                if buf.strip():         # no newline after the last line: cut off (one line naming the input)
                    check_text_bytes(buf, self.path, error=ReadError, what=self.what, lines=True)
                cut = len(buf) if buf.strip() else 0
            else:
                cut = buf.rfind(b"\n") + 1
                if cut == 0:
                    if len(buf) > MAX_LINE_BYTES:
                        raise SourceError("malformed", f"{show(self.path)}:{line}: a line longer than "
                                                       f"{MAX_LINE_BYTES >> 20} MiB: not a results CSV")
                    rest = buf
                    continue
            block, rest = buf[:cut], buf[cut:]
            del buf
            start = 0
            while start < len(block):
                end = block.rfind(b"\n", start, start + self.block_bytes) + 1
                if end <= start:
                    end = block.find(b"\n", start) + 1 or len(block)
                piece = block[start:end]
                yield piece, line
                line += piece.count(b"\n")
                start = end
            if not more:
                return


def decompress(data: bytes, codec: str, path: Path, what: str) -> bytes:
    """A whole compressed input's bytes decompressed, or one line naming it (a read that holds the input)."""
    import pyarrow as pa

    if codec == "xz":
        import lzma

        try:
            return lzma.decompress(data)
        except (lzma.LZMAError, EOFError) as e:
            raise _codec_error(e, codec, path, what) from None
    try:
        return bytes(pa.input_stream(pa.BufferReader(data), compression=codec).read())
    except (OSError, pa.ArrowInvalid) as e:
        raise _codec_error(e, codec, path, what) from None


def _codec_error(e: Exception, codec: str, path: Path, what: str) -> ReadError:
    """One line naming a compressed input that cannot be decompressed: cut off (its stream ends early) or not
    one at all."""
    why = str(e).splitlines()[0] if str(e) else type(e).__name__
    cut = "truncated" in why.lower() or "ended before" in why.lower()     # pyarrow's words, then lzma's
    a = "an" if codec == "xz" else "a"
    how = f"{a} {codec} file cut off" if cut else f"not {a} {codec} file"
    return ReadError(f"{what} {show(path)}: {how} ({why})")
