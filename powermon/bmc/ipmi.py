"""IPMI DCMI over RMCP+ (IPMI 2.0 lanplus) through pyghmi: a real IPMI LAN client, and an emulated BMC answering
Get Power Reading (a ``pyghmi.ipmi.bmc.Bmc`` on 127.0.0.1) run as a process of its own (``ipmi_serve``): pyghmi
keeps one I/O dispatcher per process, and a server and a client sharing it hung in the login about one run in ten.

The login uses RMCP+ cipher suite 17 (RAKP-HMAC-SHA256, HMAC-SHA256-128, AES-CBC-128) or 3 (the same with SHA-1):
the best of them the BMC lists in Get Channel Cipher Suites, or the one a profile's ``cipher_suite`` forces
(``rmcp.py``: pyghmi implements both but proposes 17 blindly, falls back to 3 silently and takes the BMC's answer
for granted; archline pins its proposal and checks the answer). The suite used is in the meter's info.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from archline.powermon.bmc import dcmi, rmcp
from archline.powermon.bmc.ipmi_process import BmcProcess, dcmi_bmc
from archline.powermon.bmc.reading import BmcUnavailable, PowerReading
from archline.powermon.errors import DeviceError, MeterError

if TYPE_CHECKING:
    from archline.powermon.bmc.bmc_meter import BmcMeter
    from archline.powermon.bmc.emulator import RedfishFaults
    from archline.powermon.emulator.power import PowerCallable, PowerSource
    from archline.powermon.emulator.sensor import SensorModel
    from archline.powermon.spec import MeterSpec

log = logging.getLogger("archline.powermon")
__all__ = ["BmcProcess", "DcmiClient", "dcmi_bmc", "emulate_node", "mask", "parse_url", "url_credentials"]


#: IPMI 2.0 user names are 16 bytes at most, RMCP+ passwords 20 (section 13.31; table 22-33)
MAX_USER_BYTES, MAX_PASSWORD_BYTES = 16, 20


def _split(url: str) -> tuple[str, str | None, str]:
    """``ipmi://[USERINFO@]HOSTPORT`` -> (scheme, userinfo or None, hostport). The userinfo runs to the LAST ``@``,
    so a password may hold ``@``, ``:``, ``/`` or ``#``; an IPMI address has no path, query or fragment."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "ipmi", url
    userinfo, at, hostport = rest.rpartition("@")
    return scheme, (userinfo if at else None), hostport


def mask(url: str) -> str:
    """``url`` fit to print: the whole userinfo (user and password) becomes ``***``, wherever its ``@`` falls."""
    scheme, userinfo, hostport = _split(url)
    return f"{scheme}://{'***@' if userinfo is not None else ''}{hostport}"


def parse_url(url: str) -> tuple[str, int]:
    """``ipmi://[USER[:PASSWORD]@]HOST[:PORT]`` -> (host, port); port 623 by default, else 1-65535 (MeterError,
    exit 2, naming the port: 0 or 70000 are no UDP port, and were taken as 623 and 4464). A path, query or
    fragment is refused: nothing reads them."""
    scheme, _, hostport = _split(url)
    shown = mask(url)
    if scheme != "ipmi" or not hostport or any(c.isspace() for c in url):
        raise MeterError(f"ipmi: {shown!r} is not ipmi://HOST[:PORT]")
    extra = next((c for c in "/?#" if c in hostport), None)
    if extra is not None:
        cut = hostport[hostport.index(extra):]
        raise MeterError(f"ipmi: {shown!r}: an IPMI address has no path, query or fragment ({cut!r}); give "
                         "ipmi://HOST[:PORT] (a cipher suite goes in the profile's cipher_suite)")
    if hostport.startswith("["):                       # [IPv6]:port
        host, close, tail = hostport[1:].partition("]")
        if not close or (tail and not tail.startswith(":")):
            raise MeterError(f"ipmi: {shown!r} is not ipmi://HOST[:PORT]")
        port_text = tail[1:] if tail else None
    elif hostport.count(":") > 1:                      # a bare IPv6 address: no port
        host, port_text = hostport, None
    else:
        host, colon, port_text_ = hostport.partition(":")
        port_text = port_text_ if colon else None
    if not host:
        raise MeterError(f"ipmi: {shown!r} names no host; give ipmi://HOST[:PORT]")
    if port_text is None:
        return host, 623
    if not (port_text.isascii() and port_text.isdigit() and 1 <= int(port_text) <= 65535):
        raise MeterError(f"ipmi: {shown!r}: port {port_text!r} is not a UDP port (1-65535; 623 when none is given)")
    return host, int(port_text)


