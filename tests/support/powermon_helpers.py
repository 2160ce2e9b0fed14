"""Helpers for tests of powermon and of code that uses it: a known power script, truth matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from archline.powermon.emulator.power import Script
from archline.powermon.powermon2.decode import RecordArrays


def match_truth(truth: RecordArrays, rec: RecordArrays) -> int:
    """Number of decoded records equal to the generated record at the same (event, channel); asserts no extras."""
    key_t = truth.event * 16 + truth.channel
    key_d = rec.event * 16 + rec.channel
    assert np.all(np.diff(key_t) > 0)
    idx = np.searchsorted(key_t, key_d)
    idx_c = np.minimum(idx, len(key_t) - 1)
    found = (idx < len(key_t)) & (key_t[idx_c] == key_d)
    same = found & (truth.vcode[idx_c] == rec.vcode) & (truth.icode[idx_c] == rec.icode)
    assert same.all(), f"{np.count_nonzero(~same)} decoded records do not match what the device sent"
    assert len(np.unique(key_d)) == len(key_d), "a record was decoded twice"
    return int(np.count_nonzero(same))


SCRIPT = Script([
    (0.0, {0: (12.0, 5.0), 1: (3.3, 2.0), 2: (12.0, 4.0), 3: (12.0, 6.0), 4: (12.0, 7.5), 5: (5.0, 3.0),
           6: (3.3, 1.0), 7: (12.0, 10.0)}),
    (1.25, {0: (12.0, 9.0), 7: (11.9, 12.0)}),
    (2.5, {3: (12.1, 3.0), 1: (3.3, 2.5)}),
    (3.75, {0: (12.0, 4.0), 5: (5.1, 2.0)}),
])


class _Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def make_capture(path: Path, *, speed: float = 1.0, seconds: int = 4, meter: str = "powermon2",
                 version: str | None = None) -> Path:
    """A capture of channels 0-3 at 128 Hz from an emulator at ``speed`` (on a fake clock: no waiting) and its
    sidecar, as `meter record --meter emulated:N` writes them."""
    import json

    from archline.powermon.powermon2.emulator import PowerMon2Core

    clk = _Clock()
    core = PowerMon2Core(SCRIPT, clock=clk, speed=speed)
    core.write(b"t 0\rm 15\rs 8 0\r")
    core.read_available()
    core.write(b"e\r")
    with open(path, "wb") as f:
        for k in range(1, seconds + 1):
            clk.t = k / speed
            f.write(core.read_available())
        core.write(b"d\r")
        f.write(core.read_available())
    side = {"format": "archline.powermon2.raw/1", "meter": meter, "emulated": True, "channels": [0, 1, 2, 3],
            "r_sense_ohm": {str(c): 0.00422 for c in range(4)}, "period_ticks": 8, "rate_hz": 128.0,
            "time_set_s": 0, "speed": speed,
            "clock": {"offset_s": 100.0, "seconds_per_device_s": 1.0 / speed, "drift_ppm": 0.0}}
    if version is not None:
        side["version"] = version
    path.with_name(path.name + ".json").write_text(json.dumps(side))
    return path


def run(capsys: Any, *args: str) -> tuple[int, str, str]:
    """``archline ARGS`` in this process: (exit code, stdout, stderr)."""
    from archline.cli.main import main

    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The one error line of a failed command (and no traceback)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("archline: error:")]
    assert len(lines) == 1 and "Traceback" not in err and "Exception" not in err, err
    return lines[0]


def threads_back(snapshot: Any, before: list[str], timeout_s: float = 2.0) -> list[str]:
    """``snapshot()`` once it equals ``before`` again (threads given ``timeout_s`` to end), or as it is then."""
    import time

    deadline = time.monotonic() + timeout_s
    now = snapshot()
    while now != before and time.monotonic() < deadline:
        time.sleep(0.02)
        now = snapshot()
    return now  # type: ignore[no-any-return]
