"""The emulated BMC's RMCP+ server sessions (``ipmi_serve``): pyghmi's ``ServerSession`` made to take cipher suite 17
or 3 as the client proposes, answer an unknown user as a BMC does, and start each session at User privilege."""

from __future__ import annotations

import os
from typing import Any

from archline.powermon.bmc import rmcp

PRIV_USER = 2      #: IPMI privilege levels: 1 callback, 2 user, 3 operator, 4 administrator


def session_privilege(session: Any) -> int:
    """The level a server session runs at: the one Set Session Privilege Level set, else User or the RAKP 1
    maximum if lower (IPMI 2.0 section 13.17: a session starts at User)."""
    priv = getattr(session, "clientpriv", None)
    if isinstance(priv, int):
        return priv
    most = getattr(session, "maxpriv", 4) or 4
    return min(int(most), PRIV_USER)


def suite_session_class(suites: tuple[int, ...]) -> Any:
    """pyghmi's server session (which always answers cipher suite 3 and hashes with SHA-1) made to take the client's
    proposal where it is one of ``suites`` (RMCP+ status 0x11, no match, else) and to run RAKP and the session's
    integrity with that suite's hash: HMAC-SHA256 and a 16-byte HMAC-SHA256-128 check value for 17, HMAC-SHA1 and
    HMAC-SHA1-96 for 3 (IPMI 2.0 sections 13.28-13.31). Its three RAKP steps follow pyghmi's, with the hash a
    variable."""
    import hashlib
    import hmac
    import struct

    from pyghmi.ipmi.private import constants, serversession

    class SuiteSession(serversession.ServerSession):  # type: ignore[misc]
        suite = 3

        def create_open_session_response(self, request: bytearray) -> bytearray:
            self.clientsessionid = request[4:8]
            self.managedsessionid = os.urandom(4)
            self.privlevel = 4
            proposal = rmcp.open_session_proposal(request) if len(request) >= 32 else None
            match = [s for s in suites if rmcp.SUITES[s] == proposal]
            if not match:         # status 0x11: no cipher suite matches the proposed algorithms
                return bytearray([request[0], 0x11, 0, 0]) + self.clientsessionid
            self.suite = match[0]
            self.currhashlib = hashlib.sha256 if self.suite == 17 else hashlib.sha1
            self.currhashlen = 16 if self.suite == 17 else 12
            a, i, c = rmcp.SUITES[self.suite]
            return (bytearray([request[0], 0, self.privlevel, 0]) + self.clientsessionid + self.managedsessionid
                    + bytearray([0, 0, 0, 8, a, 0, 0, 0, 1, 0, 0, 8, i, 0, 0, 0, 2, 0, 0, 8, c, 0, 0, 0]))

        def _got_rakp1(self, data: bytearray) -> None:
            self.Rm = data[8:24]
            self.rolem = data[24]
            self.maxpriv = self.rolem & 0b111
            if data[27] == 0:                   # no name: ignored, as pyghmi does
                return
            self.username = bytes(data[28:])
            self.clientpriv = min(self.maxpriv or 4, PRIV_USER)     # Set Session Privilege Level may raise it
            password = self.authdata.get(self.username.decode("utf-8", "replace"))
            if password is None:                # RAKP 2 status 0x0D, "unauthorized name", as a BMC answers
                self.send_payload(bytearray([data[0], 0x0D, 0, 0]) + self.clientsessionid,
                                  constants.payload_types["rakp2"], retry=False)
                return
            self.uuiddata = self.uuid.bytes
            self.Rc = os.urandom(16)
            self.kuid = password.encode("utf-8")
            if getattr(self, "kg", None) is None:     # no BMC key (Kg): the user's key, as pyghmi's server
                self.kg = self.kuid
            hmacdata = (self.clientsessionid + self.managedsessionid + self.Rm + self.Rc + self.uuiddata
                        + bytearray([self.rolem, len(self.username)]) + self.username)
            authcode = hmac.new(self.kuid, bytes(hmacdata), self.currhashlib).digest()
            self.send_payload(bytearray([data[0], 0, 0, 0]) + self.clientsessionid + self.Rc + self.uuiddata
                              + authcode, constants.payload_types["rakp2"], retry=False)

        def _got_rakp3(self, data: bytearray) -> None:
            who = struct.pack("2B", self.rolem, len(self.username)) + self.username
            self.sik = hmac.new(self.kg, bytes(self.Rm + self.Rc) + who, self.currhashlib).digest()
            self.k1 = hmac.new(self.sik, b"\x01" * 20, self.currhashlib).digest()
            self.k2 = hmac.new(self.sik, b"\x02" * 20, self.currhashlib).digest()
            self.aeskey = self.k2[0:16]
            expected = hmac.new(self.kuid, bytes(self.Rc + self.clientsessionid) + who, self.currhashlib).digest()
            if bytes(data[8:]) != expected or data[1] != 0:   # a wrong password: no RAKP 4, as pyghmi's server
                return
            self.localsid = struct.unpack("<I", self.managedsessionid)[0]
            self.ipmicallback = self.handle_client_request
            self._send_rakp4(data[0], 0)

        def _send_rakp4(self, tagvalue: int, statuscode: int) -> None:
            icv = hmac.new(self.sik, bytes(self.Rm + self.managedsessionid + self.uuiddata),
                           self.currhashlib).digest()[:self.currhashlen]
            self.send_payload(bytearray([tagvalue, statuscode, 0, 0]) + self.clientsessionid + icv,
                              constants.payload_types["rakp4"], retry=False)
            self.confalgo = "aes"
            self.integrityalgo = self.suite       # truthy: pyghmi then signs with currhashlib, currhashlen
            self.sequencenumber = 1
            self.sessionid = struct.unpack("<I", bytes(self.clientsessionid))[0]

    return SuiteSession
