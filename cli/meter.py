"""``archline meter``: list meters, record, decode a PowerMon 2 capture, integrate samples, emulate a PowerMon 2."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

import click

from archline.cli import params
from archline.cli.complete import platform_names, plugin_record_help, pty_kind_names, record_specs
from archline.cli.output import echo_json, echo_table, format_option, format_options
from archline.cli.params import DURATION, FINITE, POSITIVE, SAMPLES_SUFFIXES, FiniteFloat, OutPath, RegistryChoiceOption
from archline.common.outputs import show
from archline.powermon.errors import MAX_LOST_SHARE


class SamplesOut(OutPath):
    """A samples output: ``.csv``, ``.csv.gz`` or ``.parquet``, or a stream (``/dev/null``, a pipe), written as CSV
    (a stream gets no sidecar and a recording to it no raw capture). A link takes its format from its target
    (``l2`` -> ``t.csv``: CSV)."""

    follow_links = True

    def __init__(self) -> None:
        super().__init__(suffixes=SAMPLES_SUFFIXES)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from archline.common.outputs import is_stream

        if is_stream(os.fsdecode(value)) and os.path.exists(os.fsdecode(value)):
            return os.fsdecode(value)
        return super().convert(value, param, ctx)


@click.group()
def meter() -> None:
    """Power meters: PowerMon 2, PowerSensor3, PMD-USB (serial), RAPL, NVML, BMC, AMD SMI, hwmon, and emulators.

    \b
    Examples:
      archline meter list
      archline meter emulate --speed 1                 # prints the pty to use as a port
      archline meter record --meter powermon2:/dev/ttyUSB0 --channels 0,1,2,3 --duration 10 --out t.parquet
      archline meter record --meter powersensor3:/dev/ttyACM0 --duration 10 --out t.parquet
      archline meter decode capture.raw.bin --out samples.csv
      archline meter integrate samples.csv --format json
    """


def _ints(text: str | None) -> list[int] | None:
    """--channels as channel ids; None when not given. Given but naming none (``''``, ``','``) is refused: it would
    silently mean every channel."""
    if text is None:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated channel ids, got {text!r}",
                                 param_hint="'--channels'") from None
    if not ids:
        raise click.BadParameter(f"names no channel (got {text!r}): give channel ids such as 0,1,2,3, or leave "
                                 "--channels out for the meter's default", param_hint="'--channels'")
    return ids


@meter.command("list")
@format_option
def list_cmd(fmt: str) -> None:
    """Meters found on this machine (serial ports, PowerSensor3 and PMD-USB by USB ID, RAPL zones through powercap
    or perf's power events, NVML GPUs) and every other kind a profile's [[meters]] may name, each absent kind with
    its reason and, in the fix column, the one command that would give it (sudo chmod, sysctl, usermod, pip) where
    one exists, else why none can ("none here: a VM guest; measure on the host").

    \b
    Examples:
      archline meter list
      archline meter list --format json
    """
    from archline.powermon.offline import list_meters

    rows = list_meters()
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    echo_table(["kind", "found", "name", "detail", "fix"],
               [[r["kind"], "yes" if r["available"] else "no", r["name"], r["detail"], r.get("fix", "")]
                for r in rows])


@meter.command("record")
@click.option("--meter", "spec", required=True, shell_complete=record_specs, cls=params.MoreHelpOption,
              more=plugin_record_help,
              help="powermon2:PORT, powersensor3:PORT, pmd:PORT, emulated[:SPEED], rapl[:ZONES], nvml[:INDEX] "
                   "(powersensor3://default, pmd://default: their emulators), or a node's BMC: "
                   "redfish:https://BMC[:PORT] or ipmi:ipmi://USER:PASSWORD@BMC[:PORT] (DCMI; UDP 623 by default)")
@click.option("--channels", help="channels, e.g. 0,1,2,3 (default: PowerMon 2 0-7, PowerSensor3 / PMD-USB 0-3; a BMC "
              "has one whole-node reading and takes none)")
@click.option("--rate", "rate_hz", type=POSITIVE, default=None,
              help="PowerMon 2: per-channel Hz (1024/N; default 128); PowerSensor3 / PMD-USB: frames per second "
                   "(default: theirs); a BMC (redfish, ipmi) takes none: refused")
@click.option("--duration", "duration_s", type=DURATION, default=10.0, show_default=True,
              help="seconds; at least one of the meter's sample periods (shorter is refused). The recorded "
                   "window (the summary's time_s and energy) is this long, within one sample period; the trace and "
                   "raw capture also keep the samples that arrived while the meter stopped (tens to hundreds of ms "
                   "past the window, seconds on a loaded host: the sidecar's rows_after_window; meter integrate "
                   "uses the window)")
@click.option("--out", required=True, type=SamplesOut(),
              help="trace .parquet, .csv.gz or .csv (/dev/null: CSV as a stream, no raw capture)")
@click.option("--max-lost", type=FiniteFloat(ge=0, le=1), default=MAX_LOST_SHARE, show_default=True,
              help="share of the samples the meter may lose (disconnect, stall, overflow, dropped bytes) before "
                   "the recording fails with exit code 6; every loss is reported either way")
@format_options(default="json", help="json (the default, for scripts): the summary as one JSON document alone on "
                "stdout; table: energy, bound, power and losses per meter for people")
def record_cmd(spec: str, channels: str | None, rate_hz: float | None, duration_s: float, out: str, max_lost: float,
               fmt: str) -> None:
    """Record a meter for a while into a tidy trace (a PowerMon 2, PowerSensor3 or PMD-USB also keeps its raw byte
    capture beside it: OUT's stem .raw.bin and its sidecar, which meter decode reads).

    \b
    The summary (JSON on stdout) counts what the meter lost: lost_samples of expected_samples, lost_s, gaps,
    overflows, and the decoder's own counts; the energy bound covers the lost stretches. More than --max-lost
    of the samples lost, or a meter that vanished, exits 6 (or 4) after the summary.

    \b
    Examples:
      archline meter record --meter emulated:4 --duration 5 --out trace.parquet    an emulated PowerMon 2, 4x
      archline meter record --meter powermon2:/dev/ttyUSB0 --channels 0,1,2,3 --duration 10 --out t.parquet
      archline meter record --meter emulated:4 --duration 2 --out t.csv --format table
      archline meter record --meter redfish:https://USER:PASSWORD@bmc.example --duration 30 --out node.csv
                                     a node's BMC (SSL_CERT_FILE=bmc.pem for a self-signed certificate)
    """
    from archline.powermon.recording import record, writes_stdout

    err = writes_stdout(out)    # the trace is on stdout: the summary goes to stderr, never into the trace (asked
    rec = record(spec, duration_s, out, _ints(channels), rate_hz, max_lost)     # before a file is replaced)
    if fmt == "json":
        click.echo(json.dumps(rec.summary, indent=1, default=float), err=err)
    else:
        _record_table(rec.summary, err=err)
    if rec.error is not None:
        raise rec.error
    for w in rec.warnings:
        click.echo(f"archline: warning: {w}", err=True)
    if rec.interrupted:
        raise KeyboardInterrupt


def _record_table(summary: dict[str, Any], err: bool = False) -> None:
    """meter record's summary for people: one row per meter and channel, then where the trace went."""
    rows = []
    for name, m in summary.items():
        if not isinstance(m, dict) or "energy_j" not in m:
            continue
        label = " (emulated)" if m.get("emulated") else ""
        rows.append([f"{name}{label}", "total", f"{m['energy_j']:.6g}", f"{m['energy_err_j']:.3g}",
                     f"{m['mean_power_w']:.4g}", m.get("n_samples", ""),
                     f"{m.get('lost_samples', 0)} of {m.get('expected_samples', '?')}"])
        for ch, c in (m.get("channels") or {}).items():
            rail = c.get("rail", "")
            label_ch = ch if rail in ("", ch) else f"{ch} {rail}"       # a BMC's one channel (its kind's name): once
            rows.append(["", label_ch, f"{c['energy_j']:.6g}", f"{c['energy_err_j']:.3g}",
                         f"{c['mean_power_w']:.4g}", c.get("n_samples", ""), ""])
    echo_table(["meter", "channel", "energy_j", "err_j", "mean_power_w", "samples", "lost"], rows, err=err)
    click.echo(f"{summary.get('time_s', 0):.4g} s recorded; trace {summary.get('trace')}"
               + (f", raw capture {summary['raw']}" if summary.get("raw") else ""), err=err)
    src = summary.get("source")
    if isinstance(src, dict) and src.get("source"):        # a BMC: which resource the readings came from
        uri = src.get("uri")
        said = [", ".join(uri) if isinstance(uri, list) else str(uri)] if uri else []
        said += [f"chassis {src['chassis']}"] if src.get("chassis") else []
        said += ["no ReadingTime"] if src.get("reading_time") is False else []
        click.echo(f"read from {src['source']}" + (f" ({'; '.join(said)})" if said else ""), err=err)


@meter.command("decode")
@click.argument("raw", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=SamplesOut(), help="samples .csv, .csv.gz or .parquet (or a stream: CSV)")
@click.option("--channels", help="enabled channels (default: from RAW.json, else guessed from the data; other "
              "channels than RAW.json's are refused); a PowerSensor3 / PMD-USB capture: the pairs to keep")
@click.option("--rate", "rate_hz", type=POSITIVE,
              help="per-channel Hz (default: from RAW.json, else 128); a rate other than RAW.json's is refused")
@click.option("--r-sense", "r_sense_ohm", type=POSITIVE,
              help="PowerMon 2: shunt ohms for every channel (default: RAW.json); overriding RAW.json's shunts (a "
                   "capture recorded with a wrong one) is warned about")
@click.option("--partial", is_flag=True,
              help="decode a capture cut short (a PowerMon 2 one without its done record, a PowerSensor3 or "
                   "PMD-USB one ending mid-frame)")
@format_options(help="table: one line on stderr; json: one JSON document (samples, the decoder's counts, "
                     "warnings) alone on stdout")
def decode_cmd(raw: str, out: str, channels: str | None, rate_hz: float | None, r_sense_ohm: float | None,
               partial: bool, fmt: str) -> None:
    """Decode a PowerMon 2 (or PowerSensor3, PMD-USB) byte capture into samples (t_s, channel, voltage_v, current_a,
    power_w).

    \b
    RAW may be a pipe (meter decode <(zcat c.raw.bin.gz) ...): it is read once, up to 1 GiB (a day of a PowerMon
    2's fastest stream; 50 minutes of a PowerSensor3's 360 kB/s: decode a longer one from a file); its sidecar
    RAW.json, when there is one, says the channels, rate, shunts and clock. A recording that was killed leaves
    .RAW.PID.tmp and its sidecar: pass --partial to decode it.

    \b
    Examples:
      archline meter decode capture.raw.bin --out samples.csv
      archline meter decode capture.raw.bin --out samples.csv --format json
    """
    from archline.formats.meters.capture import stream_capture_kind
    from archline.powermon.offline import decode_to_file

    kind = stream_capture_kind(raw)
    if kind is not None:      # a PowerSensor3 or PMD-USB capture (its sidecar says which)
        from archline.powermon.stream.meter import decode_capture_to_file

        n, emulated, meta = decode_capture_to_file(raw, out, kind, _ints(channels), rate_hz, r_sense_ohm,
                                                    partial=partial)
    else:
        n, emulated, meta = decode_to_file(raw, out, _ints(channels), rate_hz, r_sense_ohm, partial=partial)
    st = meta["stats"]
    label = " (emulated)" if emulated else " (source unknown: no sidecar)" if emulated is None else ""
    for w in meta["warnings"]:
        click.echo(f"archline: warning: {w}", err=True)
    if fmt == "json":
        echo_json({"samples": n, "emulated": emulated, "out": os.fsdecode(out), "decoder": st,
                   "warnings": list(meta["warnings"])})
        return
    if kind is not None:
        click.echo(f"{n} samples{label} -> {show(out)}; " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                                                    for k, v in st.items()), err=True)
        return
    click.echo(f"{n} samples{label} -> {show(out)}; overflows {st['overflows']}, gaps {st['gaps']}, "
               f"lost records {st['lost_records']}, resyncs {st['resyncs']}, skipped bytes {st['skipped_bytes']}",
               err=True)


@meter.command("integrate")
@click.argument("samples", type=click.Path(dir_okay=False))
@format_option
@click.option("--start", "t0_s", type=FINITE,
              help="region start, in seconds on the file's own t_s timeline (a recording's is the meter's clock, "
                   "not 0 at its first sample: see the window printed without --start/--end); default: the "
                   "recorded window")
@click.option("--end", "t1_s", type=FINITE, help="region end, on the same t_s timeline as --start")
@click.option("--min-samples", type=click.IntRange(min=0), default=2, show_default=True,
              help="fewest samples of each channel the region must hold")
@click.option("--max-lost", type=FiniteFloat(ge=0, le=1), default=MAX_LOST_SHARE, show_default=True,
              help="share of the samples the cadence promises (the sidecar's rate_hz) that may be missing before "
                   "the integration fails with exit code 6, as a recording does; every loss is reported either way")
def integrate_cmd(samples: str, fmt: str, t0_s: float | None, t1_s: float | None, min_samples: int,
                  max_lost: float) -> None:
    """Energy per channel and in total (trapezoid, partial samples at the edges), with an error bound.

    \b
    Only where there is data: a region outside the samples, one with fewer than --min-samples samples, or NaN or
    negative power is an error, as are samples all at one time, a channel whose times go back, and power_w that
    disagrees with voltage_v x current_a (by more than 0.1% + 1 mW). A trace of an emulator running faster than
    real time (meter record --meter emulated:4) is integrated on the emulated timeline, as the recording was.
    Holes in a channel's cadence (the sidecar's rate_hz) are lost samples, counted as a recording counts them; the
    error bound covers them. SAMPLES may be a pipe: meter integrate <(zcat t.csv.gz).

    \b
    --start and --end are times of the file's t_s column, not seconds from its start: a file from meter record or
    meter decode is on the meter's clock. Integrate once without them to see the window (t_start_s, t_end_s).

    \b
    Examples:
      archline meter integrate samples.csv --format json     the window is t_start_s .. t_end_s
      archline meter integrate samples.csv --start 1 --end 3     a file whose t_s counts from zero
    """
    from archline.powermon.offline import integrate_file, loss_error

    _not_a_sidecar(samples)
    res = integrate_file(samples, t0_s, t1_s, min_samples=min_samples)
    _show_integration(res, fmt)
    error = loss_error(res, samples, max_lost)
    if error is not None:
        raise error


def _not_a_sidecar(samples: str) -> None:
    """A samples file's JSON sidecar (``t.csv.json``) given as the samples: say so and name the file to give, rather
    than fail to read it as CSV."""
    if not samples.lower().endswith(".json"):
        return
    described = samples[: -len(".json")]
    what = f"a JSON sidecar, not a samples file; give the samples file it describes: {show(described)}" \
        if os.path.exists(described) else f"JSON, not a samples file ({', '.join(SAMPLES_SUFFIXES)})"
    raise click.BadParameter(f"{show(samples)} is {what}",
                             ctx=click.get_current_context(silent=True), param_hint="'SAMPLES'")


def _show_integration(res: Any, fmt: str) -> None:
    for w in res.warnings:
        click.echo(f"archline: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps(res.as_json(), indent=1))
        return
    rows = [[k, f"{c.energy_j:.6f}", f"{c.energy_err_j:.4f}", f"{c.mean_power_w:.4f}", c.n_samples]
            for k, c in res.channels.items()]
    rows.append(["total", f"{res.total_energy_j:.6f}", f"{res.energy_err_j:.4f}", "", ""])
    echo_table(["channel", "energy_j", "err_j", "mean_power_w", "n_samples"], rows)
    tc = f" (time compression {res.time_compression:g}x)" if res.time_compression != 1 else ""
    click.echo(f"over {res.duration_s:.6f} s{tc}{' (emulated)' if res.emulated else ''} (t_s {res.t_start_s:.6f} "
               f"to {res.t_end_s:.6f}, the file's timeline for --start/--end); "
               f"overflows {'unknown' if res.overflows is None else res.overflows}, gaps {res.gaps}, "
               f"lost samples {res.lost_samples}")


@meter.command("emulate")
@click.option("--script", type=click.Path(dir_okay=False),
              help='power script JSON/TOML: {"steps": [{"t_s": 0, "channels": {"0": [12.0, 5.0]}}]}')
@click.option("--speed", type=POSITIVE, default=1.0, show_default=True, help="emulated seconds per real second")
@click.option("--seed", type=click.IntRange(min=0), default=0)
@click.option("--duration", "duration_s", type=DURATION, help="stop after this many seconds (default: until Ctrl-C)")
@click.option("--port-file", type=OutPath(), help="also write the pty path to this file; it is removed when the "
              "emulator stops (Ctrl-C, SIGTERM, --duration): it names the pty only while the pty is open")
@click.option("--platform", default=None, shell_complete=platform_names,
              help="play this platform's model power on its profile's rails (idle unless --intensity is given)")
@click.option("--intensity", type=POSITIVE, default=None, help="with --platform: a kernel at this flop/byte")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--kind", cls=RegistryChoiceOption, registry=pty_kind_names, show_default=True,
              help="the device on the pty: a PowerMon 2, or a PowerSensor3 (firmware 1.6.1's protocol: psinfo, "
                   "psrun or meter record can be pointed at the port)")
@click.option("--rate", "rate_hz", type=POSITIVE, default=None,
              help="--kind powersensor3: frames per second (default 20000, the F411 board's)")
@format_options(help="table: the port alone on stdout (for $(...)); json: one JSON document with the port, speed "
                     "and what it plays, printed as soon as the port is open")
def emulate_cmd(script: str | None, speed: float, seed: int, duration_s: float | None, port_file: str | None,
                platform: str | None, intensity: float | None, precision: str, kind: str, rate_hz: float | None,
                fmt: str) -> None:
    """A PowerMon 2 or PowerSensor3 (emulated) on a pseudo-terminal: prints the port to give to a driver or `meter
    record`.

    \b
    Examples:
      archline meter emulate --script power.json
      archline meter emulate --platform gtx580 --intensity 8 --precision sp
      archline meter emulate --speed 2 --format json
      archline meter emulate --kind powersensor3 --rate 2000 --duration 1
    """

    from archline.formats.meters.versions import emulator_speed_problem, max_emulator_speed
    from archline.powermon import kinds
    from archline.powermon.emulator import PtyServer, Script
    from archline.powermon.errors import MeterError

    mk = kinds.get(kind)
    pty = mk.pty_emulator
    assert pty is not None      # the choice lists only the kinds that have one
    # a client may ask for the device's fastest stream: the pty must carry that at this speed (bench run's rule;
    # a PowerSensor3 streams its one rate)
    per_s = pty.records_per_s(rate_hz)
    problem = emulator_speed_problem(speed, per_s)
    if problem is not None:
        raise MeterError(f"--speed {speed:g}: at the {mk.title}'s"
                         f" fastest stream, {problem}; lower --speed to {max_emulator_speed(per_s)} or less")
    if platform is not None and script is not None:
        raise click.UsageError("give --script or --platform, not both")
    if intensity is not None and platform is None:
        raise click.UsageError("--intensity needs --platform")
    power = Script.load(script) if script else None
    what = f"the script {script}" if script else "the default power script"
    if platform is not None:
        from archline.bench.registry import emulator

        power, what = emulator().steady_power_script(platform, intensity, precision)
        click.echo(what, err=True)
    if rate_hz is not None and not pty.takes_rate:
        raise click.UsageError("--rate is for --kind powersensor3 (a PowerMon 2's client sets its own rate)")
    core: Any = pty.core(power, speed=speed, seed=seed, rate_hz=rate_hz)
    label = mk.title
    with PtyServer(core) as srv:
        if fmt == "json":
            echo_json({"port": srv.port, "meter": kind, "emulated": True, "speed": speed, "seed": seed,
                       "plays": what, **({"rate_hz": core.rate_hz} if pty.takes_rate else {})})
        else:
            click.echo(srv.port)
        sys.stdout.flush()      # the port now, not when the server stops: a script waits for it
        from archline.common.atomic import transient_file

        # --port-file names the pty while it is open, and is removed when it closes (Ctrl-C, SIGTERM, --duration)
        with transient_file(port_file, srv.port + "\n") if port_file else contextlib.nullcontext():
            click.echo(f"{label} (emulated, speed {speed:g}) on {srv.port}; Ctrl-C to stop", err=True)
            t_end = None if duration_s is None else time.monotonic() + duration_s
            # Ctrl-C or SIGTERM: the pty server stops (leaving the with) and the command exits 130
            while (t_end is None or time.monotonic() < t_end) and not srv.closed:
                time.sleep(0.1)


from archline.cli.meter_sensor import calibrate_cmd, probe_cmd  # noqa: E402  (meter probe / calibrate, issue 24)

meter.add_command(probe_cmd)
meter.add_command(calibrate_cmd)
