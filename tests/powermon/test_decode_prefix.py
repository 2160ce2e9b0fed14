"""A stray prefix before a PowerMon 2 stream (the serial session's command-mode text, line noise) is skipped and
counted, and every record after it is decoded, the done record included.

The bug: with the time counter not known (a capture decoded without its sidecar, ``time_set_s=None``), the
alignment search took any word with bit 30 set, every ASCII letter among them, for a time record. A prefix whose
length is a multiple of 4 put such a word just before the stream, in step with it: it was decoded as the stream's
first time record, anchored the device seconds to a garbage counter, every real time record after it looked like
the counter going backwards (a resync each, and the sample before it dropped), and the done record was missed.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.powermon_helpers import SCRIPT, match_truth

from archline.powermon.powermon2.decode import StreamDecoder
from archline.powermon.powermon2.emulator import EMULATED_LINE, PowerMon2Core
from archline.powermon.powermon2.protocol import PROMPT, VERSION_REPLY, mask_from_channels
from archline.powermon.powermon2.records import RecordArrays

SESSION = (VERSION_REPLY + EMULATED_LINE + PROMPT) * 2        # what the port shows before ``e``: 114 bytes of text
JUNK = {"session text": SESSION[:64], "0xff line noise": b"\xff" * 64,
        "prompts": PROMPT * 16, "zeros": b"\x00" * 64}
LENGTHS = range(1, 65)


class _Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


_CAPTURES: dict[int, tuple[bytes, RecordArrays, int]] = {}


def capture(n: int, seconds: int = 3, speed: float = 4.0) -> tuple[bytes, RecordArrays, int]:
    """Channels 0..n-1 at 128 Hz from the emulator (as `meter record --meter emulated:n` streams them): the bytes,
    the records the device sent and its count of time records."""
    if n not in _CAPTURES:
        clk = _Clock()
        core = PowerMon2Core(SCRIPT, clock=clk, speed=speed)
        core.write(b"t 0\rm %d\rs 8 0\r" % mask_from_channels(list(range(n))))
        core.read_available()
        core.write(b"e\r")
        out = bytearray()
        for k in range(1, seconds + 1):
            clk.t = k / speed
            out += core.read_available()
        core.write(b"d\r")
        out += core.read_available()
        truth, sent = core.truth.records()
        assert sent.all()
        _CAPTURES[n] = (bytes(out), truth, core.truth.time_records)
    return _CAPTURES[n]


def decode(data: bytes, n: int, time_set_s: int | None, chunk: int | None = None) -> StreamDecoder:
    dec = StreamDecoder(list(range(n)), 8, time_set_s)
    step = chunk or len(data)
    for i in range(0, len(data), step):
        dec.feed(data[i:i + step])
    dec.finish()
    return dec


def check(dec: StreamDecoder, n: int, skipped: int) -> None:
    _, truth, time_records = capture(n)
    st = dec.stats
    assert st.done, st
    assert match_truth(truth, dec.records()) == len(truth) == st.sample_records, st
    assert st.time_records == time_records and st.lost_records == 0 and st.gaps == 0, st
    assert st.skipped_bytes == skipped and st.resyncs == 0 and st.after_done_bytes == 0, st
    assert [c for c, _ in dec.time_anchors] == list(range(1, time_records + 1))


@pytest.mark.parametrize("time_set_s", [0, None], ids=["sidecar", "no sidecar"])
@pytest.mark.parametrize("junk", list(JUNK))
@pytest.mark.parametrize("n", range(1, 9))
def test_every_prefix_length_is_skipped_and_every_record_decoded(n: int, junk: str, time_set_s: int | None) -> None:
    if junk == "zeros" and n == 1:
        pytest.skip("four zero bytes are a failed read of sensor 0: with one channel they are a plausible record")
    data, _, _ = capture(n)
    for length in LENGTHS:
        prefix = JUNK[junk][:length]
        assert len(prefix) == length
        check(decode(prefix + data, n, time_set_s), n, length)


@pytest.mark.parametrize("chunk", [1, 7, 61, 4096])
def test_prefix_fed_in_chunks(chunk: int) -> None:
    n = 4
    data, _, _ = capture(n)
    for length in (4, 8, 12, 57, 64) if chunk < 61 else LENGTHS:
        check(decode(SESSION[:length] + data, n, None, chunk), n, length)


def test_the_whole_serial_session_before_the_stream() -> None:
    """The F18 case: version reply, the emulator's line and the prompt (57 bytes), decoded without a sidecar."""
    for n in range(1, 9):
        data, _, _ = capture(n)
        prefix = VERSION_REPLY + EMULATED_LINE + PROMPT
        check(decode(prefix + data, n, None), n, len(prefix))


def test_a_clean_capture_is_unchanged() -> None:
    for n in range(1, 9):
        data, truth, _ = capture(n)
        for time_set_s in (0, None):
            dec = decode(data, n, time_set_s)
            check(dec, n, 0)
            assert np.array_equal(dec.records().event, truth.event)
