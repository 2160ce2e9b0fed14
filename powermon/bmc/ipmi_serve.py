"""An emulated BMC answering IPMI DCMI Get Power Reading over RMCP+ (IPMI 2.0 lanplus), in a process of its own::

    python -m archline.powermon.bmc.ipmi_serve --port 0 --power-w 412
    python -m archline.powermon.bmc.ipmi_serve --script steps.json --speed 20 --busy-every 5 --stale 3:6
    python -m archline.powermon.bmc.ipmi_serve --ask          # each reading asked of the parent (see below)

The first line on stdout is the UDP port, printed once the socket is bound (``--address``, 127.0.0.1 by default);
it then serves until SIGTERM or SIGINT, or until its stdin closes (a parent that dies takes it along; run it
detached as ``sleep infinity | python -m ...``). Login: ``--user`` (archline) with the password in the environment
variable ``--password-env`` names (``emulated`` when none is named), over RMCP+ cipher suite 17 or 3, whichever the
client proposes (``--cipher-suites 3`` offers only 3, as older BMCs and pyghmi's own server do); Get Channel Cipher
Suites lists them. Get DCMI Capabilities Info answers parameters 1-5 (``dcmi.capabilities_data``). Other IPMI
commands: pyghmi's defaults.

Why a process: pyghmi keeps one I/O dispatcher per process; an emulated BMC and a client in one process share it,
and about one login in ten hung in the RMCP+ handshake. Here the server's dispatcher is the only one in its process.

Readings: ``--power-w`` a constant; ``--script`` a power script (``Script.load``: JSON or TOML steps, summed over
its channels) through a sensor that shows, every ``--update-period-s`` device seconds, the mean of the last
``--window-s``, in whole watts, the timestamp field the BMC clock's second of the reading (seconds since 1970: the
wall clock when the device clock started, or ``--clock-s``, plus the device seconds); ``--ask``: for each request the
server writes ``? SEQ`` on stdout and takes the reply line ``SEQ HEX`` (the 18 data bytes, ``dcmi.encode``) or
``SEQ busy`` from stdin (no reply within 2 s: busy). Faults (not with ``--ask``, whose parent answers busy itself):
``--busy-every N`` answers every Nth Get Power Reading with completion code 0xC0 (node busy); ``--stale A:B`` (device
seconds, repeatable) keeps showing the reading of device second A until B. Everything it serves is emulated.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT, EXIT_OK
from archline.powermon.bmc import dcmi, rmcp
from archline.powermon.bmc.rakp_server import PRIV_USER, session_privilege, suite_session_class

Reading = Callable[[], "dcmi.DcmiPowerReading | None"]
ASK_TIMEOUT_S = 2.0
DEFAULT_USER = "archline"
DEFAULT_PASSWORD = "emulated"


def make_server(reading: Reading, credentials: dict[str, str], address: str = "127.0.0.1", port: int = 0,
                suites: tuple[int, ...] = rmcp.PREFERENCE, list_suites: bool = True) -> Any:
    """A pyghmi ``Bmc`` bound to ``address:port`` (0: the kernel picks; ``.port`` says which) offering the RMCP+
    cipher ``suites`` (17 and 3 by default; pyghmi's own server offers only 3), answering Get Channel Cipher Suites
    with them (outside a session and inside one), DCMI Get Power Reading with ``reading()`` (None: completion code
    0xC0, busy; a wrong DCMI group id: 0xC1; mode 0x02: 0xCC, no rolling averages are kept, and the reserved modes
    too; short data: 0xC7; a session below User privilege: 0xD4) and Get DCMI Capabilities Info parameters 1-5. It is
    served by :func:`serve` in this process: never run a client in the same process (see the module docstring)."""
    from pyghmi.ipmi import bmc

    session_cls = suite_session_class(suites)

    class DcmiBmc(bmc.Bmc):   # type: ignore[misc]
        def sessionless_data(self, data: bytes, sockaddr: Any) -> None:
            pkt = bytes(data)
            if pkt[:4] == rmcp.RMCP_HEADER and len(pkt) > 16 and pkt[4] == 0x06 and pkt[5] & 0x3F == 0x10:
                session_cls(self.authdata, self.kg, sockaddr, self.serversocket, bytearray(pkt[16:]), self.uuid,
                            bmc=self)           # an RMCP+ Open Session Request: a session that offers ``suites``
                return
            reply = rmcp.reply_packet(pkt, suites)
            if reply is not None:
                if list_suites:
                    self.serversocket.sendto(reply, sockaddr)
                return
            super().sessionless_data(data, sockaddr)

        def handle_raw_request(self, request: dict[str, Any], session: Any) -> None:
            data = bytes(request.get("data", b""))
            if request["netfn"] == dcmi.NETFN_APP and request["command"] == rmcp.CMD_GET_CHANNEL_CIPHER_SUITES:
                # inside a session as well as outside it (ipmitool's ``channel getciphers ipmi 1``)
                if len(data) < 3:
                    session.send_ipmi_response(code=0xC7)
                    return
                index = data[2] & 0x3F
                chunk = rmcp.records(suites)[rmcp.RECORDS_PER_REPLY * index:rmcp.RECORDS_PER_REPLY * (index + 1)]
                session.send_ipmi_response(data=[1, *chunk])
                return
            if request["netfn"] == dcmi.NETFN_GROUP and request["command"] in (dcmi.CMD_GET_POWER_READING,
                                                                                dcmi.CMD_GET_DCMI_CAPABILITIES):
                need = 4 if request["command"] == dcmi.CMD_GET_POWER_READING else 2
                if len(data) < need:           # 0xC7: request data length invalid
                    session.send_ipmi_response(code=0xC7)
                elif data[0] != dcmi.DCMI_GROUP:      # another group's extension: no such command here
                    session.send_ipmi_response(code=0xC1)
                elif session_privilege(session) < PRIV_USER:   # DCMI: both need User privilege (0xD4: too low)
                    session.send_ipmi_response(code=0xD4)
                elif request["command"] == dcmi.CMD_GET_DCMI_CAPABILITIES:
                    caps = dcmi.capabilities_data(data[1])
                    session.send_ipmi_response(code=0xCC) if caps is None else \
                        session.send_ipmi_response(data=list(caps))
                elif data[1] != dcmi.MODE_SYSTEM:   # 0x02: parameter 5 lists no rolling periods; others reserved
                    session.send_ipmi_response(code=0xCC)
                else:
                    r = reading()
                    if r is None:       # a fault: the BMC is busy
                        session.send_ipmi_response(code=0xC0)
                    else:
                        session.send_ipmi_response(data=list(dcmi.encode(r)))
                return
            super().handle_raw_request(request, session)

        def send_device_id(self, session: Any) -> None:
            # archline's emulator says so (a client labels its readings emulated), in the spec's 15-byte form
            session.send_ipmi_response(data=dcmi.emulator_device_id())

    server = DcmiBmc(credentials, port=port, address=address)
    server.port = server.serversocket.getsockname()[1]
    return server


def serve(server: Any, stop: threading.Event) -> None:
    """Dispatch until ``stop`` is set, then close the socket (the port is free once this returns)."""
    from pyghmi.ipmi.private import session as ipmisession

    try:
        while not stop.is_set():
            ipmisession.Session.wait_for_rsp(0.05)
    finally:
        ipmisession.Session.bmc_handlers.pop(server.serversocket, None)
        server.serversocket.close()


def busy_every(reading: Reading, n: int) -> Reading:
    """``reading`` with every ``n``-th request answered busy (0: never)."""
    count = [0]

    def r() -> dcmi.DcmiPowerReading | None:
        count[0] += 1
        return None if n and count[0] % n == 0 else reading()
    return r


def model_reading(power_w: Callable[[Any], Any], speed: float, update_period_s: float, window_s: float,
                  stale: tuple[tuple[float, float], ...] = (), clock_s: float | None = None,
                  energy_j: Callable[[float, float], float] | None = None) -> Reading:
    """Device power through the emulated BMC's sensor model (the Redfish emulator's readings and stale spans, not its
    HTTP server), from now on at ``speed`` device seconds per host second: whole watts, the timestamp field the BMC
    clock's second of the reading, ``clock_s`` (seconds since 1970; None: the wall clock now) at device time 0.
    ``energy_j(t0, t1)``: the power's exact integral (a script's), so that each reading is the exact mean of its
    window (the sensor model's 256-point rule is off by up to half a point's share of a step: 668 W where every 3 s
    mean of a 0/1000 W square wave lies in 333.3-666.7 W)."""
    from archline.powermon.bmc.emulator import RedfishEmulator, RedfishFaults
    from archline.powermon.counters.emulated import Timeline
    from archline.powermon.emulator.sensor import SensorModel

    timeline = Timeline(speed)
    clock0_s = time.time() - timeline.emulated_time_s() / speed if clock_s is None else clock_s
    sensor = SensorModel(update_period_s=update_period_s, window_s=window_s)
    model = RedfishEmulator(power_w, sensor, timeline, RedfishFaults(stale=stale))

    def r() -> dcmi.DcmiPowerReading:
        w, tk, _ = model.reading(timeline.emulated_time_s())
        if energy_j is not None and window_s > 0:
            w = energy_j(tk - window_s, tk) / window_s
        return dcmi.emulated_reading(w, tk, clock0_s, window_s)
    return r


class Parent:
    """``--ask``: readings asked of the parent over stdout/stdin, one at a time (the dispatcher is one thread)."""

    def __init__(self, out: IO[str], stop: threading.Event) -> None:
        self.out, self.stop = out, stop
        self.replies: queue.Queue[str] = queue.Queue()
        self.seq = 0

    def on_line(self, line: str) -> None:
        self.replies.put(line.strip())

    def __call__(self) -> dcmi.DcmiPowerReading | None:
        self.seq += 1
        _say(self.out, f"? {self.seq}")
        try:
            while True:
                seq, _, answer = self.replies.get(timeout=ASK_TIMEOUT_S).partition(" ")
                if seq == str(self.seq):     # a late answer to an earlier question is dropped
                    break
        except queue.Empty:
            return None
        return None if answer == "busy" else dcmi.decode(bytes.fromhex(answer))


def _say(out: IO[str], line: str) -> None:
    try:
        out.write(line + "\n")
        out.flush()
    except (BrokenPipeError, ValueError):    # the parent is gone: stdin will close too
        pass


def _watch_stdin(stop: threading.Event, on_line: Callable[[str], None] | None) -> None:
    for line in sys.stdin:
        if on_line is not None:
            on_line(line)
    stop.set()


def _stale_span(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not A:B (device seconds)") from None
    if not (0 <= a < b):
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= A < B")
    return a, b


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m archline.powermon.bmc.ipmi_serve",
                                description="An emulated BMC answering IPMI DCMI Get Power Reading (RMCP+, UDP); "
                                            "prints its port, serves until SIGTERM or stdin closes.")
    p.add_argument("--port", type=int, default=0, help="UDP port, 1-65535 (0: any free one; printed)")
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--user", default=DEFAULT_USER)
    p.add_argument("--password-env", help=f"environment variable holding the password (default: {DEFAULT_PASSWORD})")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--power-w", type=float, help="a constant reading, watts")
    src.add_argument("--script", help="a power script (JSON or TOML steps), summed over its channels")
    src.add_argument("--ask", action="store_true", help="ask the parent for each reading over stdout/stdin")
    p.add_argument("--speed", type=float, default=1.0, help="device seconds per host second")
    p.add_argument("--update-period-s", type=float, default=1.0, help="a new reading every this many device s")
    p.add_argument("--window-s", type=float, default=1.0, help="each reading the mean of this many device s")
    p.add_argument("--clock-s", type=float, help="the BMC clock at device time 0, seconds since 1970 (default: now)")
    p.add_argument("--cipher-suites", default="17,3", metavar="LIST",
                   help="the RMCP+ cipher suites offered, of 17 and 3 (default: 17,3)")
    p.add_argument("--unlisted", action="store_true",
                   help="leave Get Channel Cipher Suites unanswered (as BMCs older than it)")
    p.add_argument("--busy-every", type=int, default=0, metavar="N", help="every Nth reading answered 0xC0 busy")
    p.add_argument("--stale", type=_stale_span, action="append", default=[], metavar="A:B",
                   help="device seconds A to B show the reading of A (repeatable)")
    return p


def _suites(text: str) -> tuple[int, ...] | None:
    try:
        suites = tuple(dict.fromkeys(int(x) for x in text.split(",")))
    except ValueError:
        return None
    return suites if suites and all(x in rmcp.SUITES for x in suites) else None


def _error(msg: str, code: int) -> int:
    print(f"ipmi_serve: error: {msg}", file=sys.stderr)
    return code


#: the --clock-s an IPMI date allows: after 0x20000000 (seconds since BMC start below), and 2**24 s (194 days of
#: device time) short of 0xFFFFFFFF ("unspecified")
CLOCK_MIN_S, CLOCK_MAX_S = dcmi.TIMESTAMP_SINCE_INIT_MAX + 1, dcmi.TIMESTAMP_UNSPECIFIED - 2**24 - 1


def _check_options(a: argparse.Namespace) -> str | None:
    """The first option out of range, as a message naming it; None when all are fine."""
    for name, v, lo in (("--speed", a.speed, 0.0), ("--update-period-s", a.update_period_s, 0.0)):
        if not (lo < v < math.inf):
            return f"{name} {v:g}: give a finite number > 0"
    if not 0 <= a.window_s < math.inf:
        return f"--window-s {a.window_s:g}: give a finite number >= 0"
    if a.busy_every < 0:
        return f"--busy-every {a.busy_every}: give 0 (never) or more"
    if not 0 <= a.port <= 65535:
        return f"--port {a.port}: not a UDP port; give 1-65535, or 0 for any free one"
    if a.power_w is not None and not 0 <= a.power_w <= dcmi.MAX_READING_W:
        return f"--power-w {a.power_w:g}: a DCMI reading holds 0 to {dcmi.MAX_READING_W} W (16 bits)"
    if a.clock_s is not None and not CLOCK_MIN_S <= a.clock_s <= CLOCK_MAX_S:
        return (f"--clock-s {a.clock_s:.10g}: give seconds since 1970 from {CLOCK_MIN_S} (1987-01-05, an IPMI date) "
                f"to {CLOCK_MAX_S} (2105-07-28), e.g. 1767225600")
    return None


def _script_peak_w(script: Any) -> float:
    """The most the script's channels draw together in any step (inf where volts times amps overflow)."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        p = (script.volts_v[:, script.channels] * script.amps_a[:, script.channels]).sum(axis=1)
    return float(np.max(np.where(np.isfinite(p), p, np.inf)))


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    bad = _check_options(a)
    if bad is not None:
        return _error(bad, EXIT_INPUT)
    suites = _suites(a.cipher_suites)
    if suites is None:
        return _error(f"--cipher-suites {a.cipher_suites!r}: give 17, 3 or both (17,3)", EXIT_INPUT)
    if a.power_w == 0:
        print("ipmi_serve: warning: --power-w 0: no running node draws 0 W; the client warns of it", file=sys.stderr)
    password = DEFAULT_PASSWORD
    if a.password_env:
        if a.password_env not in os.environ:
            return _error(f"the environment variable {a.password_env} (--password-env) is not set", EXIT_INPUT)
        password = os.environ[a.password_env]
    script: Any = None
    if a.script is not None:
        from archline.powermon.emulator.power import Script
        from archline.powermon.errors import MeterError

        try:
            script = Script.load(a.script)
        except MeterError as e:
            return _error(str(e), EXIT_INPUT)
        peak_w = _script_peak_w(script)
        if not peak_w <= dcmi.MAX_READING_W:       # served as 65535 W, or an OverflowError at the first query
            most = f"up to {peak_w:g} W" if math.isfinite(peak_w) else "more than a float holds (volts x amps)"
            return _error(f"--script {a.script}: it draws {most}; a DCMI reading holds 0 to "
                          f"{dcmi.MAX_READING_W} W (16 bits)", EXIT_INPUT)
    # stdout carries the protocol only: pyghmi prints stray messages, so print() goes to stderr from here on
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    stop = threading.Event()
    reading: Reading
    parent: Parent | None = None
    if a.ask:
        reading = parent = Parent(out, stop)
    else:
        if a.script is not None:
            def power_w(t: Any) -> Any:
                return script.power_w(t, script.channels).sum(axis=-1)

            def energy_j(t0: float, t1: float) -> float:
                return script.energy_j(t0, t1)
        else:
            def power_w(t: Any) -> Any:
                import numpy as np

                return np.full(np.shape(t), a.power_w)
        reading = busy_every(model_reading(power_w, a.speed, a.update_period_s, a.window_s, tuple(a.stale),
                                           a.clock_s, energy_j if a.script is not None else None), a.busy_every)
    try:
        server = make_server(reading, {a.user: password}, a.address, a.port, suites, not a.unlisted)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            fix = "choose another --port"
        elif e.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(e, socket.gaierror):
            fix = "--address must be an address of this host (127.0.0.1 by default)"
        else:
            fix = "check --address and --port"
        return _error(f"cannot serve on UDP {a.address}:{a.port} ({e.strerror or e}): {fix}", EXIT_DEVICE)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=_watch_stdin, args=(stop, parent.on_line if parent else None), name="stdin",
                     daemon=True).start()
    _say(out, str(server.port))
    serve(server, stop)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
