"""Helpers for tests of powermon and of code that uses it: a known power script, truth matching."""

from __future__ import annotations

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
