"""IPMI DCMI over RMCP+ (IPMI 2.0 lanplus) through pyghmi: a real IPMI LAN client, and an emulated BMC answering
Get Power Reading (a ``pyghmi.ipmi.bmc.Bmc`` on 127.0.0.1).

pyghmi's 1.6.19 client proposes SHA-256 first and fails on a BMC that answers with cipher suite 3 (HMAC-SHA1), as
pyghmi's own server does (bmc_power.md); ``sha1=True`` starts the client at SHA-1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from archline.powermon.bmc import dcmi
from archline.powermon.bmc.redfish import BmcUnavailable, PowerReading
from archline.powermon.errors import DeviceError, MeterError


def parse_url(url: str) -> tuple[str, int]:
    """``ipmi://host[:port]`` -> (host, port); port 623 by default."""
    u = urlsplit(url if "://" in url else f"ipmi://{url}")
    if u.scheme != "ipmi" or not u.hostname:
        raise MeterError(f"ipmi: {url!r} is not ipmi://HOST[:PORT]")
    return u.hostname, u.port or 623


class DcmiClient:
    """One BMC's DCMI power reading over IPMI LAN (pyghmi ``Command.raw_command``)."""

    def __init__(self, url: str, username: str | None, password: str | None, sha1: bool = False,
                 period_s: int | None = None) -> None:
        try:
            from pyghmi.ipmi import command
            from pyghmi.ipmi.private import session as ipmisession
        except ImportError:
            raise DeviceError("ipmi: pyghmi is not installed (pip install pyghmi)") from None
        self.url = url
        self.host, self.port = parse_url(url)
        self.period_s = period_s
        if sha1 and not getattr(ipmisession.Session, "_archline_sha1", False):
            # see the module docstring: pyghmi's server only speaks SHA-1 (patched once per process)
            orig = ipmisession.Session._open_rmcpplus_request

            def open_sha1(sess: Any) -> Any:
                sess.attemptedhash = 1
                return orig(sess)

            ipmisession.Session._open_rmcpplus_request = open_sha1   # type: ignore[method-assign]
            ipmisession.Session._archline_sha1 = True
        try:
            self.cmd = command.Command(self.host, username or "", password or "", port=self.port)
        except Exception as e:
            raise DeviceError(f"ipmi {self.host}:{self.port}: cannot log in ({e})") from None

    def read(self) -> PowerReading:
        try:
            rsp = self.cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_POWER_READING,
                                       data=dcmi.request(self.period_s))
        except Exception as e:
            raise BmcUnavailable(f"ipmi {self.host}:{self.port}: {e}") from None
        if rsp.get("code") in (0xC0, 0xC3):     # node busy, timeout: try again on the next poll
            raise BmcUnavailable(f"ipmi {self.host}:{self.port}: completion code 0x{rsp['code']:02X} (busy)")
        if rsp.get("code"):
            raise DeviceError(f"ipmi {self.host}:{self.port}: Get Power Reading answered completion code "
                              f"0x{rsp['code']:02X} (no DCMI power support?)")
        r = dcmi.decode(bytes(rsp["data"]))
        if not r.active:
            raise BmcUnavailable(f"ipmi {self.host}:{self.port}: power measurement not active")
        return PowerReading(float(r.current_w), None, float(r.average_w), r.period_ms / 60000.0)

    def close(self) -> None:
        try:
            self.cmd.ipmi_session.logout()
        except Exception:
            pass


def dcmi_bmc(reading: Callable[[], dcmi.DcmiPowerReading | None], credentials: dict[str, str],
             serve_thread: bool = True) -> Any:
    """A pyghmi BMC on 127.0.0.1 (a free UDP port) answering DCMI Get Power Reading with ``reading()`` (None:
    completion code 0xC0, busy); ``.port``, ``.stop()``. Other commands: pyghmi's defaults (0xC1 where none)."""
    import socket

    from pyghmi.ipmi import bmc
    from pyghmi.ipmi.private import session as ipmisession

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:   # a free port (pyghmi binds by number)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class DcmiBmc(bmc.Bmc):   # type: ignore[misc]
        def handle_raw_request(self, request: dict[str, Any], session: Any) -> None:
            data = bytes(request.get("data", b""))
            if request["netfn"] == dcmi.NETFN_GROUP and request["command"] == dcmi.CMD_GET_POWER_READING:
                if data[:1] != bytes([dcmi.DCMI_GROUP]):
                    session.send_ipmi_response(code=0xC1)
                    return
                r = reading()
                if r is None:       # a fault: the BMC is busy
                    session.send_ipmi_response(code=0xC0)
                    return
                session.send_ipmi_response(data=list(dcmi.encode(r)))
                return
            super().handle_raw_request(request, session)

    server = DcmiBmc(credentials, port=port, address="127.0.0.1")
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            ipmisession.Session.wait_for_rsp(0.05)

    # pyghmi has one dispatcher per process: this thread and an in-process client's own wait both dispatch.
    # Known: about one login in ten then hangs (seen in tests/powermon/test_bmc_ipmi.py); not yet fixed.
    th = threading.Thread(target=loop, name="ipmi server", daemon=True)
    if serve_thread:
        th.start()

    def stop_fn() -> None:
        stop.set()
        if th.is_alive():
            th.join(timeout=2)
        # pyghmi keeps every socket it made in one process-wide list (the first one wakes its I/O thread):
        # closing ours would break later sessions, so it stays open, unanswered
        ipmisession.Session.bmc_handlers.pop(server.serversocket, None)

    server.stop = stop_fn
    server.port = port
    time.sleep(0.01)
    return server