LOGIN_TIMEOUT_S = 10.0      # pyghmi retries a silent BMC for up to a minute; a BMC that answers logs in in < 1 s
#: one Get Power Reading's answer: milliseconds on a LAN; past this the poll fails (counted) rather than wait for
#: pyghmi's retries and re-login (about 40 s when the BMC died), and later polls fail at once until it returns
READ_TIMEOUT_S = 1.5


def url_credentials(url: str) -> tuple[str | None, str | None]:
    """``ipmi://user:pw@host`` -> (user, pw); (None, None) without. Percent-escapes are decoded."""
    _, userinfo, _ = _split(url)
    if userinfo is None:
        return None, None
    user, colon, pw = userinfo.partition(":")
    return (unquote(user) or None, unquote(pw) if colon else None)


def _forget(session_cls: Any, host: str, port: int) -> None:
    """Drop pyghmi's cached half-made sessions to ``host:port``: 1.6.19 files them under the str user and password
    but removes them under the encoded ones, so a broken or logged-out session stays and is handed, broken, to the
    next login with the same credentials (a second client, or suite 3 after a refused 17)."""
    for key in [k for k in session_cls.initting_sessions if k[0] == host and k[3] == port]:
        session_cls.initting_sessions.pop(key, None)


def _login(command: Any, host: str, port: int, username: str, password: str, password_from: str) -> Any:
    """pyghmi's ``Command`` (a blocking login) within LOGIN_TIMEOUT_S: DeviceError (exit 4) naming why, else.
    ``password_from``: where the password came from, for the message (the URL, or password_env's variable)."""
    _forget(command.session.Session, host, port)
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["cmd"] = command.Command(host, username, password, port=port)
        except Exception as e:          # pyghmi raises bare Exceptions, some with no text
            out["error"] = e
    t = threading.Thread(target=run, name="ipmi login", daemon=True)
    t.start()
    t.join(LOGIN_TIMEOUT_S)
    if t.is_alive():     # the thread ends when pyghmi gives up; nothing it makes is used
        raise DeviceError(f"ipmi {host}:{port}: no login within {LOGIN_TIMEOUT_S:g} s (is a BMC listening there, "
                          "on UDP? check the address and port)")
    check = f"check the username and {password_from}"
    if "error" in out:
        e = out["error"]
        why = str(e) or type(e).__name__
        if "Unauthorized name" in why or "Invalid username length" in why:
            # RAKP 2 status 0x0D (or 0x0C): the BMC has no such user (IPMI 2.0 table 13-15)
            raise DeviceError(f"ipmi {host}:{port}: user {username!r} unknown to the BMC ({why}); give a user it "
                              "has (the profile's username, or ipmi://USER:PASSWORD@HOST)")
        if why == "None":
            why = "no answer to the password: it was refused, or nothing answers"
        hint = ("set the meter's cipher_suite to one the BMC accepts" if "cipher suite" in why else check)
        raise DeviceError(f"ipmi {host}:{port}: cannot log in ({why}); {hint}")
    cmd = out["cmd"]
    sess = getattr(cmd, "ipmi_session", None)
    if sess is not None and (getattr(sess, "broken", False) or not getattr(sess, "logged", 1)):
        # pyghmi returns a broken session, not an error, when the BMC refuses the password at SHA-1
        raise DeviceError(f"ipmi {host}:{port}: cannot log in (the password was refused: no RAKP 4); {check}")
    return cmd


