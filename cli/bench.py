"""archline bench list|run|sweep"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from archline.cli.complete import backend_names, kernel_names, platform_names, profile_meters
from archline.cli.output import echo_files, echo_json, echo_table, format_option, format_options
from archline.cli.params import NON_NEGATIVE, POSITIVE, BackendOption, OutPath
from archline.common.exits import EXIT_INTERRUPTED


@click.group()
def bench() -> None:
    """Run the kernels: intensity sweeps, cache bandwidth, pointer chase, integer ops.

    \b
    archline bench list                          what this machine can run, and why not the rest
    archline bench run --platform localhost --backend cpu_asm --kernel intensity --precision dp --out results/
    archline bench run --kernel cache --quick    L1/L2/L3/memory load, rmw and store bandwidth
    archline bench run --kernel chase --quick    pointer-chase latency per level (ns and cycles per access)
    archline bench run --platform gtx580 --emulate   the GTX 580 profile on the emulated device + PowerMon 2
    archline bench sweep nightly.toml            cron: locked, resumable, logged (docs/cron.md)
    """


@bench.command("list")
@format_option
def list_cmd(fmt: str) -> None:
    """Back ends and kernel variants, each with whether it runs here and why (not).

    \b
    Examples:
      archline bench list
      archline bench list --format json
    """
    from archline.bench.errors import BenchError
    from archline.bench.registry import backends

    out: list[dict[str, Any]] = []
    for name, info in backends().items():
        try:
            be = info.open()
            ok, why = be.availability()
            variants = be.describe() if ok or info.describe_when_unusable else []
        except (BenchError, ImportError) as e:
            ok, why, variants = False, str(e), []
        out.append({"backend": name, "available": ok, "reason": why, "kernels": variants})
    if fmt == "json":
        echo_json(out)
        return
    echo_table(("backend", "runs here", "why (not)"), [(b["backend"], _yes(b["available"]), b["reason"]) for b in out])
    kernels = [(b["backend"], k["name"], k.get("isa", ""), k["precision"], k["level"], _yes(k["available"]),
                k.get("flops_per_elem", ""), k.get("bytes_per_elem", ""), k["reason"])
               for b in out for k in b["kernels"]]
    if kernels:
        click.echo()
        echo_table(("backend", "kernel", "isa", "precision", "level", "runs here", "flop/elem", "B/elem",
                    "why (not)"), kernels)


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


@bench.command("run")
@click.option("--platform", default="localhost", show_default=True, shell_complete=platform_names,
              help="Platform profile (name or .toml); the rows' platform column is the profile's name.")
@click.option("--backend", default=None, cls=BackendOption, shell_complete=backend_names,
              help="{backends} (`archline bench list` says which run here; default: the profile's [bench] "
                   "backend); emulated with --emulate.")
@click.option("--kernel", default=None, cls=BackendOption, shell_complete=kernel_names,
              help="intensity (default), cache, chase or int; {ceilings} also 'ceilings' (S4's optimisation "
                   "ceilings: ceil_flop and ceil_mem; plot them with `archline plot R.csv --kind ceilings`); a "
                   "back end runs the kernels its registry entry declares (`archline bench list`).")
@click.option("--precision", default=None,
              help="sp, dp or int32 (default on every path: the profile's [bench] precisions for intensity, "
                   "int32 for int, dp for the others).")
@click.option("--quick", is_flag=True,
              help="cpu_asm with no --kernel, --precision, --store or --working-set: the whole roofline in 18 points "
                   "(SP and DP peaks, L1, L2, L3, DRAM; about 20 s on 2 cores); otherwise smaller sweeps and shorter "
                   "regions (memory level: 8x the last cache).")
@click.option("--reps", type=int, default=None, help="Repetitions per timed region (default: sized by the meter "
                                                     "and --min-time, at least the profile's [bench] reps).")
@click.option("--min-time", "min_time_s", type=float, default=None,
              help="Seconds each timed region lasts at least (default 0.1, 0.03 with --quick).")
@click.option("--isa", default=None, help="cpu_asm: force an ISA variant (avx512, avx2, sse2, neon).")
@click.option("--threads", default=None, metavar="N[,N...]",
              help="cpu_asm: threads on the first N cores, one per core (default: every core); a list sweeps the "
                   "thread counts (--threads 1,2,4). Recorded in each row's threads column.")
@click.option("--cpus", default=None, metavar="LIST",
              help="cpu_asm: pin one thread to each of these logical CPUs, a plain list as likwid and taskset "
                   "write one (0-3, 0,2,4); likwid's domains (S0:, N:) are not taken.")
@click.option("--working-set", "working_set", default=None,
              help="Override every point's working set, bytes with optional K/M/G suffix (e.g. 64M).")
@click.option("--out", "out_dir", type=OutPath(file_okay=False, dir_okay=True, path_type=Path), default=Path("results"),
              show_default=True, help="Directory for <run_id>.csv and its traces.")
@click.option("--emulate", is_flag=True,
              help="Run the platform's profile on the emulated device and an emulated meter (--meter's; rows say "
                   "emulated and name it).")
@click.option("--time-compression", type=float, default=None,
              help="--emulate: device seconds per host second (default: the profile's, else 50).")
@click.option("--meter", "meter_name", default=None, shell_complete=profile_meters,
              help="Which of the profile's [[meters]] (default: the first; with --emulate the first one with an "
                   "emulator: an nvml or rapl meter named with --emulate is refused).")
@click.option("--power-cap", "power_caps_w", type=float, multiple=True,
              help="Power cap in watts (repeat to sweep caps); NVML/RAPL on hardware, the model with --emulate.")
@click.option("--busy-w", type=NON_NEGATIVE, default=None,
              help="--emulate on a platform with no power model (localhost before a fit): the power inside each "
                   "timed region; the energy is this schedule x the measured time, not the program's.")
@click.option("--idle-w", type=NON_NEGATIVE, default=None,
              help="--emulate, no power model: the power outside the timed regions (with --busy-w).")
@click.option("--tdp-w", type=POSITIVE, default=None,
              help="--emulate, no power model: instead of --busy-w/--idle-w, busy = TDP and idle = 0.25 x TDP.")
@click.option("--all-kernels", is_flag=True, help="Every kernel the profile's [bench] lists.")
@click.option("--store", type=click.Choice(["nt", "none"]), default=None,
              help="cpu_asm intensity traffic. nt (default): each trip also streams one result vector per two "
                   "loaded past the caches, as STREAM/likwid's stream_mem do; bytes_mem counts reads and writes, "
                   "the sweep starts at the triad's 1/12 flop/B and reaches the machine's streaming bandwidth. "
                   "none: read-only, the papers' polynomial stream, from 0.25 flop/B (per core a read-only "
                   "stream stops short of peak bandwidth).")
@click.option("--device", default=None,
              help="OpenCL: 'P:D' indices or a name substring (default: the first device); CUDA: device index.")
@click.option("--max-lost", type=float, default=None,
              help="Share of a region's meter samples that may be lost (disconnect, stall, overflow) before the "
                   "point fails and is retried by a resumed sweep [default: 0.01]; every loss is in the row.")
@format_options(help="The closing summary: a table on stderr, or one JSON document (SI-prefixed units in the keys, "
                     "the files written) alone on stdout.")
def run_cmd(platform: str, backend: str | None, kernel: str | None, precision: str | None, quick: bool,
            reps: int | None, min_time_s: float | None, isa: str | None, threads: str | None, cpus: str | None,
            working_set: str | None, out_dir: Path,
            emulate: bool, time_compression: float | None, meter_name: str | None, power_caps_w: tuple[float, ...],
            busy_w: float | None, idle_w: float | None, tdp_w: float | None,
            all_kernels: bool, store: str | None, device: str | None, max_lost: float | None, fmt: str) -> None:
    """Run a kernel's sweep and write archline.results/1 rows.

    \b
    Every point runs in named windows on the profile's meter (warm-up, >= 200 samples per window, early stop
    on a tight CI, idle power before and after); without a meter the same windows carry time only and every
    row says why. An option that does not apply to the path a run takes is refused, saying why.

    \b
    Examples:
      archline bench run --platform gtx580 --emulate --out results/emu     the whole GTX 580 sweep, emulated
      archline bench run --platform localhost --quick                       the main job: this CPU's kernels, quick
      archline bench run --platform localhost --emulate --tdp-w 65 --quick  no meter: energy = a TDP schedule x time
    """
    from archline.bench.config.options import RunOptions
    from archline.bench.errors import PointsFailedError
    from archline.bench.run.session import run_once

    opts = RunOptions.from_cli(
        platform=platform, emulate=emulate, backend=backend, kernels=None if kernel is None else (kernel,),
        precisions=None if precision is None else (precision,), all_kernels=all_kernels, quick=quick, reps=reps,
        min_time_s=min_time_s, isa=isa, threads=_int_list(threads, "--threads"), cpus=cpus,
        working_set_bytes=working_set, store=store, device=device,
        time_compression=time_compression, meter=meter_name, power_caps_w=power_caps_w or None, max_lost=max_lost,
        busy_w=busy_w, idle_w=idle_w, tdp_w=tdp_w)
    out = run_once(opts, out_dir)
    if fmt == "table" and out.rows:
        click.echo(str(out.results))
    click.echo(f"{out.rows} rows in {out.wall_s:.1f} s; {out.session_note}", err=True)
    files: list[tuple[Path, str]] = [(out.results, "archline.results/1 rows, one per point")] if out.rows else []
    run_files = out.files
    assert run_files is not None
    ert = run_files.roofline_json
    # every row failed its checksum: no figure to give, so no roofline.json and no plot (exit 3 below says why)
    measured = out.rows > out.n_bad_checksum
    summ = run_files.write_extra(ert, out.rows, lambda: _summary(out.results, ert)) if measured else None
    if summ is not None:
        files.append((ert, "ERT roofline.json of this run: peak GFLOP/s and GB/s per level"))
    if measured and out.precisions:
        from archline.bench.run.summary import plot_roof
        from archline.fit.plots.inputs import plot_results
        from archline.model.errors import ArchlineFitError

        for prec in out.precisions:      # every precision the run measured: one figure each
            fig = run_files.figure(prec)
            roof, notes = plot_roof(summ, prec) if summ is not None else (None, [])
            try:   # with energy: roofline, arch line and power line; time only: the roofline
                png = run_files.write_extra(fig, out.rows, lambda fig=fig, prec=prec, roof=roof, notes=notes:
                                            plot_results([out.results], fig, prec, roof=roof, notes=notes))
                shows = f"{prec.upper()} roofline, arch line and power line of the measured points"
            except ArchlineFitError:
                png = run_files.write_extra(fig, out.rows, lambda fig=fig, prec=prec, roof=roof, notes=notes:
                                            plot_results([out.results], fig, prec, kinds=("roofline",), roof=roof,
                                                         notes=notes))
                shows = f"{prec.upper()} roofline of the measured points (time only)"
            files.append((png, shows))
            click.echo(f"roofline plot: {png}", err=True)
    if fmt == "json":
        echo_files(fmt, files, rows=out.rows, wall_s=out.wall_s, session=out.session_note, failed=out.failed,
                   bad_checksums=out.n_bad_checksum, results=str(out.results) if out.rows else None,
                   roofline_json=str(ert) if summ is not None else None, **(summ or {}))
    elif summ is not None:
        from archline.bench.run.summary import summary_rows

        echo_table(("quantity", "value", "unit", "basis"), summary_rows(summ), err=True)
        click.echo(f"ERT roofline.json: {ert}", err=True)
        if summ.get("host_roofline_json"):
            click.echo(f"kept as platform localhost's roofline: {summ['host_roofline_json']}", err=True)
    if out.failed:
        kept = "the other rows are kept" if out.rows else "no row was written"
        raise PointsFailedError(f"{out.failed} point(s) failed (see the messages above); {kept}")
    if out.n_bad_checksum:
        raise PointsFailedError(f"{out.n_bad_checksum} point(s) failed their checksum; rows kept with "
                                "checksum_ok=false and left out of the plot, peaks and fits")


def _summary(results: Path, ert_path: Path) -> dict[str, Any]:
    """The closing summary (peaks, bandwidths, balance, checksums); writes <run_id>.roofline.json (ERT's layout)
    and, after a measured localhost run, its copy where `localhost` is read as a platform."""
    from archline.bench.run.export import export_roofline, write_host_roofline
    from archline.formats.results_file import ResultsFile

    with ResultsFile.open(results) as rf:
        rows = list(rf.rows())
    summ = export_roofline(ert_path, rows, [results.name])
    host = write_host_roofline(summ, rows, results)
    return {**summ, "host_roofline_json": None if host is None else str(host)}


@bench.command("export-ert")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out", type=OutPath(dir_okay=False, path_type=Path), required=True,
              help="The roofline.json to write (atomic; never one of the inputs).")
@format_options(help="table: the path written; json: one JSON document with the file, the peaks and bandwidths")
def export_ert_cmd(results: tuple[Path, ...], out: Path, fmt: str) -> None:
    """Write the Empirical Roofline Toolkit's roofline.json (peak GFLOP/s, GB/s per level) from results files.

    \b
    RESULTS are archline.results/1 CSV or Parquet files, checked as
    `archline fit` checks them. Figures NOT TRUSTED are warnings on
    stderr; with --out /dev/stdout the file is all of stdout.

    \b
    As ERT writes it: "empirical" (ceilings named "FP64 GFLOPs", "FP32 GFLOPs",
    levels L1, L2, L3, DRAM in that order) and "spec" (the nominal peaks of
    the rows' platform profile; empty lists where archline has none). Emulated
    rows: every ceiling's name ends in " (emulated)", which ERT's plots show.
    The other way, an ERT roofline.json is a platform for model and plot:
      archline model show Results.mymachine/roofline.json

    \b
    Examples:
      archline bench export-ert results/*.csv --out roofline.json
      archline bench export-ert results/*.csv --out roofline.json --format json
    """
    from archline.bench.run.export import export_roofline, export_warnings, read_rows, warning
    from archline.formats.ert_roofline import check_ert_path
    from archline.powermon.record.output_files import writes_stdout

    check_ert_path(out)
    err = writes_stdout(out)      # the file is on stdout: the report goes to stderr, never into the JSON
    rows = read_rows(results)
    summ = export_roofline(out, rows, list(dict.fromkeys(r.name for r in results)), require_figure=True)
    for line in export_warnings(summ, rows):
        warning(line)
    if fmt == "json":
        import contextlib
        import sys

        with contextlib.redirect_stdout(sys.stderr) if err else contextlib.nullcontext():
            echo_files(fmt, [(out, "ERT roofline.json: peak GFLOP/s per precision and GB/s per memory level")],
                       **summ)
        return
    click.echo(str(out), err=err)


@bench.command("sweep")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@format_options(help="table: the outcome as a line on stderr; json: one JSON document (points done, written, "
                     "failed, remaining, exit code) alone on stdout; progress stays on stderr")
@click.pass_context
def sweep_cmd(ctx: click.Context, config: Path, fmt: str) -> None:
    """The cron entry point: run or resume CONFIG.toml's sweep; locked, logged, atomic.

    \b
    Exit codes: 0 done, 2 bad config, 3 some points failed (rerun retries them), 4 meter missing,
    5 stopped at max_points (rerun resumes), 75 another sweep holds the lock, 130 interrupted.

    \b
    Examples:
      archline bench sweep nightly.toml
      archline bench sweep nightly.toml --format json

    Example crontab and systemd timer: docs/cron.md.
    """
    import sys
    from dataclasses import asdict

    from archline.bench.run.sweep import run_sweep

    res = run_sweep(config, stream=sys.stderr)
    click.echo(f"archline: {res.message}" if res.exit_code == EXIT_INTERRUPTED else res.message, err=True)
    if fmt == "json":
        echo_json({"config": os.fsdecode(config), **asdict(res)})
    ctx.exit(res.exit_code)


def _int_list(text: str | None, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"'{text}' is not a list of integers (e.g. 1,2,4)", param_hint=what) from None
