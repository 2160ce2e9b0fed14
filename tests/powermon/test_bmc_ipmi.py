"""The node's BMC over IPMI DCMI (issue 24): Get Power Reading's bytes decoded exactly, and a real RMCP+ BMC (a
pyghmi ``Bmc`` answering DCMI, in its own process: ``ipmi_serve``) on 127.0.0.1 started and stopped in each test,
read by the real client.

pyghmi keeps one I/O thread per process once any session exists (its own, never stopped: the client's, here); the
servers' processes are checked gone (exit status 0, port free) and their pipe threads ended."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyghmi")

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT
from archline.powermon.bmc import dcmi, ipmi, rmcp
from archline.powermon.bmc.emulator import RedfishFaults
from archline.powermon.bmc.ipmi import BmcProcess, DcmiClient, dcmi_bmc, parse_url
from archline.powermon.bmc.meter import emulate_from_spec
from archline.powermon.bmc.reading import BmcUnavailable
from archline.powermon.emulator.power import Script
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ipmi server") or t.name.endswith(" poll")]


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(autouse=True)
def nothing_left_running(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[BmcProcess]]:
    """Every emulated BMC a test starts (directly or through emulate_from_spec) has exited cleanly and freed its port
    by the end of the test, and no pipe or poll thread is left."""
    started: list[BmcProcess] = []
    init = BmcProcess.__init__

    def record(self: BmcProcess, *a: object, **k: object) -> None:
        started.append(self)
        init(self, *a, **k)      # type: ignore[arg-type]
    monkeypatch.setattr(ipmi.BmcProcess, "__init__", record)
    yield started
    deadline = time.monotonic() + 3
    while _threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _threads() == []
    for srv in started:
        assert srv.proc.poll() is not None                  # the process is gone
        if srv.port > 0:                                    # it started: a clean exit, its port closed
            assert srv.proc.returncode == 0, (srv.proc.returncode, srv.stderr_tail())
            assert _port_free(srv.port)


CLOCK_S = 1767225600          # 2026-01-01T00:00:00Z: the emulated BMC clock at device time 0 (--clock-s)


def _serve(*args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "archline.powermon.bmc.ipmi_serve", *args], input="",
                          capture_output=True, text=True, timeout=timeout_s)


def test_decode_exact() -> None:
    # 412 W now, 380 min, 455 max, 398 avg, timestamp 0x12345678, 60 000 ms, measurement active
    raw = bytes.fromhex("dc9c017c01c7018e0178563412" "60ea0000" "40")
    r = dcmi.decode(raw)
    assert r == dcmi.DcmiPowerReading(412, 380, 455, 398, 0x12345678, 60000, True)
    assert dcmi.encode(r) == raw
    assert not dcmi.decode(raw[:-1] + b"\x00").active
    with pytest.raises(ValueError):
        dcmi.decode(b"\xdb" + raw[1:])
    # ipmitool's period names
    assert [dcmi.period_code(s) for s in (5, 15, 30, 60, 180, 420, 900, 1800, 3600)] == \
        [0x05, 0x0F, 0x1E, 0x41, 0x43, 0x47, 0x4F, 0x5E, 0x81]
    assert dcmi.request() == [0xDC, 0x01, 0x00, 0x00] and dcmi.request(60) == [0xDC, 0x02, 0x41, 0x00]
    assert parse_url("ipmi://10.0.0.5") == ("10.0.0.5", 623) and parse_url("ipmi://h:6230") == ("h", 6230)
    with pytest.raises(MeterError):
        parse_url("http://h")


def test_real_rmcp_plus_round_trip() -> None:
    srv = dcmi_bmc(lambda: dcmi.DcmiPowerReading(412, 380, 455, 398, 1000, 1000, True), {"admin": "pw"})
    try:
        assert srv.proc.pid != 0 and srv.port > 0
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "pw")
        r = c.read()
        assert (r.power_w, r.average_w, r.interval_min) == (412.0, 398.0, 1000 / 60000)
        rsp = c.cmd.raw_command(netfn=0x2C, command=0x02, data=[0xDB, 1, 0, 0])   # a wrong group id
        assert rsp["code"] == 0xC1
        assert srv.asked == 1                 # the server asked this process once, for the good request
        c.close()
        with pytest.raises(DeviceError, match="cannot log in"):
            DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "wrong")
    finally:
        assert srv.stop() == 0


def test_asked_reading_busy_and_failing() -> None:
    answers: list[dcmi.DcmiPowerReading | None] = [None, dcmi.DcmiPowerReading(7, 7, 7, 7, 3, 1000, False)]

    def reading() -> dcmi.DcmiPowerReading | None:
        if not answers:
            raise RuntimeError("the emulated power failed")
        return answers.pop(0)
    with dcmi_bmc(reading, {"admin": "pw"}) as srv:
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "pw")
        with pytest.raises(BmcUnavailable, match="0xC0"):       # None: busy
            c.read()
        with pytest.raises(BmcUnavailable, match="not active"):
            c.read()
        with pytest.raises(BmcUnavailable, match="0xC0"):       # reading() raised: busy, and kept
            c.read()
        assert srv.asked == 3 and isinstance(srv.error, RuntimeError)
        c.close()


def test_serve_constant_with_busy_replies() -> None:
    with BmcProcess(["--power-w", "412.4", "--busy-every", "3"], user="u", password="p") as srv:
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "u", "p")
        got: list[float | str] = []
        for _ in range(7):
            try:
                got.append(c.read().power_w)
            except BmcUnavailable as e:
                assert "completion code 0xC0" in str(e)
                got.append("busy")
        assert got == [412.0, 412.0, "busy", 412.0, 412.0, "busy", 412.0]
        c.close()


def test_serve_script_and_stale_reading(tmp_path: Path) -> None:
    # 100 W for the first 0.5 device s, then 300 W; at 100x the step is 5 ms of host time in
    script = tmp_path / "steps.json"
    script.write_text(json.dumps({"steps": [{"t_s": 0, "channels": {"0": [10.0, 10.0]}},
                                            {"t_s": 0.5, "channels": {"0": [10.0, 20.0], "1": [1.0, 100.0]}}]}))
    common = ["--script", str(script), "--speed", "100", "--update-period-s", "1", "--window-s", "0",
              "--clock-s", str(CLOCK_S)]
    with BmcProcess(common) as live, BmcProcess([*common, "--stale", "0:1e9"]) as stale:
        c1 = DcmiClient(f"ipmi://127.0.0.1:{live.port}", "archline", "emulated")
        c2 = DcmiClient(f"ipmi://127.0.0.1:{stale.port}", "archline", "emulated")
        time.sleep(0.1)                                   # >= 10 device seconds
        for c, want_w in ((c1, 300.0), (c2, 100.0)):      # channels summed: 200 + 100 W
            raw = c.cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_POWER_READING,
                                    data=dcmi.request())
            r = dcmi.decode(bytes(raw["data"]))
            assert (r.current_w, r.average_w, r.period_ms, r.active) == (want_w, want_w, 0, True)
            if c is c1:
                assert r.timestamp >= CLOCK_S + 10        # the BMC clock's second of the reading
            else:
                assert r.timestamp == CLOCK_S             # stale since device second 0
            c.close()


def test_exits_on_sigterm_or_stdin_closed_and_frees_the_port() -> None:
    by_signal, by_eof = BmcProcess(["--power-w", "5"]), BmcProcess(["--power-w", "5"])
    by_signal.proc.send_signal(signal.SIGTERM)
    assert by_eof.proc.stdin is not None
    by_eof.proc.stdin.close()            # what a parent that dies does (stop() would SIGTERM after 5 s)
    for srv in (by_signal, by_eof):
        assert srv.proc.wait(10) == 0 and _port_free(srv.port)
        assert srv.stop() == 0


def test_serve_refuses_bad_suites_and_clock(capsys: pytest.CaptureFixture[str]) -> None:
    from archline.powermon.bmc import ipmi_serve

    for bad, said in ((["--cipher-suites", "17,5"], "give 17, 3 or both"), (["--cipher-suites", ""], "give 17"),
                      (["--clock-s", "5"], "seconds since 1970")):
        assert ipmi_serve.main(["--power-w", "1", *bad]) == EXIT_INPUT, bad
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, bad


def test_serve_refuses_bad_options(tmp_path: Path) -> None:
    r = _serve("--power-w", "1", "--stale", "5:3")
    assert r.returncode == 2 and "need 0 <= A < B" in r.stderr
    for bad, said in ((["--power-w", "nan"], "--power-w nan: a DCMI reading holds 0 to 65535 W"),
                      (["--power-w", "70000"], "--power-w 70000: a DCMI reading holds 0 to 65535 W"),
                      (["--power-w", "1", "--speed", "0"], "--speed 0: give a finite number > 0"),
                      (["--power-w", "1", "--update-period-s", "inf"], "--update-period-s inf: give a finite")):
        r = _serve(*bad)
        assert r.returncode == EXIT_INPUT and said in r.stderr and r.stdout == "", bad
    r = _serve("--power-w", "1", "--password-env", "ARCHLINE_T_NOT_SET_ANYWHERE")
    assert r.returncode == EXIT_INPUT and r.stderr.strip().endswith("ARCHLINE_T_NOT_SET_ANYWHERE (--password-env) "
                                                                     "is not set")
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": []}')
    r = _serve("--script", str(bad))
    assert r.returncode == EXIT_INPUT and "power script" in r.stderr and r.stdout == ""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        r = _serve("--power-w", "1", "--port", str(taken.getsockname()[1]))
    assert r.returncode == EXIT_DEVICE and "choose another --port" in r.stderr and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        with pytest.raises(DeviceError, match=r"did not start .*choose another --port"):
            BmcProcess(["--power-w", "1"], port=taken.getsockname()[1])


def test_emulated_node_window_and_faults(nothing_left_running: list[BmcProcess]) -> None:
    script = Script([(0.0, {0: (12.0, 20.0)}), (4.0, {0: (12.0, 40.0)}), (5.5, {0: (12.0, 15.0)})])
    m = emulate_from_spec(MeterSpec(name="node", kind="ipmi"), script, speed=2.5,
                          faults=RedfishFaults(http_503_every=3))
    tl = m.server.timeline                                     # type: ignore[attr-defined]
    (srv,) = nothing_left_running                              # its BMC runs in a process of its own
    assert srv.proc.poll() is None
    rec = Recorder([m]).start()
    # the window is device seconds 1.5 to 7.5 (the steps at 4 and 5.5 inside, over a period from either edge),
    # whatever the host's delays
    t0_s, t1_s = float(tl.host_time_s(1.5)), float(tl.host_time_s(7.5))
    try:
        rec.begin("w")
        time.sleep(max(0.0, t1_s - time.monotonic()))
        r = rec.end("w", t0_s=t0_s, t1_s=t1_s).meters[m.name]
    finally:
        rec.stop()
    assert (r.t_start_s, r.t_end_s) == (t0_s, t1_s)
    truth = script.energy_j(1.5, 7.5, [0])
    assert truth == 2.5 * 240 + 1.5 * 480 + 2 * 180
    assert r.emulated
    assert abs(r.energy_j - truth) <= r.energy_err_j < 0.25 * truth, (r.energy_j, truth, r.energy_err_j)
    served = m.server.served_503                               # type: ignore[attr-defined]
    assert served > 0 and m.failed_polls == served              # every busy answer counted
    assert any("completion code 0xC0" in w for w in r.warnings)
    assert srv.asked == m.polls and srv.error is None          # polls: every poll, failed ones included


def test_open_from_spec_needs_the_password_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.powermon.bmc.meter import open_from_spec

    monkeypatch.delenv("ARCHLINE_T_IPMI_PW", raising=False)
    spec = MeterSpec(name="bmc", kind="ipmi", url="ipmi://127.0.0.1:1", username="admin",
                     password_env="ARCHLINE_T_IPMI_PW")
    with pytest.raises(MeterError, match="ARCHLINE_T_IPMI_PW"):
        open_from_spec(spec)


# --- issue 35 item 7: cipher suites 17 and 3, Get DCMI Capabilities, real timestamps ----------------------------------

IPMITOOL = shutil.which("ipmitool")


def test_cipher_suite_bytes_exact() -> None:
    # IPMI 2.0 table 22-19/22-20: C0h, the suite, then 00b|auth, 01b|integrity, 10b|confidentiality
    assert rmcp.records([17, 3]) == bytes.fromhex("c0110344" "81" "c0030141" "81")
    assert rmcp.parse_records(rmcp.records([17, 3])) == {17: (3, 4, 1), 3: (1, 1, 1)}
    # an OEM record (C1h, suite 0x80, IANA 0x0002A2) between two standard ones; a suite listing no integrity
    assert rmcp.parse_records(bytes.fromhex("c00000" "c180a20200" "014181" "c00101")) == \
        {0: (0, -1, -1), 0x80: (1, 1, 1), 1: (1, -1, -1)}
    with pytest.raises(ValueError):
        rmcp.parse_records(b"\x41\x81")
    # the request, checksums by hand: -(0x20 + 0x18) = 0xC8; -(0x81 + 0x04 + 0x54 + 0x0E + 0x00 + 0x80) = 0x99
    req = rmcp.request_packet(0, 1)
    assert req == bytes.fromhex("0600ff07" "0600" + "00" * 8 + "0a00" + "2018c8" "8104540e008099")
    # the BMC's answer to it: records 0-15 of the list, then what a second index asks (none past 10 bytes)
    code, data = rmcp.parse_reply(rmcp.reply_packet(req, (17, 3)))      # type: ignore[arg-type]
    assert (code, data) == (0, b"\x01" + rmcp.records([17, 3]))
    assert rmcp.parse_reply(rmcp.reply_packet(rmcp.request_packet(1, 2), (17, 3))) == (0, b"\x01")  # type: ignore
    assert rmcp.reply_packet(b"\x06\x00\xff\x07" + bytes(20), (3,)) is None
    # which suite: the best offered, a forced one, or 17 then 3 where the BMC did not say
    both, old = {17: (3, 4, 1), 3: (1, 1, 1)}, {3: (1, 1, 1), 1: (1, 0, 0)}
    assert (rmcp.choose(both, None), rmcp.choose(old, None), rmcp.choose(None, None)) == ([17], [3], [17, 3])
    assert rmcp.choose(both, 3) == [3] and rmcp.choose(None, 17) == [17]
    with pytest.raises(ValueError, match=r"offers suites \[1, 3\]"):
        rmcp.choose(old, 17)
    with pytest.raises(ValueError, match=r"offers cipher suites \[1\]"):
        rmcp.choose({1: (1, 0, 0)}, None)


def test_dcmi_capabilities_and_timestamp_bytes_exact() -> None:
    # DCMI 1.5 table 6-3 as ipmitool and FreeIPMI read it: 0xDC, version 1.5, parameter revision 2, the data
    assert dcmi.capabilities_data(1) == bytes.fromhex("dc010502" "000100")
    assert dcmi.capabilities_data(2) == bytes.fromhex("dc010502" "0000000000")
    assert dcmi.capabilities_data(3) == bytes.fromhex("dc010502" "4001")
    assert dcmi.capabilities_data(4) == bytes.fromhex("dc010502" "01ffff")
    assert dcmi.capabilities_data(5, (5, 60, 3600)) == bytes.fromhex("dc010502" "03" "054181")
    assert dcmi.capabilities_data(6) is None and dcmi.capabilities_data(0) is None
    caps = dcmi.decode_capabilities(dcmi.capabilities_data(1), dcmi.capabilities_data(5, (5, 60, 3600)))  # type: ignore
    assert caps == dcmi.DcmiCapabilities((1, 5), True, (5, 60, 3600))
    assert not dcmi.decode_capabilities(bytes.fromhex("dc010502000000"), None).power_management
    with pytest.raises(ValueError):
        dcmi.decode_capabilities(bytes.fromhex("dc010502" "03" "05"), None)
    # IPMI timestamps: dates after 0x20000000, seconds since BMC start up to it, 0xFFFFFFFF unspecified
    assert dcmi.timestamp_utc(CLOCK_S) == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert dcmi.timestamp_utc(0x20000000) is None and dcmi.timestamp_utc(0xFFFFFFFF) is None
    assert dcmi.emulated_reading(411.6, 7.9, CLOCK_S + 0.5, 1.0) == \
        dcmi.DcmiPowerReading(412, 412, 412, 412, CLOCK_S + 8, 1000, True)


def test_client_negotiates_17_or_3_and_decodes_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.powermon.bmc.meter import open_from_spec

    monkeypatch.setattr(rmcp, "QUERY_TIMEOUT_S", 0.2)         # the --unlisted BMC never answers the suite list

    stale = ["--power-w", "412.4", "--clock-s", str(CLOCK_S), "--stale", "0:1e9"]    # one reading, stamped CLOCK_S
    with BmcProcess(stale) as both, BmcProcess([*stale, "--cipher-suites", "3"], user="u3") as old, \
            BmcProcess([*stale, "--cipher-suites", "3", "--unlisted"], user="u9") as older:
        got = {}
        for url, forced in ((f"ipmi://archline:emulated@127.0.0.1:{both.port}", None),
                            (f"ipmi://archline:emulated@127.0.0.1:{both.port}", 3),
                            (f"ipmi://u3:emulated@127.0.0.1:{old.port}", None),
                            (f"ipmi://u9:emulated@127.0.0.1:{older.port}", None)):   # refused 17 (0x11), then 3
            c = DcmiClient(url, None, None, forced)
            try:
                r = c.read()
                assert (r.power_w, r.average_w, r.reading_time_s) == (412.0, 412.0, None)
                assert c.last == dcmi.DcmiPowerReading(412, 412, 412, 412, CLOCK_S, 1000, True)
                assert c.capabilities == dcmi.DcmiCapabilities((1, 5), True, ())
                d = c.describe()
                got[(url.split("@")[1], forced)] = (d["cipher_suite"], d["cipher_suites_offered"])
                assert d["dcmi_version"] == "1.5" and d["cipher"] == rmcp.SUITE_NAMES[c.cipher_suite]
            finally:
                c.close()
        assert list(got.values()) == [(17, [3, 17]), (3, [3, 17]), (3, [3]), (3, None)]
        with pytest.raises(DeviceError, match=r"cipher suite 17 was asked for, but the BMC offers suites \[3\]"):
            DcmiClient(f"ipmi://u3:emulated@127.0.0.1:{old.port}", None, None, 17)
        with pytest.raises(DeviceError, match=r"refused cipher suite 17 \(No Cipher suite match"):
            DcmiClient(f"ipmi://u9:emulated@127.0.0.1:{older.port}", None, None, 17)
        with pytest.raises(MeterError, match=r"keeps no 60 s rolling average \(it offers none s\)"):
            DcmiClient(f"ipmi://archline:emulated@127.0.0.1:{both.port}", None, None, 17, period_s=60)
        with pytest.raises(DeviceError, match=r"cannot log in \(Incorrect password provided\)"):
            DcmiClient(f"ipmi://archline:wrong@127.0.0.1:{both.port}", None, None, 17)
        # a profile's cipher_suite reaches the client; the suite used is in the meter's info (a trace's sidecar)
        monkeypatch.setenv("ARCHLINE_T_IPMI_PW", "emulated")
        m = open_from_spec(MeterSpec(name="bmc", kind="ipmi", url=f"ipmi://127.0.0.1:{both.port}",
                                     username="archline", password_env="ARCHLINE_T_IPMI_PW", cipher_suite=3))
        try:
            assert m.emulated and m.info()["source"]["cipher_suite"] == 3
        finally:
            m.client.close()
    with pytest.raises(ValueError, match="cipher_suite: only an ipmi meter"):
        MeterSpec(name="r", kind="redfish", url="http://h", cipher_suite=17)


def test_pyghmi_client_gets_17_from_the_emulator() -> None:
    """pyghmi's own client, unchanged (not pinned): it proposes 17 first; pyghmi's server answered 3 and the login
    crashed (``pack expected 32 items``); the emulator now takes the proposal, and the session hashes with SHA-256."""
    from pyghmi.ipmi import command

    with BmcProcess(["--power-w", "300", "--clock-s", str(CLOCK_S), "--stale", "0:1e9"]) as srv:
        cmd = command.Command("127.0.0.1", "archline", "emulated", port=srv.port)
        try:
            sess = cmd.ipmi_session
            assert (sess.currhashlib, sess.currhashlen, sess.integrityalgo) == (hashlib.sha256, 16, 256)
            rsp = cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_POWER_READING, data=dcmi.request())
            assert dcmi.decode(bytes(rsp["data"])) == dcmi.DcmiPowerReading(300, 300, 300, 300, CLOCK_S, 1000, True)
            rsp = cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_DCMI_CAPABILITIES, data=[0xDC, 9])
            assert rsp["code"] == 0xCC                              # no parameter 9 in table 6-3
            rsp = cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_POWER_READING, data=dcmi.request(60))
            assert rsp["code"] == 0xCC                              # no rolling averages kept (parameter 5: none)
        finally:
            sess.logout()
            ipmi._forget(type(sess), "127.0.0.1", srv.port)


def _ipmitool(port: int, *args: str, suite: str | None = None, user: str = "archline") -> subprocess.CompletedProcess:
    assert IPMITOOL is not None
    cmd = [IPMITOOL, "-I", "lanplus", *(["-C", suite] if suite else ["-v"]), "-N", "1", "-R", "2",
           "-H", "127.0.0.1", "-p", str(port), "-U", user, "-P", "emulated", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env={"TZ": "UTC", "PATH": "/usr/bin:/bin"})


@pytest.mark.skipif(IPMITOOL is None, reason="ipmitool is not installed")
def test_ipmitool_reads_the_emulator_with_17_and_3() -> None:
    with BmcProcess(["--power-w", "412.4", "--clock-s", str(CLOCK_S), "--stale", "0:1e9"]) as srv, \
            BmcProcess(["--power-w", "5", "--cipher-suites", "3"]) as old:
        for suite in ("17", "3", None):                 # None: ipmitool picks from Get Channel Cipher Suites
            r = _ipmitool(srv.port, "dcmi", "power", "reading", suite=suite)
            assert r.returncode == 0, r.stderr
            lines = [" ".join(x.split()) for x in r.stdout.splitlines()]
            assert "Instantaneous power reading: 412 Watts" in lines
            assert "Average power reading over sample period: 412 Watts" in lines
            # 1767225600 s since 1970, printed by ipmitool's own date code; the 1000 ms period as 1 s
            assert "IPMI timestamp: 01/01/26 00:00:00 UTC Sampling period: 00000001 Seconds." in lines
            assert "Power reading state is: activated" in lines
            if suite is None:
                assert "Using best available cipher suite 17" in r.stderr
        r = _ipmitool(srv.port, "dcmi", "discover", suite="17")
        assert r.returncode == 0, r.stderr
        out = " ".join(r.stdout.split())
        for said in ("Optional platform capabilities Power management available", "0 SEL entries",
                     "Slave address of device: 20h (BMC)", "Device revision is 1",
                     "Primary LAN channel number: 1 is available", "Secondary LAN channel is not available",
                     "No serial channel is available"):
            assert said in out, said
        # a BMC offering 3 only: ipmitool picks it, and -C 17 is refused at the open-session step
        r = _ipmitool(old.port, "dcmi", "power", "reading", suite=None)
        assert r.returncode == 0 and "Using best available cipher suite 3" in r.stderr
        assert _ipmitool(old.port, "dcmi", "power", "reading", suite="17").returncode != 0


@pytest.mark.skipif(IPMITOOL is None, reason="ipmitool is not installed")
def test_ipmitool_gets_a_bmcs_answers() -> None:
    # issue 35 FI #10: inside a session, the suites listed; a CALLBACK session refused the reading (0xD4), as a
    # BMC does (DCMI needs User); a reserved mode 0xCC, no data 0xC7; an unknown user never gets a session
    with BmcProcess(["--power-w", "412"]) as srv:
        r = _ipmitool(srv.port, "channel", "getciphers", "ipmi", "1", suite="17")
        assert r.returncode == 0 and [x.split()[:1] for x in r.stdout.splitlines()[1:]] == [["17"], ["3"]]
        r = _ipmitool(srv.port, "-L", "CALLBACK", "dcmi", "power", "reading", suite="17")
        assert r.returncode != 0 and "Insufficient privilege level (d4)" in r.stderr
        assert "rsp=0xcc" in _ipmitool(srv.port, "raw", "0x2c", "0x02", "0xdc", "0x03", "0", "0", suite="17").stderr
        assert "rsp=0xc7" in _ipmitool(srv.port, "raw", "0x2c", "0x02", suite="17").stderr
        assert _ipmitool(srv.port, "dcmi", "power", "reading", suite="17", user="root").returncode != 0


# --- issue 35 (fixer I): what a hostile user found in the IPMI meter and the emulated BMC ----------------------------

def _terms(**kw: object) -> object:
    from archline.powermon.bmc.bound import BoundTerms

    return BoundTerms(1.0, poll_s=0.25, quantum_w=1.0, timed=False, **kw)      # type: ignore[arg-type]


def _steps(t_app: list[float], w: list[float]) -> tuple[object, object]:
    """Breakpoints as BmcMeter._arrays makes them: reading k covers (b[k-1], b[k]], the first one period long."""
    import numpy as np

    t = np.concatenate([[t_app[0] - 1.0], t_app])
    return t, np.concatenate([[0.0], np.cumsum(np.asarray(w) * np.diff(t))])


def test_lost_readings_are_the_windows_own() -> None:
    from archline.powermon.bmc.bound import window_energy

    # #1: a BMC that stops answering 3 s into an 8 s window (no ReadingTime, IPMI): the 5 uncovered periods are lost
    t, e = _steps([1.0, 2.0, 3.0], [200.0] * 3)
    w = window_energy(t, e, 0.0, 8.0, _terms(), failed=20, last_failure="no answer")     # type: ignore[arg-type]
    assert (w.lost, w.expected, w.lost_s, w.gaps) == (5, 8, 5.0, 1)
    assert w.energy_j == 1600.0 and w.err_j >= 5 * 200.0
    assert any("20 poll(s) inside the window failed (no answer" in x for x in w.warnings)
    # #3: every poll answered, the end late (a loaded host): not a loss, but said and bounded
    late = window_energy(t, e, 0.0, 3.6, _terms())                                       # type: ignore[arg-type]
    assert (late.lost, late.gaps) == (0, 0) and any("no reading covers 0.6 s" in x for x in late.warnings)
    assert late.err_j >= 0.6 * 200.0
    # #2: a stretch of 18.6 s (a BMC that restarted) from 2 s into the window: at most the window is lost
    t, e = _steps([1.0, 2.0, 20.6], [200.0, 200.0, 300.0])
    w = window_energy(t, e, 0.0, 8.0, _terms())                                           # type: ignore[arg-type]
    assert (w.lost, w.expected, w.lost_s) == (6, 8, 6.0)
    # #3: a stretch over 1.5 periods that ends 1.75 s after the window: not the window's loss
    t, e = _steps([1.0, 2.0, 3.0, 4.0, 4.99, 6.74], [412.0] * 6)
    w = window_energy(t, e, 1.0, 5.0, _terms())                                           # type: ignore[arg-type]
    assert (w.lost, w.lost_s, w.gaps, w.expected) == (0, 0.0, 0, 4)
    # a stretch inside the window still loses round(stretch / P) - 1 readings
    t, e = _steps([1.0, 2.0, 5.0, 6.0], [100.0] * 4)
    w = window_energy(t, e, 1.0, 6.0, _terms())                                           # type: ignore[arg-type]
    assert (w.lost, w.lost_s, w.gaps) == (2, 2.0, 1)


def test_integrate_states_the_recordings_bound() -> None:
    from archline.powermon.bmc.bound import BoundTerms, window_energy

    # #2: readings that arrived after the window was integrated (while the meter stopped) are left out of it,
    # so the trace integrates to the recording's numbers
    t_live, e_live = _steps([1.0, 2.0, 3.0, 4.0, 5.0], [200.0] * 5)
    t_all, e_all = _steps([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [200.0] * 5 + [300.0, 900.0])
    live = window_energy(t_live, e_live, 0.5, 4.5, _terms())                             # type: ignore[arg-type]
    info = {"update_period_s": 1.0, "speed": 1.0, "poll_s": 0.25, "window_s": None, "quantum_w": 1.0,
            "timed": False, "window_readings": 5}
    terms = BoundTerms.from_info(info)
    assert terms is not None and terms.readings == 5
    later = window_energy(t_all, e_all, 0.5, 4.5, terms)                                 # type: ignore[arg-type]
    assert (later.energy_j, later.err_j, later.lost) == (live.energy_j, live.err_j, live.lost)
    assert window_energy(t_all, e_all, 0.5, 4.5, _terms()).err_j > live.err_j         # type: ignore[arg-type]
    # a window past what the recording saw uses every reading
    assert window_energy(t_all, e_all, 5.0, 7.0, terms).energy_j == 300.0 + 900.0    # type: ignore[arg-type]


def test_a_frozen_bmc_fails_polls_at_once_not_after_pyghmis_retries() -> None:
    # #1: pyghmi retries an unanswered request and logs in again for ~40 s in the caller's thread
    with BmcProcess(["--power-w", "200"]) as srv:
        c = DcmiClient(f"ipmi://archline:emulated@127.0.0.1:{srv.port}", None, None)
        assert c.read().power_w == 200.0
        srv.proc.send_signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(BmcUnavailable, match=r"no answer within 1\.5 s"):
                c.read()
            t1 = time.monotonic()
            with pytest.raises(BmcUnavailable, match=r"no answer for .* s \(the BMC stopped answering"):
                c.read()                          # the first request still hangs in pyghmi: this one fails at once
            t2 = time.monotonic()
            c.close()                             # no logout behind a hung request
            t3 = time.monotonic()
        finally:
            srv.proc.send_signal(signal.SIGCONT)
        assert ipmi.READ_TIMEOUT_S <= t1 - t0 < ipmi.READ_TIMEOUT_S + 2 and t2 - t1 < 0.5 and t3 - t2 < 1.1


def test_urls_ports_and_credentials_exact() -> None:
    # #7: a port out of 1-65535 is refused naming it (0 went to 623, 70000 to 4464, 131695 to 623)
    for port in ("0", "70000", "65536", "131695", "-1", "x", ""):
        with pytest.raises(MeterError, match=rf"port '{port}' is not a UDP port \(1-65535"):
            parse_url(f"ipmi://a:b@127.0.0.1:{port}")
    assert parse_url("ipmi://u:p@[::1]:6230") == ("::1", 6230) and parse_url("ipmi://fe80::1") == ("fe80::1", 623)
    assert parse_url("127.0.0.1:65535") == ("127.0.0.1", 65535)
    # #8: the userinfo runs to the last @: a password with @ : / # is read whole, and never printed
    url = "ipmi://archline:p@ss:w/rd#1@127.0.0.1:623"
    assert ipmi.url_credentials(url) == ("archline", "p@ss:w/rd#1") and parse_url(url) == ("127.0.0.1", 623)
    assert ipmi.mask(url) == "ipmi://***@127.0.0.1:623" and ipmi.mask("ipmi://h:1") == "ipmi://h:1"
    with pytest.raises(MeterError) as bad:
        parse_url("ipmi://archline:p@ss:w/rd#1@127.0.0.1:x")
    assert "ss" not in str(bad.value).replace("address", "") and "rd#1" not in str(bad.value)
    # #11: a path or query is refused, not ignored
    for tail in ("/redfish", "?cipher=3", "#x"):
        with pytest.raises(MeterError, match="an IPMI address has no path, query or fragment"):
            parse_url(f"ipmi://127.0.0.1:623{tail}")
    # #9: a 26-byte user name is refused before anything is sent (IPMI allows 16), and a 21-byte password
    with pytest.raises(MeterError, match="the user name is 26 bytes; IPMI allows 16"):
        DcmiClient("ipmi://abcdefghijklmnopqrstuvwxyz:x@127.0.0.1:1", None, None)
    with pytest.raises(MeterError, match=r"the password \(the password in the URL\) is 21 bytes; IPMI 2.0 allows 20"):
        DcmiClient(f"ipmi://u:{'p' * 21}@127.0.0.1:1", None, None)


def test_profile_fields_of_a_bmc_meter() -> None:
    from archline.powermon.spec import parse_meters

    base = {"name": "node", "kind": "ipmi", "url": "ipmi://bmc", "username": "u"}
    # #4: the period is stated as update_period_s, on a BMC meter only; rate_hz on one is refused, not ignored
    assert parse_meters([{**base, "update_period_s": 5}], "p.toml")[0].update_period_s == 5.0
    assert parse_meters([{**base, "kind": "redfish"}], "p.toml")[0].update_period_s is None
    for extra, said in (({"rate_hz": 0.2}, "rate_hz: a ipmi meter reads at the BMC's own update period; give "
                                           "update_period_s"),
                        ({"kind": "rapl", "update_period_s": 5}, "update_period_s: only a BMC"),
                        ({"update_period_s": 0}, "update_period_s"),
                        # #11: a second channel was dropped; TOML's true was "got True"
                        ({"channels": [{"id": 0, "rail": "a", "device": "node"}, {"id": 1, "rail": "b"}]},
                         "channels: a ipmi meter has one whole-node reading: give one channel \\(got 2\\)"),
                        ({"cipher_suite": True}, "cipher_suite: give 17 or 3, not TOML's `true`")):
        with pytest.raises(MeterError, match=said):
            parse_meters([{**base, **extra}], "p.toml")


def test_login_errors_name_the_cause(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.powermon.bmc.meter import open_from_spec

    answers = [dcmi.DcmiPowerReading(0, 0, 0, 0, CLOCK_S, 5000, True)] * 4
    with dcmi_bmc(lambda: answers.pop(0), {"archline": "emulated"}) as srv:
        # #9: an unknown user gets RAKP 2 status 0x0D from the BMC, and the client says so
        with pytest.raises(DeviceError, match=r"user 'root' unknown to the BMC \(Unauthorized name"):
            DcmiClient(f"ipmi://root:emulated@127.0.0.1:{srv.port}", None, None)
        with pytest.raises(DeviceError, match=r"cannot log in \(.*\); check the username and the password in the URL"):
            DcmiClient(f"ipmi://archline:wrong@127.0.0.1:{srv.port}", None, None)
        c = DcmiClient(f"ipmi://archline:emulated@127.0.0.1:{srv.port}", None, None)
        try:
            # #4: the statistics period of a reading (5000 ms) is the meter's update period by default
            assert c.reported_period() == 5.0 and c.describe()["reported_period_s"] == 5.0
            # #12: a whole node at 0 W is warned about, once
            with caplog.at_level("WARNING", logger="archline.powermon"):
                assert c.read().power_w == 0.0
            assert c.zero_readings == 2 and sum("reads 0 W for the whole node" in r.message
                                                for r in caplog.records) == 1
            # #10: Get Channel Cipher Suites inside a session, Get Power Reading without data (0xC7) and in a
            # reserved mode (0xCC), as a BMC answers them
            rsp = c.cmd.raw_command(netfn=0x06, command=0x54, data=[0x0E, 0x00, 0x80])
            assert rsp.get("code", 0) == 0 and bytes(rsp["data"]) == b"\x01" + rmcp.records([17, 3])
            assert c.cmd.raw_command(netfn=0x2C, command=0x02, data=[])["code"] == 0xC7
            assert c.cmd.raw_command(netfn=0x2C, command=0x02, data=[0xDC, 0x03, 0, 0])["code"] == 0xCC
            assert srv.asked == 2
        finally:
            c.close()
        # #4: a profile's update_period_s is the meter's period; without it, the reading's statistics period
        monkeypatch.setenv("ARCHLINE_T_IPMI_PW", "emulated")
        spec = MeterSpec(name="n", kind="ipmi", url=f"ipmi://127.0.0.1:{srv.port}", username="archline",
                         password_env="ARCHLINE_T_IPMI_PW")
        for given, want in ((2.0, 2.0), (None, 5.0)):
            m = open_from_spec(spec.model_copy(update={"update_period_s": given}))
            m.client.close()
            assert m.update_period_s == want
        assert srv.asked == 3           # the stated period asks nothing
        with pytest.raises(DeviceError, match=r"check the username and the password in ARCHLINE_T_IPMI_PW "
                                              r"\(password_env\)"):
            monkeypatch.setenv("ARCHLINE_T_IPMI_PW", "wrong")
            open_from_spec(spec)
    # #9: nothing listening is not a refused password
    with pytest.raises(DeviceError, match=r"127\.0\.0\.1:1: nothing listens there on UDP"):
        DcmiClient("ipmi://archline:emulated@127.0.0.1:1", None, None)


def test_serve_options_named_and_representable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from archline.powermon.bmc import ipmi_serve

    big, inf = tmp_path / "big.json", tmp_path / "inf.json"
    big.write_text(json.dumps({"steps": [{"t_s": 0, "channels": {"0": [1000.0, 70.0]}}]}))
    inf.write_text(json.dumps({"steps": [{"t_s": 0, "channels": {"0": [1e308, 1e308]}}]}))
    for args, said in ((["--script", str(big)], "it draws up to 70000 W; a DCMI reading holds 0 to 65535 W"),
                       (["--script", str(inf)], "more than a float holds"),
                       (["--power-w", "70000"], "--power-w 70000: a DCMI reading holds 0 to 65535 W"),
                       (["--power-w", "1", "--port", "70000"], "--port 70000: not a UDP port"),
                       (["--power-w", "1", "--clock-s", "4294967290"], "from 536870913 (1987-01-05, an IPMI date) "
                                                                       "to 4278190078 (2105-07-28)")):
        assert ipmi_serve.main(args) == EXIT_INPUT, args
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, (args, err)
    with pytest.raises(ValueError, match="outside what a DCMI reading holds"):
        dcmi.emulated_reading(65536.0, 0.0, CLOCK_S, 1.0)
    assert dcmi.emulated_reading(65535.4, 0.0, CLOCK_S, 1.0).current_w == 65535


def test_emulator_readings_are_means_of_its_power(tmp_path: Path) -> None:
    # #5: 0/1000 W alternating every 2 device s, 3 s means every 2 s: every reading lies in 333.3-666.7 W (whole
    # watts: 333 or 667); the 256-point rule served 668 and 332
    alt = tmp_path / "alt.json"
    alt.write_text(json.dumps({"steps": [{"t_s": 2.0 * k, "channels": {"0": [10.0, 100.0 * (k % 2)]}}
                                         for k in range(200)]}))
    with BmcProcess(["--script", str(alt), "--speed", "40", "--window-s", "3", "--update-period-s", "2"]) as srv:
        c = DcmiClient(f"ipmi://archline:emulated@127.0.0.1:{srv.port}", None, None)
        try:
            got = set()
            for _ in range(40):
                got.add(dcmi.decode(bytes(c.cmd.raw_command(netfn=0x2C, command=0x02, data=dcmi.request())["data"]))
                        .current_w)
                time.sleep(0.01)
        finally:
            c.close()
    assert got - {0} == {333, 667}, got          # 0: device second 0's reading (the 0 W step held before it)


def test_poll_counts_agree() -> None:
    from archline.powermon.bmc.bmc_meter import BmcMeter
    from archline.powermon.bmc.reading import PowerReading

    class EveryOtherBusy:
        n = 0

        def read(self) -> PowerReading:
            self.n += 1
            if self.n % 2 == 0:
                raise BmcUnavailable("completion code 0xC0 (busy)")
            return PowerReading(200.0, None, 200.0, None)

    # #14: polls counts every poll, failed_polls those that failed, and their times are in order
    m = BmcMeter(EveryOtherBusy())
    for _ in range(13):
        m.poll()
    info = m.info()
    assert (info["polls"], info["failed_polls"], m.client.n) == (13, 6, 13)
    assert info["failed_poll_s"] == sorted(info["failed_poll_s"]) and len(info["failed_poll_s"]) == 6


def test_help_and_list_name_the_bmc_forms() -> None:
    from click.testing import CliRunner

    from archline.cli.main import cli
    from archline.powermon.bmc.meter import list_meters

    # #13: meter record --help names ipmi: and redfish:, meter list the form that logs in
    out = CliRunner().invoke(cli, ["meter", "record", "--help"], terminal_width=200).output
    assert "ipmi:ipmi://USER:PASSWORD@BMC[:PORT]" in " ".join(out.split()) and "redfish:https://BMC" in out
    (row,) = [r for r in list_meters() if r["kind"] == "ipmi"]
    assert "--meter ipmi:ipmi://USER:PASSWORD@BMC[:PORT]" in row["detail"]


def _stop_then_restart(srv: BmcProcess, restart: bool, again: list[BmcProcess]) -> None:
    time.sleep(1.5)
    srv.proc.terminate()            # as the breaker's killtest.sh: SIGTERM (the fixture wants exit 0)
    srv.proc.wait()
    if restart:
        time.sleep(1.0)
        again.append(BmcProcess(["--power-w", "300"], port=srv.port))


@pytest.mark.slow
def test_a_bmc_that_dies_or_restarts_mid_recording(tmp_path: Path, run_cli: Any) -> None:
    """#1, #2: ``meter record`` of a BMC stopped 1.5 s into a 5 s recording (then, in the second run, restarted on the
    same port at 300 W): the periods no reading covers are lost (exit 6, more than --max-lost), never more than the
    window, the failed polls counted in order; the command waits about the stated settle time, not pyghmi's ~40 s
    of retries; ``meter integrate`` of the trace states the same energy, bound and losses."""
    for restart in (False, True):
        srv = BmcProcess(["--power-w", "200"])
        port = srv.port
        out = tmp_path / f"r{int(restart)}.csv"

        again: list[BmcProcess] = []
        killer = threading.Thread(target=_stop_then_restart, args=(srv, restart, again))
        t0 = time.monotonic()
        killer.start()
        res = run_cli("meter", "record", "--meter", f"ipmi:ipmi://archline:emulated@127.0.0.1:{port}",
                      "--duration", "5", "--out", str(out))
        took_s = time.monotonic() - t0
        killer.join()
        for b in again:
            b.stop()
        srv.stop()
        assert res.exit_code == 6, res.stderr
        r = json.loads(res.stdout[: res.stdout.rindex("}") + 1])["ipmi"]
        assert 3 <= r["lost_samples"] <= r["expected_samples"] == 5 and r["lost_s"] <= r["duration_s"]
        assert any("poll(s) inside the window failed" in w for w in r["warnings"])
        info = json.loads(Path(f"{out}.json").read_text())["info"]
        assert info["failed_polls"] > 0 and info["failed_poll_s"] == sorted(info["failed_poll_s"])
        assert took_s < 5 + 12, took_s          # start and login, the 3 s settle wait, the stop: no 40 s hang
        offline = run_cli("meter", "integrate", str(out), "--format", "json")
        assert offline.exit_code == 6, offline.stderr
        o = json.loads(offline.stdout[: offline.stdout.rindex("}") + 1])
        assert (o["total_energy_j"], o["energy_err_j"], o["lost_samples"]) == \
            (pytest.approx(r["energy_j"]), pytest.approx(r["energy_err_j"]), r["lost_samples"])


# --- folded from test_bmc_breaker24.py, IPMI (a review round's regression tests) ---------------------------------
# Breaker 24 (BMC meters): impossible readings refused, lost stretches in the bound, bad URLs and credentials,
# IPMI login. Every server runs on 127.0.0.1 and is stopped here.


def test_ipmi_without_a_username_is_refused_at_once() -> None:
    from archline.powermon.bmc.ipmi import DcmiClient
    t0 = time.monotonic()
    with pytest.raises(MeterError, match=r"no username: give the profile's .*username and password_env") as ei:
        DcmiClient("ipmi://127.0.0.1:9", None, None)
    assert type(ei.value) is MeterError and time.monotonic() - t0 < 5      # never pyghmi's minute of retries


def test_ipmi_login_sha1_fallback_wrong_password_and_nothing_listening() -> None:
    """Against the emulator (pyghmi's server answers SHA-1) the default client logs in all the same; a wrong
    password and an address where nothing listens are one DeviceError (exit 4) each, in bounded time."""
    from archline.powermon.bmc.ipmi import LOGIN_TIMEOUT_S, BmcProcess, DcmiClient
    with BmcProcess(["--power-w", "412"], user="u", password="p") as srv:
        url = f"ipmi://127.0.0.1:{srv.port}"
        with pytest.raises(DeviceError, match="cannot log in") as ei:
            DcmiClient(url, "u", "wrong")
        assert ei.value.exit_code == 4 and "wrong" not in str(ei.value)
        c = DcmiClient(url, "u", "p")                                  # sha1 not asked for: found by itself
        try:
            assert c.read().power_w == 412.0
        finally:
            c.close()
    t0 = time.monotonic()
    nobody = r"127\.0\.0\.1:9: (cannot log in|no login within|nothing listens there on UDP)"
    with pytest.raises(DeviceError, match=nobody):
        DcmiClient("ipmi://u:p@127.0.0.1:9", None, None)
    assert time.monotonic() - t0 < 2 * LOGIN_TIMEOUT_S + 5      # two login tries at most (SHA-256, SHA-1)
