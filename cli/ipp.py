"""``archline ipp``: Hong & Kim's integrated power and performance model of a GPU (ISCA 2010)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, POSITIVE, OutPath
from archline.common.outputs import show

_gpu_option = click.option("--gpu", "gpu_name", default="gtx280", show_default=True, metavar="NAME|GPU.toml",
                           help="GPU parameter file (print the shipped one to copy: archline ipp gpu gtx280)")
_kernel_option = click.option("--kernel", "-k", "only", multiple=True, metavar="NAME",
                              help="only these kernels of the file (repeatable)")
_plot_option = click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path),
                            metavar="FIG.png", help="also draw a figure")
_readings = [click.option("--cond1", type=click.Choice(["and", "or"]), default="and", show_default=True,
                          help="eq.34 condition (1): 'and' = MWP == N and CWP == N (Case 1 of eq.24); 'or' as printed"),
             click.option("--cond2", type=click.Choice([">=", ">"]), default=">=", show_default=True,
                          help="eq.34 condition (2): MWP >= CWP (the paper on Sepia, §6.4) or MWP > CWP as printed")]


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.5g}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _with_readings(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(_readings):
        f = opt(f)
    return f


def _load(gpu_name: str, kernels: str | None, only: tuple[str, ...]) -> tuple[Any, list[Any]]:
    from archline.fit.analyses.hongkim.files import load_gpu, load_kernels
    from archline.fit.analyses.hongkim.ipp import IppInputError
    from archline.fit.analyses.hongkim.report import NO_ACCESS

    gpu = load_gpu(gpu_name)
    ks = [NO_ACCESS] if kernels is None else load_kernels(kernels, gpu)
    if only:
        missing = [n for n in only if n not in {k.name for k in ks}]
        if missing:
            raise IppInputError(f"no kernel '{missing[0]}' in {kernels} (has: {', '.join(k.name for k in ks)})")
        ks = [k for k in ks if k.name in only]
    return gpu, ks


@click.group()
def ipp() -> None:
    """Hong & Kim's IPP model: GPU power per unit, temperature, timing, perf/W and the optimal SM count.

    \b
    Inputs: a GPU parameter file (--gpu; the GTX 280 of the paper is shipped) and a kernel file:
    'table4' (the 11 kernels of the paper's Table 4: MWP, CWP, bandwidth, intensity) or your own
    .toml with per-warp instruction counts and timing-model inputs (see 'archline ipp example').

    \b
    Examples:
      archline ipp power                           no access at all: 107.39 W on the GTX 280
      archline ipp optimal table4                  eq.34 for the 11 kernels (20 SMs for the bandwidth-bound)
      archline ipp sweep table4 -k Dotp -k Nmat -k Cmem --plot fig13.png
      archline ipp savings table4                  energy saved on the optimal SM count (paper §6.4)
      archline ipp example > mine.toml && archline ipp power mine.toml --plot power.png

    Where the paper contradicts itself and which reading archline takes: docs/analyses.md.
    """


@ipp.command("power")
@click.argument("kernels", required=False, metavar="[KERNELS]")
@_gpu_option
@_kernel_option
@click.option("--active-sms", type=click.IntRange(min=1), default=None, help="active SMs (default: all; eq.14-16)")
@_plot_option
@format_option
def power_cmd(kernels: str | None, gpu_name: str, only: tuple[str, ...], active_sms: int | None,
              plot_path: Path | None, fmt: str) -> None:
    """Runtime and GPU power with the per-unit breakdown (eq.5-16; predicted cycles: eq.24-27).

    \b
    Without KERNELS: a GPU with no access at all, which draws only RP_Const_SM and the idle power.
    Examples:
      archline ipp power
      archline ipp power mine.toml --active-sms 20 --format json
    """
    from archline.fit.analyses.hongkim.report import breakdown_w, kernel_power

    gpu, ks = _load(gpu_name, kernels, only)
    powers = [kernel_power(k, gpu, active_sms) for k in ks]
    if plot_path is not None:
        from archline.fit.analyses.hongkim.plots import plot_power
        plot_power(powers, plot_path, gpu.name)
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, eq.5-16, 24-27",
                   "kernels": [p.as_dict() for p in powers],
                   **files_json(plot_path, f"IPP power per unit of each kernel on {gpu.name} (S3 eq.5-16)")})
        return
    shares = [breakdown_w(p.power) for p in powers]
    units = [u for u in dict.fromkeys(u for b in shares for u in b) if any(b.get(u) for b in shares)]
    click.echo(f"IPP power on {gpu.name} (Hong & Kim eq.5-16), W; units that draw nothing are left out")
    rows = [["active SMs", *[str(p.power.active_sms) for p in powers]],
            ["cycles from", *[p.cycles_source for p in powers]],
            *[[u, *[f"{b.get(u, 0.0):.2f}" for b in shares]] for u in units],
            ["runtime power", *[f"{p.power.runtime_power_w:.2f}" for p in powers]],
            ["GPU power", *[f"{p.power.gpu_power_w:.2f}" for p in powers]]]
    echo_table(["", *[p.kernel for p in powers]], rows)
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")


@ipp.command("temperature")
@click.argument("kernels", required=False, metavar="[KERNELS]")
@_gpu_option
@_kernel_option
@click.option("--time-s", "times", default="0,10,60,600,6000", show_default=True, metavar="LIST",
              help="times since a cold start (s), comma-separated")
@_plot_option
@format_option
def temperature_cmd(kernels: str | None, gpu_name: str, only: tuple[str, ...], times: str, plot_path: Path | None,
                    fmt: str) -> None:
    """Peak chip temperature and the static power it adds over time (eq.17-23).

    \b
    eq.19 is read as the rise above the idle temperature (57 °C on the GTX 280); the static power grows by
    sigma = 10/22 W per °C (eq.22).
    Example:
      archline ipp temperature mine.toml --time-s 0,60,600 --plot temp.png
    """
    from archline.fit.analyses.hongkim.ipp import IppInputError
    from archline.fit.analyses.hongkim.report import temperature

    try:
        ts = [float(x) for x in times.split(",") if x.strip()]
    except ValueError:
        raise IppInputError(f"--time-s '{times}' is not a comma-separated list of seconds") from None
    if not ts or any(t < 0 for t in ts):
        raise IppInputError(f"--time-s '{times}': give non-negative seconds")
    gpu, ks = _load(gpu_name, kernels, only)
    temps = [temperature(k, gpu, ts) for k in ks]
    if plot_path is not None:
        import numpy as np

        from archline.fit.analyses.hongkim.plots import plot_temperature
        grid = [float(x) for x in np.geomspace(1.0, max(max(ts), 10 * gpu.rc_rise_s), 200)]
        plot_temperature([temperature(k, gpu, grid) for k in ks], plot_path, gpu.name)
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, eq.17-23", "kernels": temps,
                   **files_json(plot_path, f"temperature and static power over time on {gpu.name} (S3 eq.17-23)")})
        return
    for t in temps:
        click.echo(f"{t['kernel']}: runtime power {t['runtime_power0_w']:.2f} W cold, MemAccess_intensity "
                   f"{t['mem_access_intensity']:.4g}; peak {t['max_temp_degc']:.1f} °C "
                   f"(+{t['max_temp_rise_degc']:.1f}), up to +{t['max_static_power_increase_w']:.2f} W static")
        echo_table(["time (s)", "temp (°C)", "+static (W)", "GPU (W)"],
                   [[f"{r['time_s']:g}", f"{r['temperature_degc']:.1f}", f"{r['static_power_increase_w']:.2f}",
                     f"{r['gpu_power_w']:.2f}"] for r in t["over_time"]])
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")


@ipp.command("timing")
@click.argument("kernels", metavar="KERNELS")
@_gpu_option
@_kernel_option
@click.option("--active-sms", type=click.IntRange(min=1), default=None, help="active SMs (default: all)")
@format_option
def timing_cmd(kernels: str, gpu_name: str, only: tuple[str, ...], active_sms: int | None, fmt: str) -> None:
    """MWP, CWP, the case of the timing model and the execution cycles (eq.24-26, 29-33).

    \b
    Case 1: MWP == CWP == N (too few warps); Case 2: CWP >= MWP or Comp > Mem (memory-bound, the only case
    that can be bandwidth-limited); Case 3: MWP > CWP (compute-bound).
    Examples:
      archline ipp timing mine.toml --active-sms 10
      archline ipp timing table4                  MWP and CWP as the paper prints them
    """
    from archline.fit.analyses.hongkim.report import timing

    gpu, ks = _load(gpu_name, kernels, only)
    rows = [timing(k, gpu, active_sms) for k in ks]
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, eq.24-33", "kernels": rows})
        return
    cols = [c for c in ("MWP_peak_BW", "Repw", "exec_cycles", "time_s") if any(c in r for r in rows)]
    echo_table(["kernel", "SMs", "MWP", "CWP", "case", *cols, "from"],
               [[r["kernel"], r["active_sms"], f"{r['MWP']:.5g}", f"{r['CWP']:.5g}", r["case"],
                 *[f"{r[c]:.5g}" if c in r else "-" for c in cols], r["source"]] for r in rows])


@ipp.command("optimal")
@click.argument("kernels", metavar="KERNELS")
@_gpu_option
@_kernel_option
@_with_readings
@format_option
def optimal_cmd(kernels: str, gpu_name: str, only: tuple[str, ...], cond1: str, cond2: str, fmt: str) -> None:
    """The number of active SMs with the best perf/W (eq.34).

    \b
    All SMs if (1) MWP == N and CWP == N, or (2) MWP >= CWP, or (3) MWP < MWP_peak_BW; else
    Mem_Bandwidth/(BW_per_warp*N) = MWP_peak_BW(all SMs)*Num_SMs/N, rounded down.
    --cond1/--cond2 switch to eq.34 as printed (the paper contradicts itself; see the docs).
    Examples:
      archline ipp optimal table4
      archline ipp optimal table4 --cond1 or        every bandwidth-bound kernel then gets 30
    """
    from archline.fit.analyses.hongkim.report import mwp_cwp, optimal

    gpu, ks = _load(gpu_name, kernels, only)
    rows = []
    for k in ks:
        m, c, src = mwp_cwp(k, gpu)
        o = optimal(k, gpu, cond1, cond2)
        rows.append({"kernel": k.name, "MWP": m, "CWP": c, "N": k.get("n_warps"), "MWP_peak_BW": k.mwp_peak_bw(gpu),
                     "optimal_sms": o.active_sms, "condition": o.condition, "reason": o.reason,
                     "bandwidth_formula": o.exact, "mwp_cwp_from": src,
                     "bandwidth_gb_per_s": k.get("bandwidth_gb_per_s"), "bandwidth_limited": k.bandwidth_limited})
    if fmt == "json":
        echo_json({"gpu": gpu.name, "num_sms": gpu.num_sms, "cond1": cond1, "cond2": cond2,
                   "source": "Hong & Kim, ISCA 2010, eq.34", "kernels": rows})
        return
    click.echo(f"optimal active SMs on {gpu.name}, {gpu.num_sms} SMs (Hong & Kim eq.34; "
               f"cond1 {cond1}, cond2 {cond2})")
    labelled = any(r["bandwidth_limited"] is not None for r in rows)
    echo_table(["kernel", "MWP", "CWP", "N", "MWP_peak_BW", "SMs", "why",
                *(["file says", "GB/s"] if labelled else [])],
               [[r["kernel"], _num(r["MWP"]), _num(r["CWP"]), _num(r["N"]), _num(r["MWP_peak_BW"]),
                 r["optimal_sms"], r["reason"],
                 *([{True: "bandwidth limited", False: "not limited", None: "-"}[r["bandwidth_limited"]],
                    _num(r["bandwidth_gb_per_s"])] if labelled else [])] for r in rows])


def _sweeps(kernels: str, gpu_name: str, only: tuple[str, ...], cond1: str,
            cond2: str) -> tuple[Any, list[Any], dict[str, int], list[str]]:
    from archline.fit.analyses.hongkim.report import sweep_many

    gpu, ks = _load(gpu_name, kernels, only)
    return (gpu, *sweep_many(ks, gpu, cond1, cond2))


@ipp.command("sweep")
@click.argument("kernels", metavar="KERNELS")
@_gpu_option
@_kernel_option
@_with_readings
@click.option("--power", "which", type=click.Choice(["runtime", "runtime+idle", "gating"]), default="runtime",
              show_default=True, help="power in perf/W: runtime only, runtime + idle, or per-SM power gating")
@_plot_option
@format_option
def sweep_cmd(kernels: str, gpu_name: str, only: tuple[str, ...], cond1: str, cond2: str, which: str,
              plot_path: Path | None, fmt: str) -> None:
    """Performance and perf/W over 1..all active SMs (eq.28; the paper's Fig. 13 and 15).

    \b
    With only MWP, CWP and N (table4) the curves are relative to all SMs: their shape is what the paper's
    Table 4 determines. With instruction counts and timing inputs they are absolute.
    Example:
      archline ipp sweep table4 -k Dotp -k Madd -k Dmadd -k Mmul -k Nmat -k Cmem --plot fig13.png
    """
    gpu, sws, opt, skipped = _sweeps(kernels, gpu_name, only, cond1, cond2)
    for note in skipped:
        click.echo(f"archline: note: {note}", err=True)
    if plot_path is not None:
        from archline.fit.analyses.hongkim.plots import plot_sweeps
        plot_sweeps(sws, opt, plot_path, gpu.name, which)
    if fmt == "json":
        echo_json({"gpu": gpu.name, "power": which, "source": "Hong & Kim, ISCA 2010, eq.28, Fig. 13/15", "kernels": [
            {"kernel": s.kernel, "absolute": s.absolute, "active_sms": s.active_sms, "time": s.time,
             "perf": s.perf, "perf_per_watt": s.perf_per_watt(which), "best_perf_per_watt_sms": s.best(which),
             "ipp_optimal_sms": opt[s.kernel], "notes": s.notes} for s in sws], "skipped": skipped,
            **files_json(plot_path, f"performance and perf/W ({which}) against active SMs on {gpu.name} "
                                    "(S3 Fig. 13/15)")})
        return
    grid = [n for n in (1, 5, 10, 15, 20, 25, 30) if n <= gpu.num_sms]
    for s in sws:
        ppw = s.perf_per_watt(which)
        if not s.absolute:
            tag, scale_p, scale_w = "relative to all SMs", s.perf[-1], ppw[-1]
        elif s.time_unit == "cycles":
            tag, scale_p, scale_w = "warp instr/cycle; perf/W per W (no freq_hz in the GPU file)", 1.0, 1.0
        else:
            tag, scale_p, scale_w = "G warp instr/s; perf/W in G warp instr/J", 1e9, 1e9
        click.echo(f"{s.kernel}: best perf/W ({which}) at {s.best(which)} SMs; IPP eq.34: {opt[s.kernel]} [{tag}]")
        echo_table(["SMs", *[str(n) for n in grid]],
                   [["perf", *[f"{s.perf[n - 1] / scale_p:.3g}" for n in grid]],
                    ["perf/W", *[f"{ppw[n - 1] / scale_w:.3g}" for n in grid]]])
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")


@ipp.command("savings")
@click.argument("kernels", metavar="KERNELS")
@_gpu_option
@_kernel_option
@_with_readings
@click.option("--runtime-power-w", type=POSITIVE, default=None,
              help="the kernel's runtime power on all SMs, for Runtime+Idle when the file has no counts")
@format_option
def savings_cmd(kernels: str, gpu_name: str, only: tuple[str, ...], cond1: str, cond2: str,
                runtime_power_w: float | None, fmt: str) -> None:
    """Energy saved by running on IPP's optimal SM count instead of all SMs (the paper's §6.4, Fig. 17).

    \b
    Runtime: runtime power only; Runtime+Idle: with the idle power; Power gating: power linear in active
    SMs (30 SMs drawing 120 W is 4 W per SM).
    Example:
      archline ipp savings table4 -k Dotp -k Nmat
    """
    from archline.fit.analyses.hongkim.report import savings

    gpu, sws, opt, skipped = _sweeps(kernels, gpu_name, only, cond1, cond2)
    for note in skipped:
        click.echo(f"archline: note: {note}", err=True)
    rows = [{"kernel": s.kernel, **savings(s, opt[s.kernel], runtime_power_w, gpu.idle_power_w)} for s in sws]
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, §6.4.1-6.4.2", "kernels": rows,
                   "skipped": skipped})
        return
    echo_table(["kernel", "SMs", "T(n)/T(all)", "runtime", "runtime+idle", "power gating"],
               [[r["kernel"], r["active_sms"], f"{r['time_ratio']:.4f}", _pct(r["runtime"]), _pct(r["runtime+idle"]),
                 _pct(r["power_gating"])] for r in rows])
    if any(r["runtime+idle"] is None for r in rows):
        click.echo("runtime+idle needs the kernel's runtime power: give counts in the file or --runtime-power-w")


@ipp.command("ptx")
@click.argument("ptx_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--trips", type=POSITIVE, default=1.0, show_default=True,
              help="multiply the static counts (exact only for a straight-line loop body run TRIPS times)")
@format_option
def ptx_cmd(ptx_file: Path, trips: float, fmt: str) -> None:
    """Count the instructions of a PTX file by the paper's Table 1 classes, for a kernel file's [instructions].

    \b
    Counts are static: a loop body run n times needs --trips n; branches make them an estimate.
    Example:
      archline ipp ptx kernel.ptx --trips 1000
    """
    from archline.common.files import read_text
    from archline.fit.analyses.hongkim.ipp import IppInputError, classify_ptx

    counts = classify_ptx(read_text(ptx_file, error=IppInputError, what="PTX file", lines=True))
    if not counts:
        raise IppInputError(f"{ptx_file}: no PTX instructions found")
    scaled = {k: v * trips for k, v in sorted(counts.items())}
    if fmt == "json":
        echo_json({"file": str(ptx_file), "trips": trips, "static": True, "instructions": scaled})
        return
    click.echo("[kernel.instructions]   # static counts x trips")
    for k, v in scaled.items():
        click.echo(f"{k} = {v:g}")


@ipp.command("example")
def example_cmd() -> None:
    """Print a kernel file with every key, to copy and edit.

    \b
    Example:
      archline ipp example > mine.toml
    """
    from archline.fit.analyses.hongkim.files import example_kernel_file

    click.echo(example_kernel_file(), nl=False)


@ipp.command("gpu")
@click.argument("name", default="gtx280")
def gpu_cmd(name: str) -> None:
    """Print a GPU parameter file (to copy for your own GPU).

    \b
    Example:
      archline ipp gpu gtx280 > mygpu.toml
    """
    from archline.fit.analyses.hongkim.files import load_gpu_text

    click.echo(load_gpu_text(name)[1], nl=False)


def _add_fit_commands() -> None:
    from archline.cli.ipp_fit import fit_cmd, microbench_cmd, validate_cmd

    for c in (fit_cmd, validate_cmd, microbench_cmd):
        ipp.add_command(c)


_add_fit_commands()
