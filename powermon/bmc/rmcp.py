"""RMCP+ (IPMI 2.0 lanplus) cipher suites 17 and 3: which ones a BMC offers, the best picked, and pyghmi's login
held to it.

A BMC lists its cipher suites in "Get Channel Cipher Suites" (NetFn App 0x06, command 0x54, IPMI 2.0 section 22.15),
which answers before any session; ipmitool 1.8.19 asks it when no ``-C`` is given, and so does archline
(:func:`offered_suites`). archline speaks two suites (IPMI 2.0 table 22-20):

=====  ==================  ==================  ==================
suite  authentication      integrity           confidentiality
=====  ==================  ==================  ==================
17     RAKP-HMAC-SHA256 3  HMAC-SHA256-128 4   AES-CBC-128 1
3      RAKP-HMAC-SHA1 1    HMAC-SHA1-96 1      AES-CBC-128 1
=====  ==================  ==================  ==================

pyghmi 1.6.19's client implements both (it proposes 17, and 3 after a refusal), but proposes 17 whatever the BMC
offers, falls back to 3 silently and takes the BMC's open-session answer for granted (its own comment: "we take it
for granted that the responder accepted our integrity/auth/confidentiality proposal"); against a BMC that answers 3
to a 17 proposal (pyghmi's own server) it fails with ``pack expected 32 items``. :func:`pin_suites` wraps two of its
session methods so that it proposes exactly the suite picked here and refuses, in one line, an answer with other
algorithms or a refusal, instead of falling back. Pure bytes plus one UDP exchange; no session of its own.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

#: suite -> (authentication, integrity, confidentiality) algorithm numbers, IPMI 2.0 table 22-20
SUITES: dict[int, tuple[int, int, int]] = {17: (3, 4, 1), 3: (1, 1, 1)}
PREFERENCE = (17, 3)              # the strongest first, as ipmitool's automatic choice
SUITE_NAMES = {17: "RAKP-HMAC-SHA256/HMAC-SHA256-128/AES-CBC-128", 3: "RAKP-HMAC-SHA1/HMAC-SHA1-96/AES-CBC-128"}
CMD_GET_CHANNEL_CIPHER_SUITES = 0x54
CURRENT_CHANNEL = 0x0E
RECORD_STANDARD, RECORD_OEM = 0xC0, 0xC1
RECORDS_PER_REPLY = 16            # a reply carries up to 16 bytes of records; fewer: the list ended
QUERY_TIMEOUT_S = 1.0             # a BMC on the LAN answers in milliseconds; an old one that lacks 0x54 never does
RMCP_HEADER = b"\x06\x00\xff\x07"


def checksum(data: bytes | list[int]) -> int:
    """IPMI's two's-complement checksum: the bytes and it sum to 0 mod 256."""
    return -sum(data) & 0xFF


def records(suites: list[int] | tuple[int, ...]) -> bytes:
    """The cipher suite records of ``suites`` (table 22-19: C0h, the id, then one algorithm byte each, the tag in
    bits 7-6: 00b authentication, 01b integrity, 10b confidentiality)."""
    out = bytearray()
    for s in suites:
        a, i, c = SUITES[s]
        out += bytes([RECORD_STANDARD, s, a, 0x40 | i, 0x80 | c])
    return bytes(out)


def parse_records(data: bytes) -> dict[int, tuple[int, int, int]]:
    """Cipher suite records -> {suite: (authentication, integrity, confidentiality)}: the first algorithm of each
    kind a record lists (-1 where it lists none); OEM records (C1h, a 3-byte IANA number) are kept by their id."""
    out: dict[int, tuple[int, int, int]] = {}
    k = 0
    while k < len(data):
        if data[k] not in (RECORD_STANDARD, RECORD_OEM) or k + 1 >= len(data):
            raise ValueError(f"not a cipher suite record at byte {k} (0x{data[k]:02X})")
        suite = data[k + 1]
        k += 2 + (3 if data[k] == RECORD_OEM else 0)
        algos = [-1, -1, -1]
        while k < len(data) and data[k] not in (RECORD_STANDARD, RECORD_OEM):
            kind = data[k] >> 6
            if kind < 3 and algos[kind] < 0:
                algos[kind] = data[k] & 0x3F
            k += 1
        out[suite] = (algos[0], algos[1], algos[2])
    return out


def request_packet(index: int, seq: int = 1) -> bytes:
    """A sessionless Get Channel Cipher Suites request (IPMI 2.0 framing, session 0) for list index ``index`` of
    the current channel's IPMI payload, listed by cipher suite (bit 7)."""
    head = [0x20, 0x06 << 2]
    body = [0x81, (seq & 0x3F) << 2, CMD_GET_CHANNEL_CIPHER_SUITES, CURRENT_CHANNEL, 0x00, 0x80 | index]
    msg = bytes([*head, checksum(head), *body, checksum(body)])
    return RMCP_HEADER + bytes([0x06, 0x00]) + bytes(8) + struct.pack("<H", len(msg)) + msg