class DcmiClient:
    """One BMC's DCMI power reading over IPMI LAN (pyghmi ``Command.raw_command``), logged in with cipher suite
    ``cipher_suite`` (17 or 3; None: the best the BMC offers); ``.cipher_suite`` says which was used,
    ``.capabilities`` what Get DCMI Capabilities Info said (None where the BMC does not answer it), ``.last`` the
    last reading as decoded (its ``timestamp`` the BMC's clock) and ``.reported_period_s`` the statistics period
    :meth:`reported_period` read (seconds; None: not asked, or not 1 s to 1 h).
    ``password_from``: where ``password`` came from, for messages (the URL's is named as such)."""

    def __init__(self, url: str, username: str | None, password: str | None, cipher_suite: int | None = None,
                 period_s: int | None = None, password_from: str | None = None) -> None:
        try:
            from pyghmi.ipmi import command
            from pyghmi.ipmi.private import session as ipmisession
        except ImportError:
            raise DeviceError("ipmi: pyghmi is not installed (pip install pyghmi)") from None
        self.url = mask(url)                      # info() shows it: never a user or password
        self.host, self.port = parse_url(url)
        url_user, url_password = url_credentials(url)
        if not username and url_user:
            if password is None:
                password, password_from = url_password, "the password in the URL"
            username = url_user
        password_from = password_from or ("the password in the environment variable password_env names"
                                          if password is not None else "the password (none was given)")
        self.period_s = period_s
        self.last: dcmi.DcmiPowerReading | None = None
        self.zero_readings = 0
        self._req_lock = threading.Lock()
        self._inflight: threading.Thread | None = None
        self._inflight_since = 0.0
        if not username:
            # pyghmi then tries a nameless login that a BMC never grants, for up to a minute: refuse at once
            raise MeterError(f"ipmi {self.url}: no username: give the profile's [[meters]] username and "
                             "password_env (or ipmi://USER:PASSWORD@HOST for a test BMC)")
        if len(username.encode()) > MAX_USER_BYTES:
            raise MeterError(f"ipmi {self.url}: the user name is {len(username.encode())} bytes; IPMI allows "
                             f"{MAX_USER_BYTES}")
        if password is not None and len(password.encode()) > MAX_PASSWORD_BYTES:
            raise MeterError(f"ipmi {self.url}: the password ({password_from}) is {len(password.encode())} bytes; "
                             f"IPMI 2.0 allows {MAX_PASSWORD_BYTES}")
        try:
            offered = rmcp.offered_suites(self.host, self.port)
        except rmcp.NothingListens:
            raise DeviceError(f"ipmi {self.host}:{self.port}: nothing listens there on UDP (port unreachable); check "
                              "the address and port, and that the BMC's IPMI over LAN is enabled") from None
        self.suites_offered = sorted(offered) if offered is not None else None
        try:
            order = rmcp.choose(offered, cipher_suite)
        except ValueError as e:
            raise DeviceError(f"ipmi {self.host}:{self.port}: {e}; set the meter's cipher_suite to one it "
                              "offers, or enable suite 17 or 3 on the BMC") from None
        pinned = rmcp.pin_suites(ipmisession.Session)
        for k, suite in enumerate(order):
            pinned[(self.host, self.port)] = suite
            try:
                self.cmd = _login(command, self.host, self.port, username, password or "", password_from)
                break
            except DeviceError as e:
                # a BMC that did not list its suites and refused 17 (or answered another) gets 3; silence or a
                # refused password does not
                if k + 1 == len(order) or "cipher suite" not in str(e):
                    raise
        self.cipher_suite = suite
        #: archline's own emulated BMC (ipmi_serve) says so in its Get Device ID: its readings are labelled emulated
        self.emulated = self._is_emulator()
        self.capabilities = self._capabilities()
        if self.capabilities is not None and not self.capabilities.power_management:
            raise DeviceError(f"ipmi {self.host}:{self.port}: the BMC says it has no DCMI power management (Get DCMI "
                              "Capabilities, parameter 1); read this node's power over Redfish instead")
        if (period_s is not None and self.capabilities is not None
                and period_s not in self.capabilities.rolling_periods_s):
            raise MeterError(f"ipmi {self.host}:{self.port}: the BMC keeps no {period_s} s rolling average (it "
                             f"offers {list(self.capabilities.rolling_periods_s) or 'none'} s)")
        self.reported_period_s: float | None = None

    def _raw(self, netfn: int, command: int, data: Sequence[int] = (), timeout_s: float = READ_TIMEOUT_S
             ) -> dict[str, Any]:
        """One request, answered within ``timeout_s`` or BmcUnavailable: pyghmi retries an unanswered request and
        logs in again for tens of seconds, in the caller's thread. While a request is still unanswered the next
        ones fail at once (pyghmi would queue them behind it), so a poll never waits on a dead BMC."""
        where = f"ipmi {self.host}:{self.port}"
        if not self._req_lock.acquire(timeout=timeout_s):
            raise BmcUnavailable(f"{where}: another request held the session for {timeout_s:g} s")
        try:
            busy = self._inflight
            if busy is not None and busy.is_alive():
                raise BmcUnavailable(f"{where}: no answer for {time.monotonic() - self._inflight_since:.3g} s "
                                     "(the BMC stopped answering, or restarted)")
            out: dict[str, Any] = {}

            def run() -> None:
                try:
                    out["rsp"] = self.cmd.raw_command(netfn=netfn, command=command, data=list(data))
                except Exception as e:      # pyghmi raises bare Exceptions
                    out["error"] = e
            th = threading.Thread(target=run, name="ipmi request", daemon=True)
            self._inflight, self._inflight_since = th, time.monotonic()
            th.start()
            th.join(timeout_s)
            if th.is_alive():
                raise BmcUnavailable(f"{where}: no answer within {timeout_s:g} s")
            if "error" in out:
                raise BmcUnavailable(f"{where}: {out['error'] or type(out['error']).__name__}")
            return dict(out["rsp"])
        finally:
            self._req_lock.release()

    def _capabilities(self) -> dcmi.DcmiCapabilities | None:
        replies: list[bytes | None] = []
        for param in (dcmi.PARAM_SUPPORTED, dcmi.PARAM_POWER_STATISTICS):
            try:
                rsp = self._raw(dcmi.NETFN_GROUP, dcmi.CMD_GET_DCMI_CAPABILITIES, [dcmi.DCMI_GROUP, param],
                                LOGIN_TIMEOUT_S)
            except BmcUnavailable:        # a BMC that does not answer it: its readings will say
                return None
            replies.append(None if rsp.get("code") else bytes(rsp.get("data") or b""))
        if replies[0] is None:
            return None
        try:
            return dcmi.decode_capabilities(replies[0], replies[1])
        except ValueError as e:
            raise DeviceError(f"ipmi {self.host}:{self.port}: Get DCMI Capabilities: {e}") from None

    def reported_period(self) -> float | None:
        """A reading's statistics reporting period in seconds (one Get Power Reading, kept as
        ``.reported_period_s``), where it is 1 s to 1 h (a BMC that counts since its start, or answers 0, says
        nothing of its update period); None where none could be read."""
        try:
            self.read()
        except (BmcUnavailable, DeviceError):
            return None
        ms = self.last.period_ms if self.last is not None else 0
        self.reported_period_s = ms / 1000.0 if 1000 <= ms <= 3_600_000 else None
        return self.reported_period_s

    def describe(self) -> dict[str, Any]:
        """Which source is read and how (the meter's info ``source``, kept in a trace's sidecar and said by
        ``meter record``), as the Redfish client's: the command, the cipher suite of the login and those the BMC
        listed (None: it did not answer Get Channel Cipher Suites), its DCMI version (None: no capabilities), the
        statistics period a reading gave (None: not asked, or not 1 s to 1 h)."""
        caps = self.capabilities
        return {"source": "DCMI Get Power Reading", "cipher_suite": self.cipher_suite,
                "cipher": rmcp.SUITE_NAMES[self.cipher_suite], "cipher_suites_offered": self.suites_offered,
                "dcmi_version": f"{caps.version[0]}.{caps.version[1]}" if caps else None, "reading_time": False,
                "reported_period_s": self.reported_period_s}

    def _is_emulator(self) -> bool:
        try:
            rsp = self._raw(dcmi.NETFN_APP, dcmi.CMD_GET_DEVICE_ID, (), LOGIN_TIMEOUT_S)
        except BmcUnavailable:        # a BMC that does not answer it is no emulator of ours
            return False
        return not rsp.get("code") and dcmi.is_emulator_device_id(bytes(rsp.get("data") or b""))

    def read(self) -> PowerReading:
        rsp = self._raw(dcmi.NETFN_GROUP, dcmi.CMD_GET_POWER_READING, dcmi.request(self.period_s))
        if rsp.get("code") in (0xC0, 0xC3):     # node busy, timeout: try again on the next poll
            raise BmcUnavailable(f"ipmi {self.host}:{self.port}: completion code 0x{rsp['code']:02X} (busy)")
        if rsp.get("code"):
            raise DeviceError(f"ipmi {self.host}:{self.port}: Get Power Reading answered completion code "
                              f"0x{rsp['code']:02X} (no DCMI power support?)")
        r = self.last = dcmi.decode(bytes(rsp["data"]))
        if not r.active:
            raise BmcUnavailable(f"ipmi {self.host}:{self.port}: power measurement not active")
        if r.current_w == 0:
            self.zero_readings += 1
            if self.zero_readings == 1:       # once: a node draws power while its BMC runs
                log.warning("ipmi %s:%s: the BMC reads 0 W for the whole node, which no running node draws (host "
                            "off, or a BMC that is not measuring?); the energy counts it as 0 W", self.host, self.port)
        return PowerReading(float(r.current_w), None, float(r.average_w), r.period_ms / 60000.0)

    def close(self) -> None:
        """Log out, within a second: a BMC that died or restarted would hold pyghmi's logout for its retries."""
        busy = self._inflight
        if busy is not None and busy.is_alive():
            return                            # a request still hangs: the session is dead, nothing to log out of

        def run() -> None:
            try:
                self.cmd.ipmi_session.logout()
            except Exception:
                pass
        th = threading.Thread(target=run, name="ipmi logout", daemon=True)
        th.start()
        th.join(1.0)


