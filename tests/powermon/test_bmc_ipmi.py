"""The node's BMC over IPMI DCMI (issue 24): Get Power Reading's bytes decoded exactly, and a real RMCP+ BMC (a
pyghmi ``Bmc`` answering DCMI, in its own process: ``ipmi_serve``) on 127.0.0.1 started and stopped in each test,
read by the real client.

pyghmi keeps one I/O thread per process once any session exists (its own, never stopped: the client's, here); the
servers' processes are checked gone (exit status 0, port free) and their pipe threads ended."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyghmi")

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT
from archline.powermon.bmc import dcmi, ipmi
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
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "pw", sha1=True)
        r = c.read()
        assert (r.power_w, r.average_w, r.interval_min) == (412.0, 398.0, 1000 / 60000)
        rsp = c.cmd.raw_command(netfn=0x2C, command=0x02, data=[0xDB, 1, 0, 0])   # a wrong group id
        assert rsp["code"] == 0xC1
        assert srv.asked == 1                 # the server asked this process once, for the good request
        c.close()
        with pytest.raises(DeviceError, match="cannot log in"):
            DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "wrong", sha1=True)
    finally:
        assert srv.stop() == 0


def test_asked_reading_busy_and_failing() -> None:
    answers: list[dcmi.DcmiPowerReading | None] = [None, dcmi.DcmiPowerReading(7, 7, 7, 7, 3, 1000, False)]

    def reading() -> dcmi.DcmiPowerReading | None:
        if not answers:
            raise RuntimeError("the emulated power failed")
        return answers.pop(0)
    with dcmi_bmc(reading, {"admin": "pw"}) as srv:
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "admin", "pw", sha1=True)
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
        c = DcmiClient(f"ipmi://127.0.0.1:{srv.port}", "u", "p", sha1=True)
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
    common = ["--script", str(script), "--speed", "100", "--update-period-s", "1", "--window-s", "0"]
    with BmcProcess(common) as live, BmcProcess([*common, "--stale", "0:1e9"]) as stale:
        c1 = DcmiClient(f"ipmi://127.0.0.1:{live.port}", "archline", "emulated", sha1=True)
        c2 = DcmiClient(f"ipmi://127.0.0.1:{stale.port}", "archline", "emulated", sha1=True)
        time.sleep(0.1)                                   # >= 10 device seconds
        for c, want_w in ((c1, 300.0), (c2, 100.0)):      # channels summed: 200 + 100 W
            raw = c.cmd.raw_command(netfn=dcmi.NETFN_GROUP, command=dcmi.CMD_GET_POWER_READING,
                                    data=dcmi.request())
            r = dcmi.decode(bytes(raw["data"]))
            assert (r.current_w, r.average_w, r.period_ms, r.active) == (want_w, want_w, 0, True)
            if c is c1:
                assert r.timestamp >= 10                  # the reading's device second
            else:
                assert r.timestamp == 0                   # stale since device second 0
            c.close()


def test_exits_on_sigterm_or_stdin_closed_and_frees_the_port() -> None:
    by_signal, by_eof = BmcProcess(["--power-w", "5"]), BmcProcess(["--power-w", "5"])
    by_signal.proc.send_signal(signal.SIGTERM)
    assert by_eof.proc.stdin is not None
    by_eof.proc.stdin.close()            # what a parent that dies does (stop() would SIGTERM after 5 s)
    for srv in (by_signal, by_eof):
        assert srv.proc.wait(10) == 0 and _port_free(srv.port)
        assert srv.stop() == 0


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
