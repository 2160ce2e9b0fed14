"""The PowerMon 2's rows of a samples CSV written while decoding: its voltage and current codes as volts and amps
(the protocol's ADC steps), formatted once per code for :mod:`archline.formats.meters.samples_csv`, which owns
the file and takes this as its :class:`~archline.formats.meters.samples_csv.RowFormat`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.formats.meters.samples import Samples
from archline.formats.meters.traces import SIG_V, _fmt_matrix
from archline.powermon.powermon2.protocol import amps_from_code, volts_from_code
from archline.powermon.powermon2.records import RecordArrays


def code_tables(r_lut: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.uint8]]:
    """Formatted volts for the 4096 codes, and amps for the 4096 codes of each of 16 channels' shunts."""
    codes = np.arange(4096)
    vtab = _fmt_matrix(volts_from_code(codes), SIG_V)
    itab = _fmt_matrix(np.concatenate([amps_from_code(codes, r) for r in r_lut]), SIG_V)
    return {"vtab": vtab, "itab": itab}


@dataclass
class RowFormat:
    """What a row needs besides the record: the code tables, the shunts and the event -> t_s map."""

    r_lut: npt.NDArray[np.float64]
    t_of_event: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]]
    meter: str = ""
    emulated: bool | None = False      #: None: not known (a capture without its sidecar)
    clock: str = "host_monotonic"

    def __post_init__(self) -> None:
        tabs = code_tables(self.r_lut)
        self.vtab, self.itab = tabs["vtab"], tabs["itab"]

    def samples(self, rec: RecordArrays) -> Samples:
        """The block as samples (the row-by-row path and the Samples a caller gets back)."""
        volts = volts_from_code(rec.vcode)
        amps = amps_from_code(rec.icode, self.r_lut[rec.channel])
        s = Samples(self.t_of_event(rec.event), rec.channel.astype(np.int16), volts, amps, volts * amps,
                    (rec.vcode != 0) | (rec.icode != 0), self.meter, self.emulated, self.clock)
        s.meta["codes"] = {"vcode": rec.vcode, "icode": rec.icode, "vtab": self.vtab, "itab": self.itab}
        return s

    def power_w(self, channel: npt.NDArray[np.int64], vcode: npt.NDArray[Any], icode: npt.NDArray[Any]
                ) -> npt.NDArray[np.float64]:
        """The power of each (channel, voltage code, current code), as :meth:`samples` computes it."""
        return volts_from_code(vcode) * amps_from_code(icode, self.r_lut[channel])
