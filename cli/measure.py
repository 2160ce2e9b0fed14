"""``archline measure``: run a command under a platform's meters (logic: archline.bench.measure)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from archline.cli.params import NON_NEGATIVE, OutPath


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--platform", default="localhost", show_default=True,
              help="Profile name or path: its [[meters]] measure the command (none: time only, said why).")
@click.option("--emulate", is_flag=True,
              help="An emulated meter of the platform; its device draws busy power while the command's phase is "
                   "open (busy_w), idle power otherwise. Labelled emulated, with the true energy.")
@click.option("--meter", default=None, help="Which of the profile's [[meters]] (default: all).")
@click.option("--out", type=OutPath(dir_okay=True, file_okay=False, path_type=Path), default=None,
              help="Directory for a new measure-PLATFORM-STAMP/ (measure.json, trace, raw capture).")
@click.option("--repeat", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="Runs of the command (stops at the first that fails or is interrupted).")
@click.option("--baseline-s", type=NON_NEGATIVE, default=0.0, show_default=True,
              help="Idle window before the runs (S0's idle power); 0: none.")
@click.option("--subtract-idle", is_flag=True, help="Also report each window's energy above the baseline's idle "
              "power (needs --baseline-s).")
@click.option("--busy-w", type=NON_NEGATIVE, default=None, help="--emulate: the device's power inside a phase.")
@click.option("--idle-w", type=NON_NEGATIVE, default=None, help="--emulate: the device's power outside phases.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def measure(platform: str, emulate: bool, meter: str | None, out: Path | None, repeat: int, baseline_s: float,
            subtract_idle: bool, busy_w: float | None, idle_w: float | None, fmt: str, command: tuple[str, ...]
            ) -> None:
    """Run COMMAND under the platform's meters: time, energy, mean power and their bounds, per run and per phase.

    The command marks its own phases by writing "begin NAME" / "end NAME" lines to the FIFO named in
    $ARCHLINE_MARKS (archline.Monitor.from_env() does it from Python). archline exits with the command's exit
    code (128 + N when signal N ended it); SIGINT, SIGTERM and SIGHUP are passed to the command.

    \b
    archline measure --platform gtx580 --emulate -- python3 -c "print('hi')"
    """
    from archline.bench.errors import BenchError
    from archline.bench.measure import result
    from archline.bench.measure.run import MeasureOptions
    from archline.bench.measure.run import measure as run_measure

    if subtract_idle and baseline_s <= 0:
        raise BenchError("--subtract-idle needs an idle baseline: give --baseline-s (e.g. --baseline-s 5)")
    if not emulate and (busy_w is not None or idle_w is not None):
        raise BenchError("--busy-w and --idle-w set the emulated device's power: add --emulate")
    outcome = run_measure(MeasureOptions(command=command, platform=platform, emulate=emulate, meter=meter, out=out,
                                         repeat=repeat, baseline_s=baseline_s, subtract_idle=subtract_idle,
                                         busy_w=busy_w, idle_w=idle_w))
    if fmt == "json":
        click.echo(json.dumps(outcome.doc, indent=2, allow_nan=False))
    else:
        click.echo(result.table(outcome.doc))
    sys.stdout.flush()
    if outcome.exit_status:
        raise SystemExit(outcome.exit_status)
