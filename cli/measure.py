"""``archline measure``: run a command under a platform's meters (logic: archline.bench.measure)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from archline.bench.errors import BenchError
from archline.cli.complete import platform_names, profile_meters
from archline.cli.params import NON_NEGATIVE, POSITIVE, OutPath
from archline.formats.schema import CONTRACT

#: the counts CSV's count columns (`archline predict`'s format): one --COLUMN option each, for the whole command
COUNT_COLUMNS = [c for c in CONTRACT if c.kind == "count"]


def _plural(unit: str) -> str:
    return unit + ("es" if unit.endswith("s") else "s")


def _count_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for c in reversed(COUNT_COLUMNS):
        f = click.option(f"--{c.name.replace('_', '-')}", c.name, type=NON_NEGATIVE, default=None,
                         help=f"The whole command's {c.doc} ({_plural(c.unit)}), given by hand (with --costs).")(f)
    return f


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
@click.option("--tdp-w", type=POSITIVE, default=None,
              help="--emulate: instead of --busy-w/--idle-w, busy = TDP and idle = a quarter of it (as bench run's "
                   "--tdp-w).")
@click.option("--counters", type=click.Choice(["perf", "likwid"]), default=None,
              help="Count the command's flops and bytes with perf stat or likwid-perfctr (says why not where the "
                   "machine has no PMU access, e.g. most VMs).")
@click.option("--counts-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The program's counts from a file instead: archline's counts CSV (the one `archline predict` "
                   "reads: a row per phase, 'run' for the whole command), or with --counts-tool a profiler "
                   "export (ncu --csv, rocprof, perf stat -x, likwid-perfctr -O).")
@click.option("--counts-tool", type=click.Choice(["ncu", "rocprof", "perf", "likwid"]), default=None,
              help="The profiler that wrote --counts-file (none: archline's counts CSV).")
@_count_options
@click.option("--costs", default=None, help="Cost table (.json), profile, platform name, localhost or an ERT "
              "roofline.json: place the program's measured point on its roofline beside the model's prediction for "
              "the counts (S1 Ch. 6).")
@click.option("--figure", type=OutPath(suffixes=(".png", ".pdf", ".svg")), default=None,
              help="With --costs that has energy constants: draw the placement (time roofline, arch line, power "
                   "line); with none (a time-only table, localhost, an ERT roofline.json) nothing is drawn and a "
                   "warning says so.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def measure(platform: str, emulate: bool, meter: str | None, out: Path | None, repeat: int, baseline_s: float,
            subtract_idle: bool, busy_w: float | None, idle_w: float | None, tdp_w: float | None, counters: str | None,
            counts_file: Path | None, counts_tool: str | None, costs: str | None, figure: Path | None, fmt: str,
            command: tuple[str, ...], **by_hand: float | None) -> None:
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
      archline measure --costs gtx580 --flops-dp 2e9 --bytes-mem 2.4e7 -- ./my_program
      archline measure --costs gtx580 --counts-file my_counts.csv -- ./my_program
      archline measure --platform localhost --emulate --busy-w 60 --idle-w 20 -- ./my_program

    Counts given by hand (--flops-dp, --bytes-mem ..., one option per column of the counts CSV) are the whole
    command's; a counts CSV's 'run' row is too, and its other rows are the command's phases of those names. The
    whole command's counts given both ways are refused. With --costs the program is placed on the roofline: its
    achieved GFLOP/s and intensity against the time roofline's attainable bound, the model's time against the
    measured, and the energies where a meter (or --emulate) measured one and the table has energy costs (else
    their fields are null with the reason, a dash in the table).
    """
    from archline.bench.measure.run import MeasureOptions
    from archline.bench.measure.run import measure as run_measure
    from archline.formats import measure_result as result

    if subtract_idle and baseline_s <= 0:
        raise BenchError("--subtract-idle needs an idle baseline: give --baseline-s (e.g. --baseline-s 5)")
    if not emulate and (busy_w is not None or idle_w is not None or tdp_w is not None):
        raise BenchError("--busy-w, --idle-w and --tdp-w set the emulated device's power: add --emulate")
    if tdp_w is not None:          # bench run's rule: busy = TDP, idle = its share of TDP
        from archline.bench.emulated.schedule import schedule_w

        busy_w, idle_w = schedule_w(platform, busy_w, idle_w, tdp_w)
    hand = {k: v for k, v in by_hand.items() if v is not None}
    if counts_tool is not None and counts_file is None:
        raise BenchError("--counts-tool names the tool that wrote --counts-file: add --counts-file (e.g. "
                         "--counts-file ncu.csv --counts-tool ncu)")
    if counters is not None and (counts_file is not None or hand):
        raise BenchError("give the counts one way: --counters (collected now), --counts-file, or by hand "
                         "(--flops-dp N ...)")
    if counts_tool is not None and hand:
        raise BenchError(f"the whole command's counts given twice: --counts-file {counts_file} "
                         f"(--counts-tool {counts_tool}) and {_flags(hand)}: give one")
    if figure is not None and costs is None:
        raise BenchError("--figure draws the placement on a cost table: add --costs")
    if costs is not None and counters is None and counts_file is None and not hand:
        raise BenchError("--costs places the program by its counts: give them by hand (--flops-dp N --bytes-mem "
                         "N ...), with --counts-file, or --counters perf|likwid")
    if costs is None and (hand or counts_file is not None):
        raise BenchError("counts given by hand or in a counts file (--counts-file) place the program on a roofline: "
                         "add --costs (a platform name or a cost table .json)")
    hooks = _Hooks(counters, counts_file, counts_tool, costs, figure, hand)
    outcome = run_measure(MeasureOptions(command=command, platform=platform, emulate=emulate, meter=meter, out=out,
                                         repeat=repeat, baseline_s=baseline_s, subtract_idle=subtract_idle,
                                         busy_w=busy_w, idle_w=idle_w, counters=hooks.counters_hook(),
                                         place=hooks.place_hook(),
                                         child_stdout_to_stderr=fmt == "json"))
    for w in [*result.warnings(outcome.doc), *_placement_warnings(outcome.doc.get("placement"))]:
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
                 figure: Path | None, hand: dict[str, float]) -> None:
        self.tool, self.costs, self.figure = counters, costs, figure
        self.collected: list[Any] = []     # the whole command's counts (the last is placed)
        self.phases: dict[str, Any] = {}   # a counts CSV's other rows: the command's phases by name
        self.platform: Any = None
        if costs is not None:      # a bad --costs is an error before the command runs, not after
            from archline.fit.analyses.placement import load_platform

            self.platform = load_platform(costs)
        if counts_file is not None and counts_tool is not None:
            from archline.formats.counters import read_collected

            self.collected.append(read_collected(counts_tool, counts_file))   # several kernels: summed
        if counts_file is not None and counts_tool is None:
            self._read_counts_csv(counts_file, hand)
        if hand:
            from archline.formats.counters import Counts

            self.collected.append(Counts("run", dict(hand), source=f"given by hand ({_flags(hand)})"))
        from archline.fit.analyses.choi.app_predict import check_counts

        for c in self.collected + list(self.phases.values()):    # refused now, not after the command ran
            check_counts(c.name, c.counts)
            if costs is not None and c.flops <= 0:
                raise BenchError(f"the counts of '{c.name}' ({c.source}) have no flops: the roofline's intensity "
                                 "needs --flops-sp or --flops-dp (a flops_sp or flops_dp column)")

    def _read_counts_csv(self, path: Path, hand: dict[str, float]) -> None:
        """archline's counts CSV, read by `archline predict`'s reader: 'run' is the whole command, the other
        rows its phases."""
        from archline.formats.app_counts import CountsFormatError, read_counts
        from archline.formats.counters import Counts

        try:
            rows = read_counts(path)
        except CountsFormatError as e:     # most likely a profiler export given without its tool
            raise CountsFormatError(f"{e} (a profiler export? name its tool: --counts-tool "
                                    "ncu|rocprof|perf|likwid)") from None
        for row in rows:
            if row.name in self.phases or (row.name == "run" and self.collected):
                raise BenchError(f"{path}: two rows named '{row.name}': give each phase's counts once")
            c = Counts(row.name, dict(row.counts), source=f"counts file {path}", notes=list(row.notes))
            if row.name != "run":
                self.phases[row.name] = c
            elif hand:
                raise BenchError(f"the whole command's counts given twice: {path} has a 'run' row and "
                                 f"{_flags(hand)} were given: give one (the file's other rows are its phases)")
            else:
                self.collected.append(c)

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
            from archline.formats.counters import read_collected

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
            runs = [r for r in doc.get("runs", []) if r.get("exit_code") == 0 and not r.get("signal")
                    and not r.get("interrupted")]
            out = self._place_windows(doc, "run", runs, self.collected[-1] if self.collected else None,
                                      self.figure)
            if not self.collected:
                out = {"reason": "no counts for the whole command: " + (
                    "see each run's counters.reason" if self.tool else "a 'run' row in the counts file, or "
                    "--flops-dp N ... by hand")}
            if self.phases:
                out["phases"] = [self._place_windows(
                    doc, name, [p for r in runs for p in r.get("phases", [])
                                if p["name"] == name or p["name"].endswith(f"/{name}")], c, None)
                    for name, c in self.phases.items()]
            return out

        return place

    def _place_windows(self, doc: dict[str, Any], name: str, windows: list[dict[str, Any]], counts: Any,
                       figure: Path | None) -> dict[str, Any]:
        """The windows of one run or phase (over the repeats: mean time and energy) placed by their counts."""
        import statistics

        from archline.fit.analyses.placement import place_program
        from archline.model.errors import ArchlineFitError

        if counts is None:
            return {"name": name, "reason": "no counts"}
        if not windows:
            return {"name": name, "reason": f"no completed run marked a phase '{name}'" if name != "run"
                    else "no run of the command completed (exit code 0, not interrupted)"}
        if any(w.get("widened_from") for w in windows):
            return {"name": name, "reason": "a run was shorter than the meter's sensor can measure: its energy is "
                                            "a widened window's, not the program's alone (make it last longer)"}
        energies = [w.get("energy_j") for w in windows]
        has_energy = all(isinstance(e, (int, float)) for e in energies)
        try:
            p = place_program(self.platform, counts, statistics.fmean(w["time_s"] for w in windows),
                              statistics.fmean(energies) if has_energy else None, figure,  # type: ignore[arg-type]
                              measured_energy_err_j=statistics.fmean(w.get("energy_err_j") or 0.0 for w in windows)
                              if has_energy else 0.0, emulated=bool(doc.get("emulated")),
                              energy_reason=None if has_energy else str(doc.get("reason") or "no meter"))
        except ArchlineFitError as e:       # measured all the same: the placement says why it was not made
            return {"name": name, "reason": str(e)}
        d: dict[str, Any] = p.as_dict()
        if doc.get("energy_source"):
            d["energy_source"] = doc["energy_source"]
        return d


