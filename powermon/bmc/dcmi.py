"""IPMI DCMI "Get Power Reading" (NetFn 0x2C, command 0x02): the request and its 18-byte reply
(../shared/reference/bmc_power.md (b)), its timestamp, and "Get DCMI Capabilities Info" (command 0x01, DCMI 1.5
table 6-3, parameters 1-5); pure bytes, no I/O."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import datetime, timezone

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
    timestamp: int             #: the BMC's clock, whole seconds since 1970 (0..0x20000000: since BMC start; 0xFFFFFFFF:
    #: none), see :func:`timestamp_utc`
    period_ms: int             #: the statistics reporting period
    active: bool               #: "power measurement active"


MAX_READING_W = 0xFFFF      #: a reading's 16 bits


def emulated_reading(power_w: float, t_dev_s: float, clock0_s: float, window_s: float) -> DcmiPowerReading:
    """What an emulated BMC shows for a reading of ``power_w`` taken at device second ``t_dev_s``: whole watts,
    stamped with its clock's second (``clock0_s``, seconds since 1970, at device time 0); below 0 W it shows 0.
    ValueError for a power above DCMI's 16 bits, or NaN (never clipped to 65535 W in silence)."""
    if not power_w < MAX_READING_W + 0.5:        # NaN too; a negative model power shows as 0 W, as a BMC's would
        raise ValueError(f"{power_w:g} W is outside what a DCMI reading holds (0 to {MAX_READING_W} W)")
    watts = max(0, round(power_w))
    return DcmiPowerReading(watts, watts, watts, watts, int(clock0_s + t_dev_s), round(window_s * 1000), True)


#: IPMI timestamps up to this are seconds since the BMC started, not dates; 0xFFFFFFFF is "unspecified"
# (FreeIPMI ipmi-timestamp-spec.h)
TIMESTAMP_SINCE_INIT_MAX = 0x20000000
TIMESTAMP_UNSPECIFIED = 0xFFFFFFFF


def timestamp_utc(ts: int) -> datetime | None:
    """The date an IPMI timestamp names (seconds since 1970 on the BMC's clock, read as UTC; the BMC may keep local
    time), or None where it is no date: seconds since BMC start (<= 0x20000000) or unspecified (0xFFFFFFFF)."""
    if ts <= TIMESTAMP_SINCE_INIT_MAX or ts == TIMESTAMP_UNSPECIFIED:
        return None
    return datetime.fromtimestamp(ts, timezone.utc)


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


#: "Get DCMI Capabilities Info" (NetFn 0x2C, command 0x01): request [0xDC, parameter]; reply 0xDC, the DCMI version
#: (major, minor), the parameter revision, then the parameter's data (DCMI 1.5 table 6-3; the byte layouts as
#: ipmitool's ``dcmi discover`` and FreeIPMI's ipmi-dcmi-cmds.c read them)
CMD_GET_DCMI_CAPABILITIES = 0x01
DCMI_VERSION = (1, 5)
PARAMETER_REVISION = 0x02
PARAM_SUPPORTED, PARAM_MANDATORY, PARAM_OPTIONAL, PARAM_ACCESS, PARAM_POWER_STATISTICS = 1, 2, 3, 4, 5
POWER_MANAGEMENT_BIT = 0x01       # parameter 1, byte 2 ("optional platform capabilities"), bit 0
BMC_SLAVE_ADDRESS = 0x40          # parameter 3, byte 1: 40h is the BMC (20h on IPMB), as ipmitool prints it
NO_CHANNEL = 0xFF


@dataclass(frozen=True)
class DcmiCapabilities:
    version: tuple[int, int]            #: the DCMI specification the BMC conforms to, (1, 5) for 1.5
    power_management: bool              #: parameter 1: "power management / monitoring" supported
    rolling_periods_s: tuple[int, ...]  #: parameter 5: the periods Get Power Reading mode 0x02 takes ((): none)


def period_s(code: int) -> int:
    """A rolling-average period byte back to seconds (inverse of :func:`period_code`)."""
    return (code & 0x3F) * _UNITS_S[code >> 6]


def capabilities_data(parameter: int, rolling_periods_s: tuple[int, ...] = (), lan_channel: int = 1
                      ) -> bytes | None:
    """The reply data an emulated BMC sends for ``parameter`` (None: not a parameter of table 6-3): power
    management only (no SEL, no temperature sensors, no in-band or serial channel), one LAN channel, the BMC itself
    as the power management device, and ``rolling_periods_s`` for mode 0x02."""
    head = bytes([DCMI_GROUP, *DCMI_VERSION, PARAMETER_REVISION])
    body = {PARAM_SUPPORTED: [0x00, POWER_MANAGEMENT_BIT, 0x00],
            PARAM_MANDATORY: [0x00, 0x00, 0x00, 0x00, 0x00],       # 0 SEL entries, no temperature sampling
            PARAM_OPTIONAL: [BMC_SLAVE_ADDRESS, 0x01],             # primary BMC channel 0, device revision 1
            PARAM_ACCESS: [lan_channel, NO_CHANNEL, NO_CHANNEL],
            PARAM_POWER_STATISTICS: [len(rolling_periods_s), *(period_code(p) for p in rolling_periods_s)],
            }.get(parameter)
    return None if body is None else head + bytes(body)


def decode_capabilities(supported: bytes, statistics: bytes | None) -> DcmiCapabilities:
    """Parameters 1 and 5 of Get DCMI Capabilities Info (the data after the completion code); ``statistics`` None
    where parameter 5 was not answered. ValueError for a reply that is not DCMI's."""
    if len(supported) < 7 or supported[0] != DCMI_GROUP:
        raise ValueError(f"not a DCMI capabilities reply ({len(supported)} bytes)")
    periods: tuple[int, ...] = ()
    if statistics is not None:
        if len(statistics) < 5 or statistics[0] != DCMI_GROUP or len(statistics) < 5 + statistics[4]:
            raise ValueError(f"not a DCMI power statistics capabilities reply ({len(statistics)} bytes)")
        periods = tuple(period_s(c) for c in statistics[5:5 + statistics[4]])
    return DcmiCapabilities((supported[1], supported[2]), bool(supported[5] & POWER_MANAGEMENT_BIT), periods)