def emulate_node(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float,
                 faults: RedfishFaults | None, sensor: SensorModel, name: str | None, **kw: Any) -> BmcMeter:
    """``emulate_from_spec`` for ``kind = "ipmi"``: an emulated node behind a BMC process (:func:`dcmi_bmc`) on
    127.0.0.1 answering DCMI Get Power Reading in whole watts, read by the real client; the readings are computed
    here (the Redfish emulator's sensor model). ``faults``: every Nth request answered 0xC0 (busy), stale stretches
    as for Redfish. ``meter.server``: that model (its ``served_503`` counts the busy answers)."""
    from archline.powermon.bmc.bmc_meter import BmcMeter, spec_channel
    from archline.powermon.bmc.emulator import RedfishEmulator, RedfishFaults
    from archline.powermon.counters.emulated import Timeline, device_power

    server = dcmi_bmc(lambda: reading(), {"archline": "emulated"})   # its process (~1 s) first, then the clock
    try:
        timeline = Timeline(speed)
        clock0_s = time.time() - timeline.emulated_time_s() / speed      # the BMC's clock at device time 0
        pw = device_power(power, [c.id for c in spec.channels] or [0], timeline)
        model = RedfishEmulator(pw, sensor, timeline, faults or RedfishFaults())   # the readings, not its server
        lock = threading.Lock()
        count = [0]

        def reading() -> dcmi.DcmiPowerReading | None:
            with lock:
                count[0] += 1
                n = count[0]
            if model.faults.http_503_every and n % model.faults.http_503_every == 0:
                model.served_503 += 1
                return None
            w, tk, stale = model.reading(timeline.emulated_time_s())
            model.stale_served += int(stale)
            return dcmi.emulated_reading(w, tk, clock0_s, sensor.window_s)

        client = DcmiClient(f"ipmi://127.0.0.1:{server.port}", "archline", "emulated")
        rail, device = spec_channel(spec)
        meter = BmcMeter(client, rail, device, update_period_s=sensor.update_period_s, lag_s=sensor.lag_s,
                         window_s=sensor.window_s, quantum_w=1.0, speed=speed,
                         name=name or f"{spec.name}-emulated", emulated=True, **kw)
    except BaseException:
        server.stop()
        raise
    meter.sensor = sensor
    meter.server = model                          # type: ignore[attr-defined]
    meter._on_stop += [client.close, server.stop]
    return meter
