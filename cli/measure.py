"""``archline measure``: run a command under a platform's meters (logic: archline.bench.measure)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from archline.cli.complete import platform_names, profile_meters
from archline.cli.params import NON_NEGATIVE, OutPath


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--platform", default="localhost", show_default=True, shell_complete=platform_names,
              help="Profile name or path: its [[meters]] measure the command (none: time only, said why).")
@click.option("--emulate", is_flag=True,
              help="An emulated meter of the platform; its device draws busy power while the command's phase is "
                   "open (busy_w), idle power otherwise. Labelled emulated, with the true energy.")
@click.option("--meter", default=None, shell_complete=profile_meters,
              help="Which of the profile's [[meters]]. Default: every one that opens here (one that cannot is "
                   "left out with a warning), except one measuring a device an earlier one measures (their "
                   "energies are added: it would count twice); with --emulate one emulated meter, the profile's "
                   "PowerMon 2, else its first meter with an emulator (an nvml or rapl meter named with "
                   "--emulate is refused).")
@click.option("--out", type=OutPath(dir_okay=True, file_okay=False, path_type=Path), default=None,
              help="Directory for a new measure-NAME-STAMP/ (measure.json, trace, raw capture); NAME is the "
                   "profile's name, also for --platform PATH.")
@click.option("--repeat", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="Runs of the command (stops at the first that fails or is interrupted).")
@click.option("--baseline-s", type=NON_NEGATIVE, default=0.0, show_default=True,
              help="Idle window before the runs (S0's idle power); 0: none.")
@click.option("--subtract-idle", is_flag=True, help="Also report each window's energy above the baseline's idle "
              "power (needs --baseline-s).")
@click.option("--busy-w", type=NON_NEGATIVE, default=None, help="--emulate: the device's power inside a phase.")
@click.option("--idle-w", type=NON_NEGATIVE, default=None, help="--emulate: the device's power outside phases.")
@click.option("--counters", type=click.Choice(["perf", "likwid"]), default=None,
              help="Count the command's flops and bytes with perf stat or likwid-perfctr (says why not where the "
                   "machine has no PMU access, e.g. most VMs).")
@click.option("--counts-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The program's counts from a profiler export instead (ncu --csv, rocprof, perf stat -x, "
                   "likwid-perfctr -O); name the tool with --counts-tool.")
@click.option("--counts-tool", type=click.Choice(["ncu", "rocprof", "perf", "likwid"]), default=None,
              help="The tool that wrote --counts-file.")
@click.option("--costs", default=None, help="Cost table (.json), profile or platform name: place the program's "
              "measured point on its roofline beside the model's prediction for the counts (S1 Ch. 6).")
@click.option("--figure", type=OutPath(suffixes=(".png", ".pdf", ".svg")), default=None,
              help="With --costs: draw the placement (time roofline, arch line, power line).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def measure(platform: str, emulate: bool, meter: str | None, out: Path | None, repeat: int, baseline_s: float,
            subtract_idle: bool, busy_w: float | None, idle_w: float | None, counters: str | None,
            counts_file: Path | None, counts_tool: str | None, costs: str | None, figure: Path | None, fmt: str,
            command: tuple[str, ...]) -> None:
    """Run COMMAND under the platform's meters: time, energy, mean power and their bounds, per run and per phase.

    The command marks its own phases by writing "begin NAME" / "end NAME" lines to the FIFO named in
    $ARCHLINE_MARKS (archline.Monitor.from_env() does it from Python). With --format json the command's own
    stdout goes to stderr, so stdout holds the JSON report alone. archline exits with the command's exit
    code (128 + N when signal N ended it); SIGINT, SIGTERM and SIGHUP are passed to the command. Every warning
    (lost samples, a widened window, a meter left out, a phase never ended) is also an "archline: warning:" line
    on stderr, in both formats.

    A meter with a sensor profile (sensor_profile in its [[meters]] entry) cannot measure a window shorter than
    the sensor's shortest. A --baseline-s shorter than that is refused before the command runs (exit 2). A run or
    phase that turns out shorter is not thrown away: it is measured over a window widened to the sensor's
    shortest about its middle (archline waits until that window has passed), marked "(widened)" with a warning
    and widened_from in the JSON; its energy then includes the time around it (above_idle_j, with --baseline-s
    and --subtract-idle, is its energy above idle), and --costs does not place it.

    \b
    Examples:
      archline measure --platform gtx580 --emulate -- python3 -c "print('hi')"
      archline measure --repeat 3 --baseline-s 2 --format json -- ./my_program input.dat
      archline measure --counters perf --costs my-costs.json --figure placed.png -- ./my_program
      archline measure --counts-file ncu.csv --counts-tool ncu --costs gtx580 -- ./my_gpu_program
    """
    from archline.bench.errors import BenchError
    from archline.bench.measure import result
    from archline.bench.measure.run import MeasureOptions
    from archline.bench.measure.run import measure as run_measure

    if subtract_idle and baseline_s <= 0:
        raise BenchError("--subtract-idle needs an idle baseline: give --baseline-s (e.g. --baseline-s 5)")
    if not emulate and (busy_w is not None or idle_w is not None):
        raise BenchError("--busy-w and --idle-w set the emulated device's power: add --emulate")
    if (counts_file is None) != (counts_tool is None):
        raise BenchError("--counts-file and --counts-tool go together (e.g. --counts-file ncu.csv --counts-tool ncu)")
    if counters is not None and counts_file is not None:
        raise BenchError("give the counts one way: --counters (collected now) or --counts-file (a profiler export)")
    if figure is not None and costs is None:
        raise BenchError("--figure draws the placement on a cost table: add --costs")
    if costs is not None and counters is None and counts_file is None:
        raise BenchError("--costs places the program by its counts: add --counters perf|likwid or --counts-file")
    hooks = _Hooks(counters, counts_file, counts_tool, costs, figure)
    outcome = run_measure(MeasureOptions(command=command, platform=platform, emulate=emulate, meter=meter, out=out,
                                         repeat=repeat, baseline_s=baseline_s, subtract_idle=subtract_idle,
                                         busy_w=busy_w, idle_w=idle_w, counters=hooks.counters_hook(),
                                         place=hooks.place_hook(),
                                         child_stdout_to_stderr=fmt == "json"))
    for w in result.warnings(outcome.doc):
        click.echo(f"archline: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps(outcome.doc, indent=2, allow_nan=False))
    else:
        click.echo(result.table(outcome.doc))
        if "placement" in outcome.doc:
            click.echo(_placement_text(outcome.doc["placement"]))
    sys.stdout.flush()
    if outcome.exit_status:
        raise SystemExit(outcome.exit_status)


class _Hooks:
    """Wiring only: bench runs the command, fit reads the counts and places the program; these closures connect
    them (bench may not import fit's readers)."""

    def __init__(self, counters: str | None, counts_file: Path | None, counts_tool: str | None, costs: str | None,
                 figure: Path | None) -> None:
        self.tool, self.costs, self.figure = counters, costs, figure
        self.collected: list[Any] = []
        self.platform: Any = None
        if costs is not None:      # a bad --costs is an error before the command runs, not after
            from archline.fit.analyses.placement import load_platform

            self.platform = load_platform(costs)
        if counts_file is not None and counts_tool is not None:
            from archline.fit.io.counters import read_collected

            self.collected.append(read_collected(counts_tool, counts_file))   # several kernels: summed

    def counters_hook(self) -> Any:
        if self.tool is None:
            return None
        from archline.bench.errors import ToolUnavailableError
        from archline.bench.measure_counters import available, wrap_command

        ok, why = available(self.tool)
        if not ok:
            raise ToolUnavailableError(f"--counters {self.tool}: {why}")
        tool = self.tool

        def hook(argv: Any) -> tuple[list[str], Any]:
            from archline.fit.io.counters import read_collected

            work = Path(tempfile.mkdtemp(prefix="archline-counters-"))
            path = work / "counters.csv"

            def read() -> dict[str, Any]:
                try:
                    counts = read_collected(tool, path)
                except Exception as e:  # the run's counts are lost, not the measurement: say why in the run
                    return {"reason": f"{tool}: {e}"}
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                self.collected.append(counts)
                return counts.as_dict()  # type: ignore[no-any-return]

            return wrap_command(tool, argv, path), read

        return hook

    def place_hook(self) -> Any:
        if self.costs is None:
            return None
        def place(doc: dict[str, Any]) -> dict[str, Any]:
            from archline.fit.analyses.placement import place_program

            s = doc.get("summary", {})
            if not self.collected:
                return {"reason": "no counts were collected (see each run's counters.reason)"}
            if any(r.get("widened_from") for r in doc.get("runs", [])):
                return {"reason": "a run was shorter than the meter's sensor can measure: its energy is a widened "
                                  "window's, not the program's alone (make it last longer)"}
            if "energy_j_mean" not in s:
                return {"reason": "no energy was measured: " + str(doc.get("reason") or "no meter")}
            p = place_program(self.platform, self.collected[-1], s["time_s_mean"], s["energy_j_mean"], self.figure,
                              measured_energy_err_j=s.get("energy_err_j_mean", 0.0),
                              emulated=bool(doc.get("emulated")))
            return p.as_dict()  # type: ignore[no-any-return]

        return place


def _placement_text(pl: dict[str, Any]) -> str:
    if "reason" in pl:
        return f"placement: not made: {pl['reason']}"
    m, pr, d = pl["measured"], pl["predicted"], pl["difference"]
    err = "" if pr.get("energy_err_j") is None else f" +- {pr['energy_err_j']:.2g}"
    head = (f"placement on {pl['platform']} ({pl['precision']}, {pl['flops']:.4g} flops, intensity "
            f"{pl['intensity_flop_per_byte'] or float('inf'):.3g} flop/B): measured {m['energy_j']:.4g} J, "
            f"predicted {pr['energy_j']:.4g}{err} J, difference {d['energy_j']:+.4g} J")
    within = d.get("within")
    tail = "" if within is None else (" (within the uncertainty)" if within else " (OUTSIDE the uncertainty)")
    fig = f"; figure {pl['figure']}" if pl.get("figure") else ""
    return head + tail + fig
