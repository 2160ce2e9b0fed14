"""``archline design-space``: Elango et al.'s LLC-vs-cores chip design space (S2 §4-6; model.md §12.3)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from archline.cli.output import echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, OutPath
from archline.common.outputs import show


@click.command("design-space")
@click.argument("algorithm")
@click.option("--machine", "machine_file", type=click.Path(dir_okay=False, path_type=Path), metavar="MACHINE.toml",
              help="your own chip (keys of fit/design_space.DesignMachine); default: S2's Nehalem-EX")
@click.option("--objective", type=click.Choice(["energy", "performance"]), default="energy", show_default=True,
              help="maximise flop/J or flop/s")
@click.option("--eps-scaling", type=click.Choice(["v", "v2", "table6"]), default=None,
              help="how eps_flop(f) scales with the V/f state (default: the machine's; Nehalem-EX: v, which "
              "reproduces S2's 0.373 GFLOP/J; v2 is S2's stated V^2 law: 0.408)")
@click.option("--fft-bound", type=click.Choice(["full", "half"]), default="full", show_default=True,
              help="FFT's OI bound: full = 0.125*log2(S) flop/B (S2 Thm 3.1, Sec. 5's numbers), half = "
              "0.0625*log2(S) (Sec. 6's optimum P = 10, Fig. 4's 0.5..2); see docs/analyses.md")
@click.option("--freq-steps", type=click.IntRange(min=2, max=1000), default=None, metavar="N",
              help="sweep N evenly spaced frequencies between the V/f table's ends (default: its states only)")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw the efficiency map (LLC size x active cores)")
@format_option
def design_space(algorithm: str, machine_file: Path | None, objective: str, eps_scaling: str | None,
                 fft_bound: str, freq_steps: int | None, plot_path: Path | None, fmt: str) -> None:
    """Split a chip between LLC and cores, sweep frequency, and find the best (LLC, cores, f) for ALGORITHM.

    \b
    E_eff = [eps_flop(f) + eps_mem/OI(S) + (P*pi_cpu + pi_cache(S)) / min(P*F(f), B_mem*OI(S))]^-1
    (Elango et al., TACO 2015, eq.1-3), OI(S) from 'archline bound'. ALGORITHM: matmul, fft, cg, jacobi2d.

    \b
    Examples:
      archline design-space cg                       S2 §6: 0.373 GFLOP/J at 4 KB, 3 cores, 1.26 GHz
      archline design-space fft --plot fft-map.png   full bound: 8 MB, 19 cores, 1.26 GHz
      archline design-space fft --fft-bound half      S2 §6: 8 MB, P = 10, 1.26 GHz
      archline design-space matmul --machine mychip.toml --objective performance
    """
    from dataclasses import replace

    from archline.fit.analyses.elango import design_space as ds_mod
    from archline.fit.analyses.elango.oi_bounds import get_bound

    get_bound(algorithm)
    machine = ds_mod.load_machine(machine_file) if machine_file else ds_mod.nehalem_ex()
    if eps_scaling:
        machine = replace(machine, eps_scaling=eps_scaling)
    freqs = None
    if freq_steps:
        step = (machine.f_max_hz - machine.f_min_hz) / (freq_steps - 1)
        freqs = [machine.f_min_hz + k * step for k in range(freq_steps)]
    ds = ds_mod.sweep(algorithm, machine, freqs_hz=freqs, reading=fft_bound if algorithm == "fft" else None)
    best = ds.best(objective)
    per_llc = ds.best_per_llc(objective)
    if plot_path is not None:
        from archline.fit.analyses.elango.plots import plot_efficiency_map
        plot_efficiency_map(ds, plot_path, objective)

    def row(p: ds_mod.Point) -> dict[str, object]:
        return {"llc_bytes": p.llc_bytes, "llc_area_mm2": p.llc_area_mm2, "alpha": p.alpha,
                "max_cores": p.max_cores, "cores": p.cores, "freq_hz": p.freq_hz,
                "oi_flop_per_byte": p.oi_flop_per_byte, "perf_flop_per_s": p.perf_flop_per_s,
                "flop_per_j": p.flop_per_j, "bandwidth_bound": p.bandwidth_bound,
                "case": ds_mod.case_of(machine, p.oi_flop_per_byte, p.cores),
                "llc_area_extrapolated": p.extrapolated}

    if fmt == "json":
        click.echo(json.dumps({"algorithm": algorithm, "machine": machine.name, "machine_source": machine.source,
                               "objective": objective, "eps_scaling": machine.eps_scaling, "bound_reading": ds.reading,
                               "best": row(best),
                               "best_per_llc": [row(p) for p in per_llc], "notes": ds.notes,
                               "citation": "S2 Sec. 4-6 (Elango et al., TACO 2015)",
                               **files_json(plot_path, f"{objective} over LLC size and cores for {algorithm} on "
                                                       f"{machine.name} (S2 Sec. 4-6)")}, indent=2))
        return
    click.echo(f"{algorithm} on {machine.name} ({machine.source}); objective: {objective}")
    echo_table(["LLC", "alpha", "Pmax", "P", "f GHz", "OI flop/B", "GFLOP/s", "GFLOP/J", "case"],
               [[ds_mod._fmt_bytes(p.llc_bytes), f"{p.alpha:.3f}", p.max_cores, p.cores, f"{p.freq_hz / 1e9:.2f}",
                 f"{p.oi_flop_per_byte:.4g}", f"{p.perf_flop_per_s / 1e9:.4g}", f"{p.flop_per_j / 1e9:.4g}",
                 ds_mod.case_of(machine, p.oi_flop_per_byte, p.cores) + (" *" if p is best else "")
                 + (" (area extrapolated)" if p.extrapolated else "")] for p in per_llc])
    click.echo(f"best: LLC {ds_mod._fmt_bytes(best.llc_bytes)}, {best.cores} cores, {best.freq_hz / 1e9:.2f} GHz: "
               f"{best.flop_per_j / 1e9:.4g} GFLOP/J, {best.perf_flop_per_s / 1e9:.4g} GFLOP/s")
    for n in ds.notes:
        click.echo(f"note: {n}")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