def parse_reply(pkt: bytes) -> tuple[int, bytes]:
    """(completion code, data after it) of a sessionless Get Channel Cipher Suites reply, in IPMI 2.0 or 1.5
    framing; ValueError for anything else."""
    found = request_message(pkt)
    if found is None:
        raise ValueError("not a sessionless RMCP IPMI packet")
    msg = found[1]
    if len(msg) < 8 or msg[1] >> 2 != 0x07 or msg[5] != CMD_GET_CHANNEL_CIPHER_SUITES:
        raise ValueError("not a Get Channel Cipher Suites response")
    if checksum(msg[3:]) != 0:
        raise ValueError("Get Channel Cipher Suites response: bad checksum")
    return msg[6], bytes(msg[7:-1])


def request_message(pkt: bytes) -> tuple[int, bytes] | None:
    """(offset of the IPMI message, the message) of a sessionless RMCP packet in IPMI 2.0 (session 0) or 1.5
    framing; None for anything else."""
    if pkt[:4] != RMCP_HEADER or len(pkt) < 16:
        return None
    if pkt[4] == 0x06 and pkt[5] & 0x3F == 0x00:
        n = struct.unpack_from("<H", pkt, 14)[0]
        return 16, pkt[16:16 + n]
    if pkt[4] == 0x00:
        return 14, pkt[14:14 + pkt[13]]
    return None


def reply_packet(pkt: bytes, suites: list[int] | tuple[int, ...], channel: int = 1) -> bytes | None:
    """A BMC's answer to a sessionless Get Channel Cipher Suites request ``pkt``: the 16-byte slice of the records
    of ``suites`` at the requested list index, in the request's framing; None if ``pkt`` is not such a request."""
    found = request_message(pkt)
    if found is None:
        return None
    start, msg = found
    if len(msg) < 10 or msg[1] >> 2 != 0x06 or msg[5] != CMD_GET_CHANNEL_CIPHER_SUITES:
        return None
    index = msg[8] & 0x3F
    chunk = records(suites)[RECORDS_PER_REPLY * index:RECORDS_PER_REPLY * (index + 1)]
    head = [msg[3], (0x07 << 2) | (msg[4] & 0x03)]
    body = [msg[0], (msg[4] & 0xFC) | (msg[1] & 0x03), CMD_GET_CHANNEL_CIPHER_SUITES, 0x00, channel, *chunk]
    out = bytes([*head, checksum(head), *body, checksum(body)])
    if start == 16:
        return RMCP_HEADER + bytes([0x06, 0x00]) + bytes(8) + struct.pack("<H", len(out)) + out
    return RMCP_HEADER + bytes([0x00]) + bytes(8) + bytes([len(out)]) + out


def offered_suites(host: str, port: int, timeout_s: float | None = None) -> dict[int, tuple[int, int, int]] | None:
    """The BMC's cipher suites ({suite: algorithms}) from Get Channel Cipher Suites, one UDP exchange per 16 bytes of
    records; None where it does not answer (no reply in ``timeout_s``, QUERY_TIMEOUT_S by default, twice) or
    answers with an error code; :class:`NothingListens` where the host says no process listens on the port."""
    timeout_s = QUERY_TIMEOUT_S if timeout_s is None else timeout_s
    data = b""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)[0]
    except OSError:
        return None
    with socket.socket(family, kind, proto) as s:
        s.settimeout(timeout_s)
        try:
            s.connect(addr)          # a connected socket hears ICMP port unreachable (NothingListens)
        except OSError:
            return None
        for index in range(64):                   # the list index is 6 bits
            reply = _exchange(s, addr, request_packet(index, index + 1))
            if reply is None:
                return None
            try:
                code, body = parse_reply(reply)
            except ValueError:
                return None
            if code != 0 or not body:
                return None
            data += body[1:]                      # the first byte is the channel number
            if len(body) - 1 < RECORDS_PER_REPLY:
                break
    try:
        return parse_records(data)
    except ValueError:
        return None


