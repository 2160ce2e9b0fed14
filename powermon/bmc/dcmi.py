"""IPMI DCMI "Get Power Reading" (NetFn 0x2C, command 0x02): the request and its 18-byte reply
(../shared/reference/bmc_power.md (b)); pure bytes, no I/O."""

from __future__ import annotations

import struct
from dataclasses import dataclass

NETFN_GROUP = 0x2C
CMD_GET_POWER_READING = 0x02
DCMI_GROUP = 0xDC
MODE_SYSTEM = 0x01
MODE_ENHANCED = 0x02
ACTIVE_BIT = 0x40
_UNITS_S = (1, 60, 3600, 86400)


def request(period_s: int | None = None) -> list[int]:
    """The 4 data bytes: mode 0x01 (the BMC's own window), or mode 0x02 with a rolling window of ``period_s``."""
    if period_s is None:
        return [DCMI_GROUP, MODE_SYSTEM, 0x00, 0x00]
    return [DCMI_GROUP, MODE_ENHANCED, period_code(period_s), 0x00]


def period_code(period_s: int) -> int:
    """Bits 7-6 the unit (s, min, h, days), bits 5-0 the count: 5 s -> 0x05, 1 min -> 0x41, 1 h -> 0x81."""
    for unit, scale in reversed(list(enumerate(_UNITS_S))):
        if period_s % scale == 0 and 0 < period_s // scale < 64:
            return (unit << 6) | (period_s // scale)
    raise ValueError(f"a DCMI averaging period is 1-63 seconds, minutes, hours or days, not {period_s} s")


@dataclass(frozen=True)
class DcmiPowerReading:
    current_w: int
    minimum_w: int
    maximum_w: int
    average_w: int
    timestamp: int             #: the BMC's clock, whole seconds (0..0x20000000: since BMC start; 0xFFFFFFFF: none)
    period_ms: int             #: the statistics reporting period
    active: bool               #: "power measurement active"


def decode(data: bytes | bytearray | list[int]) -> DcmiPowerReading:
    """The reply's data after the completion code: 0xDC, then little-endian u16 x4, u32 x2, the state byte."""
    b = bytes(data)
    if len(b) < 18 or b[0] != DCMI_GROUP:
        raise ValueError(f"not a DCMI power reading ({len(b)} bytes, first {b[:1].hex() or 'none'})")
    cur, mn, mx, avg, ts, period = struct.unpack_from("<HHHHII", b, 1)
    return DcmiPowerReading(cur, mn, mx, avg, ts, period, bool(b[17] & ACTIVE_BIT))


def encode(r: DcmiPowerReading) -> bytes:
    """The reply an emulated BMC sends (inverse of :func:`decode`)."""
    return bytes([DCMI_GROUP]) + struct.pack("<HHHHII", r.current_w, r.minimum_w, r.maximum_w, r.average_w,
                                             r.timestamp, r.period_ms) + bytes([ACTIVE_BIT if r.active else 0])


#: IPMI "Get Device ID" (NetFn App 0x06, command 0x01): archline's emulated BMC identifies itself in it, so that a
#: client reading it (``meter record ipmi://...`` of ``ipmi_serve``) labels its readings emulated. Manufacturer ID
#: 0 (unspecified, no IANA number), product ID 0xA7C1 and auxiliary firmware revision "EMUL": no real BMC sends
#: that combination (a real one carries its vendor's IANA number).
NETFN_APP = 0x06
CMD_GET_DEVICE_ID = 0x01
EMULATOR_PRODUCT_ID = 0xA7C1
EMULATOR_AUX = b"EMUL"


def emulator_device_id() -> list[int]:
    """The 15 data bytes of Get Device ID that archline's emulated BMC answers (IPMI 2.0 table 20-1): device 0x20,
    revision 1, firmware 1.0, IPMI 2.0, chassis + sensor device support, manufacturer 0, product, auxiliary."""
    return [0x20, 0x01, 0x01, 0x00, 0x02, 0x81, 0x00, 0x00, 0x00,
            *struct.pack("<H", EMULATOR_PRODUCT_ID), *EMULATOR_AUX]


def is_emulator_device_id(data: bytes) -> bool:
    """Whether a Get Device ID reply's data is archline's emulated BMC's."""
    return (len(data) >= 15 and data[6:9] == b"\x00\x00\x00"
            and struct.unpack("<H", data[9:11])[0] == EMULATOR_PRODUCT_ID and data[11:15] == EMULATOR_AUX)
