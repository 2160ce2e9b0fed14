"""PowerSensor3 end to end: ``archline meter record`` on the ``powersensor3://`` emulator (clean and with faults,
every loss in the summary), and ``bench run --emulate --meter ps3`` on the GTX 580 profile, whose fit recovers
S0 Table IV (eps_s 99.7 pJ/flop, eps_d 212 pJ/flop, eps_mem 513 pJ/B, pi0 122 W) within the 3% that the
PowerMon 2 test allows (tests/runner/test_runner_emulated_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.stream_e2e import record, registered, run_and_fit

from archline.bench.config.options import RunOptions

TOL_REL = 0.03
GTX580_TABLE4 = {"eps_flop_sp": 99.7e-12, "eps_flop_dp": 212e-12, "eps_mem": 513e-12, "pi0": 122.0}


def test_meter_record_powersensor3(tmp_path: Path) -> None:
    with registered("ps3-e2e") as name:
        rc, summary, samples, meta = record("powersensor3", f"powersensor3://{name}?speed=2&rate=2000",
                                            tmp_path / "t.csv")
    assert rc == 0
    m = summary["powersensor3"]
    assert m["emulated"] is True and m["lost_samples"] == 0 and m["sample_hz"] == 2000.0
    assert m["channels"]["0"]["mean_power_w"] == pytest.approx(60.0, rel=0.01)
    assert m["channels"]["1"]["mean_power_w"] == pytest.approx(6.6, rel=0.02)
    assert summary["decoder"]["frames_missing"] == 0 and summary["decoder"]["markers"] >= 1
    assert meta["emulated"] is True and samples.channels() == [0, 1]


def test_meter_record_powersensor3_counts_faults(tmp_path: Path) -> None:
    with registered("ps3-e2e-faults") as name:
        rc, summary, _, _ = record("powersensor3", f"powersensor3://{name}?speed=2&rate=2000&drop=1805"
                                   "&noise=9000:3&stall=0.3:0.05", tmp_path / "t.csv")
    assert rc == 6                                     # more than --max-lost (1%): exit 6 after the summary
    m = summary["powersensor3"]
    assert summary["decoder"]["frames_missing"] == 1 + 0 + 100       # the dropped byte's frame, the stall
    assert summary["decoder"]["bytes_skipped"] == 17 + 3
    assert m["lost_samples"] == 2 * 101 and any("lost 202" in w for w in m["warnings"])


@pytest.mark.slow
def test_meter_record_at_20khz_free_running_clock_loses_nothing_and_counts_real_gaps(tmp_path: Path) -> None:
    """Issue 35's acceptance: a device whose first stamp is wherever its clock is and whose stamps land 0-1 us late
    (the emulator's default), at the real 20 kHz: 0 frames counted lost in 10 recordings; a dropped byte (1 frame)
    and a 25.6 ms stall (512 frames, exactly one stamp wrap) still counted to the frame."""
    with registered("ps3-e2e-20k") as name:
        for seed in range(10):
            rc, summary, _, _ = record("powersensor3", f"powersensor3://{name}?rate=20000&seed={seed}",
                                       tmp_path / f"t{seed}.csv")
            m = summary["powersensor3"]
            assert (rc, summary["decoder"]["frames_missing"], m["lost_samples"], m["warnings"]) == (0, 0, 0, []), seed
        rc, summary, _, _ = record("powersensor3", f"powersensor3://{name}?rate=20000&seed=3&drop=18005"
                                   "&stall=0.08:0.0256", tmp_path / "gap.csv")
    assert summary["decoder"]["frames_missing"] == 1 + 512 and summary["decoder"]["bytes_skipped"] == 17
    assert summary["powersensor3"]["lost_samples"] == 2 * 513 and rc == 6


def test_bench_run_emulate_gtx580_through_powersensor3_recovers_table4(tmp_path: Path) -> None:
    """At the profile's own time compression (50x) and the ps3 meter's 250 frames per second."""
    rows, got = run_and_fit(RunOptions(platform="gtx580", emulate=True, meter="ps3", kernels=("intensity",),
                                       precisions=("sp", "dp"), quick=True, seed=3),
                            tmp_path)
    for r in rows:
        assert r["emulated"] == "true" and "ps3:powersensor3-emulated" in r["meter"]
        assert int(r["lost_samples"]) == 0 and int(r["n_samples"]) >= 400
    for k, want in GTX580_TABLE4.items():
        assert got[k] == pytest.approx(want, rel=TOL_REL), (k, got[k], want)


def test_bench_run_refuses_a_time_compression_the_pty_cannot_carry(tmp_path: Path) -> None:
    from archline.bench.emulated.model import EmulationError

    with pytest.raises(EmulationError, match="powersensor3 records per second"):
        run_and_fit(RunOptions(platform="gtx580", emulate=True, meter="ps3", kernels=("intensity",),
                               precisions=("sp",), quick=True, time_compression=100.0), tmp_path)


def test_bench_sweep_emulate_through_powersensor3(tmp_path: Path) -> None:
    import csv

    from archline.cli.main import main

    cfg = tmp_path / "s.toml"
    cfg.write_text('[sweep]\nplatform = "gtx580"\nemulate = true\nmeter = "ps3"\nkernels = ["intensity"]\n'
                   'precisions = ["dp"]\nquick = true\nout = "out"\n')
    rc = main(["bench", "sweep", str(cfg)])
    assert rc in (0, None)
    (results,) = (tmp_path / "out").glob("*.csv")
    with open(results, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 11
    assert all("ps3:powersensor3-emulated" in r["meter"] and int(r["lost_samples"]) == 0 for r in rows)


# --- issue 35 (fixer FS): errors alone, a profile's two rates, a non-serial port ----------------------------------

@pytest.mark.parametrize(("meter", "says"), [
    ("powersensor3:powersensor3://default?rate=1e-3", "--duration 1 s is shorter than"),
    ("powersensor3:powersensor3://other?rate=1000", "no emulated device named 'other'"),
    ("powersensor3:/dev/null", "/dev/null is not a serial device")])
def test_an_error_comes_alone_and_a_non_serial_port_is_named(run_cli: Any, tmp_path: Path, meter: str,
                                                           says: str) -> None:
    """Issue 35 S#11/#12: the emulator's rate warning printed before an error (it is said once the stream starts);
    /dev/null gave 'Could not configure port: (25, Inappropriate ioctl...)', exit 4: not a serial device, exit 2."""
    r = run_cli("meter", "record", "--meter", meter, "--duration", "1", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archline: error: ") and says in lines[0], lines


def test_a_profiles_rate_hz_against_its_ports_rate_is_refused(tmp_path: Path) -> None:
    """Issue 35 S#8: rate_hz = 2000 with port powersensor3://default?rate=1000 ran at 1000 silently."""
    from archline.powermon.errors import MeterError
    from archline.powermon.powersensor3.meter import rate_of
    from archline.powermon.spec import MeterSpec

    spec = MeterSpec(name="ps3", kind="powersensor3", port="powersensor3://default?rate=1000", rate_hz=2000,
                     channels=[{"id": 0, "rail": "slot12"}])
    with pytest.raises(MeterError, match=r"rate_hz = 2000 and its port's rate=1000 .* disagree") as e:
        rate_of(spec)
    assert e.value.exit_code == 2
    same = spec.model_copy(update={"rate_hz": 1000.0})
    assert rate_of(same) == 1000.0


def test_a_marker_not_back_and_clipped_samples_are_warned_and_in_the_summary(caplog: Any) -> None:
    """Issue 35 S#7/#13: 'powersensor3: 2 marker(s) not back ...' lacked the 'archline: warning:' prefix and the
    summary; a sensor at full scale (1023) was integrated silently: both warned, kept as the driver's notes (the
    summary's warnings), the clipped pair samples counted (samples_clipped)."""
    import logging

    import numpy as np
    from support.stream_meters import POWER, spec_of

    from archline.powermon.powersensor3.protocol import Decoder, default_config, encode_frames, timestamp_us
    from archline.powermon.spec import emulate_meter

    meter = emulate_meter(spec_of("powersensor3", rate_hz=500.0), lambda t_s: POWER, speed=1.0, seed=0)
    meter.start()
    meter.driver._marks_sent.append(0.0)          # a marker the device never got (its M lost)
    with caplog.at_level(logging.WARNING, logger="archline.powermon"):
        meter.stop()
    (note,) = meter.driver.notes
    assert "1 marker(s) not back after 0.5 s" in note and meter.info()["notes"] == [note]
    assert any(r.getMessage() == f"archline: warning: {note}" for r in caplog.records)

    k = np.arange(50)
    lv = np.tile([600, 335, 1023, 335, 0, 335, 541, 0], (50, 1))   # pair 1 I at 1023, pair 2 I 0
    dec = Decoder(default_config(), 2000.0)
    dec.feed(encode_frames(timestamp_us(k, 2000.0), lv, k < 0))
    assert dec.stats.samples_clipped == 2 * 50          # pair 3's voltage at 0 is 0 V, not clipped


def test_the_summary_the_sidecar_and_integrate_agree_on_the_window(run_cli: Any, tmp_path: Path) -> None:
    """Issue 35 S#10/#16: the summary's time_s was the window asked (half a period more than duration_s and the
    sidecar's window_s), and integrate of the CSV counted 2000 samples where record counted 2001 (the first one
    3 ns before window_s[0] once rounded): one window, one count. A sample on an edge is counted within 1/1000 of
    a period."""
    import json

    import numpy as np

    from archline.powermon.record.integrate import integrate_series

    out = tmp_path / "w.csv"
    r = run_cli("meter", "record", "--meter", "powersensor3:powersensor3://default?rate=1000", "--duration", "0.5",
                "--out", str(out))
    assert r.exit_code == 0, r.stderr
    summary, side = json.loads(r.stdout), json.loads(Path(f"{out}.json").read_text())
    m = summary["powersensor3"]
    assert summary["time_s"] == m["duration_s"] == side["window_s"][1] - side["window_s"][0]
    got = run_cli("meter", "integrate", str(out), "--format", "json")
    assert got.exit_code == 0, got.stderr
    per_channel = {c["n_samples"] for c in json.loads(got.stdout)["channels"].values()}
    assert per_channel == {m["n_samples"] // 4} and m["n_samples"] == m["expected_samples"]
    t = 100.0 + np.arange(11) * 1e-3
    assert integrate_series(t - 3e-9, np.ones(11), 100.0, 100.01, period_s=1e-3).n_samples == 11
    assert integrate_series(t - 2e-6, np.ones(11), 100.0, 100.01, period_s=1e-3).n_samples == 10


def test_meter_emulate_puts_a_powersensor3_on_a_pty(tmp_path: Path) -> None:
    """Issue 35 S#14: `meter emulate --kind powersensor3` serves the emulated board on a pseudo-terminal that the
    real driver (or psinfo) can open: its V line names the MCU of its rate, its frames decode on that cadence."""
    import subprocess
    import sys
    import time as _time

    from archline.powermon.powersensor3.driver import PowerSensor3

    pf = tmp_path / "port"
    p = subprocess.Popen([sys.executable, "-c", "import sys; from archline.cli.main import main; "
                          "sys.exit(main(sys.argv[1:]))", "meter", "emulate", "--kind", "powersensor3",
                          "--rate", "2000", "--duration", "5", "--port-file", str(pf)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = _time.monotonic() + 10
        while not pf.exists() and _time.monotonic() < deadline:
            _time.sleep(0.05)
        drv = PowerSensor3(pf.read_text().strip(), 2000.0, name="ps3").open()
        try:
            assert drv.version == "F407-1.6.1" and drv.mcu == "F407"
            drv.start()
            _time.sleep(0.2)
            drv.stop()
            k, _, _ = drv.frames()
            assert k.size >= 100 and np.array_equal(k, np.arange(k[0], k[0] + k.size))
        finally:
            drv.close()
    finally:
        p.terminate()
        p.wait(5)