class NothingListens(Exception):
    """ICMP port unreachable: no process listens on that UDP port (a BMC's firewall would stay silent)."""


def _exchange(s: socket.socket, addr: Any, pkt: bytes, tries: int = 2) -> bytes | None:
    for _ in range(tries):
        try:
            s.sendto(pkt, addr)
            while True:
                reply = s.recv(512)
                if reply[:4] == RMCP_HEADER:
                    return reply
        except TimeoutError:
            continue
        except ConnectionRefusedError:      # ICMP port unreachable (loopback, or a host that says so)
            raise NothingListens(f"nothing listens on UDP {addr[0]}:{addr[1]}") from None
        except OSError:
            return None
    return None


def choose(offered: dict[int, tuple[int, int, int]] | None, forced: int | None) -> list[int]:
    """The suites to try, in order: ``forced`` alone; else the best of 17 and 3 the BMC offers with the algorithms
    of table 22-20; else (it did not say) 17, then 3, as pyghmi does. ValueError naming what the BMC offers where
    no suite archline speaks is among them."""
    if forced is not None:
        if forced not in SUITES:
            raise ValueError(f"cipher suite {forced}: archline speaks suites {' and '.join(map(str, PREFERENCE))}")
        if offered is not None and offered.get(forced) != SUITES[forced]:
            raise ValueError(f"cipher suite {forced} was asked for, but the BMC offers suites "
                             f"{sorted(offered) or 'none'}")
        return [forced]
    if offered is None:
        return list(PREFERENCE)
    usable = [s for s in PREFERENCE if offered.get(s) == SUITES[s]]
    if not usable:
        raise ValueError(f"the BMC offers cipher suites {sorted(offered) or 'none'}, and archline speaks only "
                         f"{' and '.join(map(str, PREFERENCE))}")
    return usable[:1]


def open_session_algorithms(data: bytes | bytearray) -> tuple[int, int, int]:
    """The algorithms an RMCP+ Open Session Response names (table 13-10: authentication at byte 16, integrity at 24,
    confidentiality at 32)."""
    return data[16] & 0x3F, data[24] & 0x3F, data[32] & 0x3F


def open_session_proposal(data: bytes | bytearray) -> tuple[int, int, int]:
    """The algorithms an RMCP+ Open Session Request proposes (table 13-9: at bytes 12, 20 and 28)."""
    return data[12] & 0x3F, data[20] & 0x3F, data[28] & 0x3F


def pin_suites(session_cls: Any) -> dict[tuple[str, int], int]:
    """Wrap pyghmi's ``Session`` once per process so that a login to a (host, port) in the returned dict proposes
    exactly that suite and fails (its error names the suite) where the BMC refuses it or answers other algorithms;
    other hosts keep pyghmi's own behaviour."""
    pinned: dict[tuple[str, int], int] | None = getattr(session_cls, "_archline_suites", None)
    if pinned is not None:
        return pinned
    pinned = {}
    open_request, got_response = session_cls._open_rmcpplus_request, session_cls._got_rmcp_response

    def open_rmcpplus(sess: Any) -> Any:
        suite = pinned.get((sess.bmc, sess.port))
        if suite is not None:
            sess.attemptedhash = 256 if suite == 17 else 1    # pyghmi's two proposals (session.py)
        return open_request(sess)

    def got_rmcp_response(sess: Any, data: Any) -> Any:
        suite = pinned.get((sess.bmc, sess.port))
        if suite is not None and sess.sessioncontext == "OPENSESSION" and data[0] == sess.rmcptag:
            if data[1] != 0:
                from pyghmi.ipmi.private.constants import rmcp_codes

                sess.onlogon({"error": f"the BMC refused cipher suite {suite} "
                                       f"({rmcp_codes.get(data[1], f'RMCP+ status {data[1]}')})"})
                return -9
            got = open_session_algorithms(data) if len(data) >= 36 else None
            if got != SUITES[suite]:
                sess.onlogon({"error": f"the BMC answered algorithms {got} to a cipher suite {suite} proposal "
                                       f"{SUITES[suite]}"})
                return -9
        return got_response(sess, data)

    session_cls._open_rmcpplus_request = open_rmcpplus
    session_cls._got_rmcp_response = got_rmcp_response
    session_cls._archline_suites = pinned
    return pinned
