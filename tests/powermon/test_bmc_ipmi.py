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

import pytest

pytest.importorskip("pyghmi")

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT
from archline.powermon.bmc import dcmi, ipmi, rmcp
from archline.powermon.bmc.emulator import RedfishFaults
from archline.powermon.bmc.ipmi import BmcProcess, DcmiClient, dcmi_bmc, parse_url
from archline.powermon.bmc.meter import emulate_from_spec
from archline.powermon.bmc.redfish import BmcUnavailable
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
    for bad in (["--power-w", "nan"], ["--power-w", "70000"], ["--power-w", "1", "--speed", "0"],
                ["--power-w", "1", "--update-period-s", "inf"]):
        r = _serve(*bad)
        assert r.returncode == EXIT_INPUT and "DCMI's 16 bits" in r.stderr and r.stdout == "", bad
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
    assert srv.asked == m.polls + m.failed_polls and srv.error is None


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