def _flags(hand: dict[str, float]) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v:g}" for k, v in hand.items())


def _placement_warnings(pl: dict[str, Any] | None) -> list[str]:
    """A placement (or phase) measured faster than its roofline allows: the counts or the table are wrong; a
    figure asked for and not drawn (the costs have no energy)."""
    if not pl:
        return []
    out = [n for n in pl.get("notes", []) if n.startswith("no figure drawn")]     # --figure asked, none made
    for p in [pl, *pl.get("phases", [])]:
        if p.get("above_roofline"):
            label = "the command" if p is pl else f"phase '{p['name']}'"
            out += [f"{label}: {n}" for n in p.get("notes", []) if n.startswith("measured faster")]
    return out


def _placement_text(pl: dict[str, Any]) -> str:
    lines = [_placed_text("placement", pl, None)]
    lines += [_placed_text(f"  phase '{p['name']}'", p, pl.get("energy_reason")) for p in pl.get("phases", [])]
    return "\n".join(lines)


def _placed_text(label: str, pl: dict[str, Any], said: str | None) -> str:
    """One placement as text; ``said``: the reason the lines above gave already (not repeated)."""
    if "reason" in pl:
        return f"{label}: not made: {pl['reason']}"
    m, pr, d = pl["measured"], pl["predicted"], pl["difference"]
    intensity = "inf" if pl["intensity_flop_per_byte"] is None else format(pl["intensity_flop_per_byte"], ".3g")
    attain = pl["attainable_gflop_per_s"]
    share = f" ({100 * pl['achieved_gflop_per_s'] / attain:.3g}% of it)" if attain else ""
    tag = " (emulated)" if pl["emulated"] else ""
    mixed = (f" = {pl['flops_sp']:.4g} sp + {pl['flops_dp']:.4g} dp, each at its own rate"
             if pl.get("precision") == "sp+dp" else "")
    head = (f"{label}{tag} on {pl['platform']} ({pl['precision']}, {pl['flops']:.4g} flops{mixed}, "
            f"{pl['bytes_mem']:.4g} DRAM bytes, intensity {intensity} flop/B):\n"
            f"    time:   measured {m['time_s']:.4g} s, {pl['achieved_gflop_per_s']:.4g} GFLOP/s achieved; "
            f"roofline {pr['model_time_s']:.4g} s, {attain or float('nan'):.4g} GFLOP/s attainable{share}")
    if m["energy_j"] is None or pr["energy_j"] is None:
        got = f"measured {m['energy_j']:.4g} J, " if m["energy_j"] is not None else "measured -, "
        err = "" if pr.get("energy_err_j") is None else f" +- {pr['energy_err_j']:.2g}"
        got += f"predicted {pr['energy_j']:.4g}{err} J" if pr["energy_j"] is not None else "predicted -"
        why = "as above" if pl["energy_reason"] == said else pl["energy_reason"]
        energy = f"    energy: {got} (note: {why})"
    else:
        err = "" if pr.get("energy_err_j") is None else f" +- {pr['energy_err_j']:.2g}"
        within = d.get("within")
        tail = "" if within is None else (" (within the uncertainty)" if within else " (OUTSIDE the uncertainty)")
        energy = (f"    energy: measured {m['energy_j']:.4g} J, predicted {pr['energy_j']:.4g}{err} J, difference "
                  f"{d['energy_j']:+.4g} J{tail}")
        if pl.get("energy_source"):
            energy += f" ({pl['energy_source']})"
    fig = f"\n    figure {pl['figure']}" if pl.get("figure") else ""
    # every note, as the JSON has them (the counts' own: multiplexing, the tool's measured energy ...)
    notes = "".join(f"\n    note: {n}" for n in pl.get("notes", []) if n != pl.get("energy_reason"))
    return head + "\n" + energy + fig + notes
