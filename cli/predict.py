"""``archline predict``: an application's energy and time from its counts and a cost table (S1 Ch. 6)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from archline.cli.output import echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, OutPath
from archline.common.outputs import show


@click.command("predict")
@click.argument("counts", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--counters", "counters", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="hardware counters exported by a profiler (say which with --tool)")
@click.option("--tool", type=click.Choice(["ncu", "rocprof", "perf", "likwid"]),
              help="the profiler that wrote --counters: ncu --csv (details, --page raw or --print-summary "
                   "per-kernel), rocprof results.csv, rocprofv2 CSV, rocprofv3 counter_collection.csv or "
                   "omniperf pmc_perf.csv, perf stat -x, , likwid-perfctr -O (docs/counters.md)")
@click.option("--costs", required=True, metavar="COSTS",
              help="cost table (.json from archline fit), profile (.toml), shipped platform name, localhost, or an "
                   "ERT roofline.json (its time constants only: no energy)")
@format_option
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="also draw the breakdown as a stacked bar chart")
def predict(counts: Path | None, counters: Path | None, tool: str | None, costs: str, fmt: str,
            plot_path: Path | None) -> None:
    """Energy and time of the application(s) counted in COUNTS, term by term.

    \b
    E = sum_i N_i*eps_i + pi0*T   (S1 Ch. 6; docs/model.md). T is the measured time_s when the
    counts give it, else the model time: each count at its peak rate, overlapped (docs/model.md §3),
    max(W_sp*tau_flop_sp + W_dp*tau_flop_dp, W_int*tau_int, Q*tau_mem, Q_L3*tau_l3 .. Q_L1*tau_l1,
    Q_shared*tau_shared, N_rand*tau_rand); a count whose tau the table lacks is left out, said in a note.
    A table without an energy cost the counts need gives the time, and says which cost is missing.

    \b
    COUNTS is a CSV with one row per application or kernel and columns named as result rows:
      name,time_s,flops_sp,flops_dp,int_ops,bytes_mem,bytes_l3,bytes_l2,bytes_l1,bytes_shared,rand_accesses
    (any subset; core_mhz,mem_mhz or core_v,mem_v pick a DVFS setting), or an nvprof --csv --metrics export,
    or hardware counters read by the thesis's recipe (§6.2): an nvprof --csv --events export, or columns named
    by the counters (name,time_s,l1_global_load_hit,l1_shared_load_transactions,l2_subp0_read_l1_hit_sectors,
    ...,fb_subp0_read_sectors,fb_subp1_read_sectors,flop_count_sp_fma,inst_integer). L1 hits count 128 B,
    L2 and DRAM sectors 32 B; each byte is charged once, at the level that served it.

    \b
    \b
    --counters FILE --tool T reads today's profilers instead (docs/counters.md): Nsight Compute (ncu --csv:
    details page with gpu__time_duration or the Duration section metric, --page raw, --print-summary
    per-kernel), rocprof (v1 results.csv, rocprofv2, rocprofv3 counter_collection.csv, omniperf/rocprof-compute
    pmc_perf.csv), perf stat -x, and likwid-perfctr -O; each kernel, region or program is one row, with the
    tool's notes (multipliers, multiplexing, what was not counted) under it.

    \b
    Example:
      archline predict fmm_counts.csv --costs gtx580 --plot fmm.png
      archline predict nvprof-events.csv --costs jetson-dvfs.json --format json
      archline predict --counters daxpy-ncu.csv --tool ncu --costs gtx580
    """
    from archline.fit.analyses.choi import app_predict as ap
    from archline.fit.figure_layout import check_figure_format
    from archline.formats.platforms.profiles import load_platform
    from archline.model.hierarchy import TIME_MODEL

    if plot_path is not None:
        check_figure_format(plot_path)
    if (counts is None) == (counters is None):
        raise click.UsageError("give a counts file or --counters FILE --tool TOOL (one of them)")
    if (counters is None) != (tool is None):
        raise click.UsageError("--counters and --tool go together: which profiler wrote the file?")
    platform = load_platform(costs)
    if counters is not None and tool is not None:
        from archline.fit.analyses.placement import counts_rows
        from archline.formats.counters import read_counters

        rows = counts_rows(read_counters(tool, counters))
    else:
        assert counts is not None
        from archline.formats.app_counts import read_counts

        rows = read_counts(counts)
    no_energy = ap.time_only_reason(platform)
    if plot_path is not None and no_energy is not None and not ap.is_dvfs(platform):
        raise click.BadParameter(f"the chart shows energy per term, and {no_energy}; leave --plot out (the table "
                                 "gives the time)", ctx=click.get_current_context(silent=True), param_hint="'--plot'")
    preds = ap.predict(rows, platform)
    if plot_path is not None:
        ap.plot_breakdown(preds, plot_path, title=f"predicted energy on {platform.name}"
                          + (" (emulated)" if platform.emulated else ""))
    if fmt == "json":
        click.echo(json.dumps({"platform": platform.name, "emulated": platform.emulated,
                               "source": "S1 Ch. 6",
                               "predictions": [p.as_dict() for p in preds],
                               **files_json(plot_path, f"predicted energy per term of each program on "
                                                       f"{platform.name}")}, indent=2))
        return
    terms = [t for t in [*ap.TERMS, ap.CONSTANT_TERM] if any(t in p.terms_j for p in preds)]
    tag = " (emulated)" if platform.emulated else ""
    click.echo(f"predicted energy on {platform.name}{tag}: E = sum N_i*eps_i + pi0*T (S1 Ch. 6)")

    def num(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    from archline.formats.counters.kernels import short_labels

    labels = short_labels([p.name for p in preds])         # a CUTLASS name runs to thousands of characters
    echo_table(["name", "E (J)", "T (s)", "P (W)", *terms],
               [[label, num(p.energy_j, ".5g"), f"{p.time_s:.4g}" + ("" if p.time_source == "measured" else "*"),
                 num(p.power_w, ".4g"),
                 *[f"{100 * p.terms_j[t] / p.energy_j if t in p.terms_j and p.energy_j else 0:.1f}%" for t in terms]]
                for label, p in zip(labels, preds, strict=True)])
    # notes true of every row once; the others under the row they belong to
    common = [n for n in dict.fromkeys(n for p in preds for n in p.notes) if all(n in p.notes for p in preds)]
    for note in common:
        click.echo(f"note: {note}")
    for label, p in zip(labels, preds, strict=True):
        own = [n for n in p.notes if n not in common]
        if own:
            click.echo(f"{label}:")
            for note in own:
                click.echo(f"  note: {note}")
    for note in dict.fromkeys(n for p in preds for n in p.notes):
        if note.startswith("measured faster"):          # as archline measure warns of it
            click.echo(f"archline: warning: {note}", err=True)
    for why in dict.fromkeys(p.energy_missing for p in preds if p.energy_j is None):
        click.echo(f"note: E and P: - ({why})")
    if any(p.time_source == "model" for p in preds):
        click.echo(f"* time from the model, {TIME_MODEL} (docs/model.md §3): no time_s in the counts")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
