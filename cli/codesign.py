"""``archline codesign``: S2's Figs. 4-8 (Elango et al., TACO 2015, §5-6) as tables and figures."""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, OutPath
from archline.common.outputs import show

KIND_CHOICES = ["oi-alpha", "rooflines", "perf-multiroofline", "energy-cores-freq", "energy-multiroofline"]


@click.command("codesign")
@click.argument("kind", type=click.Choice(KIND_CHOICES))
@click.option("--algorithm", "-a", "algorithms", type=click.Choice(["cg", "fft", "matmul", "jacobi2d"]),
              multiple=True, help="draw only these (repeatable; default: S2's four: CG, FFT, MM, J2D)")
@click.option("--machine", "machine_file", type=click.Path(dir_okay=False, path_type=Path), metavar="MACHINE.toml",
              help="your own chip (as for 'archline design-space'); default: S2's Nehalem-EX")
@click.option("--eps-scaling", type=click.Choice(["v", "v2", "table6"]), default=None,
              help="how eps_flop(f) scales with the V/f state (Figs. 7-8; default: the machine's)")
@click.option("--fft-bound", type=click.Choice(["full", "half"]), default="full", show_default=True,
              help="FFT's OI bound reading (see 'archline design-space --help')")
@click.option("--llc", "llc", multiple=True, metavar="SIZE",
              help="LLC sizes for energy-cores-freq / energy-multiroofline, e.g. 4K, 2M (repeatable; default: "
              "4K 32K 256K 2M for Fig. 7, 4K..64M in powers of two for Fig. 8)")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw the figure (its title names S2's figure)")
@format_option
def codesign(kind: str, algorithms: tuple[str, ...], machine_file: Path | None, eps_scaling: str | None,
             fft_bound: str, llc: tuple[str, ...], plot_path: Path | None, fmt: str) -> None:
    """S2's algorithm-architecture codesign figures: KIND is one of

    \b
      oi-alpha              Fig. 4: OI upper bound against alpha (the die fraction given to the LLC)
      rooflines             Fig. 5: the roofline at alpha = 0.01, 0.25, 0.5, 0.95, each algorithm's OI marked
      perf-multiroofline    Fig. 6: bandwidth roof, four alpha's compute roofs, each algorithm over alpha
      energy-cores-freq     Fig. 7: eq.3's GFLOP/J bound against cores (1-16) at 2.26/1.86/1.46 GHz, per LLC
      energy-multiroofline  Fig. 8: per LLC size, the best GFLOP/J over cores and frequency, against OI(S)

    \b
    Every point is the design-space model's (eq.1-3, P_max cores at f_max for Figs. 4-6).

    \b
    Examples:
      archline codesign oi-alpha --plot fig4.png
      archline codesign rooflines --plot fig5.png
      archline codesign energy-multiroofline --fft-bound half --plot fig8.png
      archline codesign energy-cores-freq -a fft -a cg --llc 4K --llc 2M --format json

    More in docs/analyses.md.
    """
    from dataclasses import replace

    from archline.fit.analyses.elango import design_space as ds_mod
    from archline.fit.analyses.elango import figures
    from archline.fit.analyses.elango.oi_bounds import parse_bytes
    from archline.model.errors import ArchlineFitError

    machine = ds_mod.load_machine(machine_file) if machine_file else ds_mod.nehalem_ex()
    if eps_scaling:
        machine = replace(machine, eps_scaling=eps_scaling)
    sizes = []
    for text in llc:
        try:
            b = parse_bytes(text)
        except ArchlineFitError as e:
            raise click.BadParameter(str(e).removeprefix("fast-memory size: "), param_hint="'--llc'") from None
        if not b >= 64:
            raise click.BadParameter(f"'{text}' is smaller than one 64-byte line", param_hint="'--llc'")
        sizes.append(b)
    algs = tuple(dict.fromkeys(algorithms)) or figures.ALGORITHMS
    data = figures.compute(kind, machine, algs, fft_bound, sizes or None)
    if plot_path is not None:
        figures.plot(data, machine, plot_path)
    if fmt == "json":
        echo_json({"kind": kind, "figure": data.source, "machine": machine.name, "fft_bound": fft_bound,
                   "eps_scaling": machine.eps_scaling, "points": data.rows, "notes": data.notes,
                   **files_json(plot_path, f"{data.source} ({kind}) on {machine.name}")})
        return
    click.echo(f"{data.source} ({kind}) on {machine.name} ({machine.source})")
    rows = data.rows
    if kind in ("oi-alpha", "perf-multiroofline"):
        shown = [r for r in rows if any(abs(r["alpha"] - a) < 1e-12 for a in figures.FIG5_ALPHAS)] or rows
        if kind == "oi-alpha":
            shown = [r for r in rows if r["alpha"] in (rows[0]["alpha"], rows[-1]["alpha"])]
        echo_table(["algorithm", "alpha", "LLC", "cores", "OI (flop/B)", "GFLOP/s", "bound"],
                   [[figures.LABEL[r["algorithm"]], f"{r['alpha']:.3g}", figures.fmt_bytes(r["llc_bytes"]),
                     r["cores"], f"{r['oi_flop_per_byte']:.4g}", f"{r['perf_flop_per_s'] / 1e9:.4g}",
                     "bandwidth" if r["bandwidth_bound"] else "compute"] for r in shown])
        click.echo(f"{len(rows)} points drawn (alpha {rows[0]['alpha']:.3g}-{rows[-1]['alpha']:.3g}); "
                   "--format json gives all")
    elif kind == "rooflines":
        echo_table(["alpha", "cores", "LLC", "peak GFLOP/s", "algorithm", "OI (flop/B)", "GFLOP/s", "bound"],
                   [[f"{r['alpha']:g}", r["cores"], figures.fmt_bytes(r["llc_bytes"]),
                     f"{r['peak_flop_per_s'] / 1e9:.4g}", figures.LABEL[r["algorithm"]],
                     f"{r['oi_flop_per_byte']:.4g}", f"{r['perf_flop_per_s'] / 1e9:.4g}",
                     "bandwidth" if r["bandwidth_bound"] else "compute"] for r in rows])
    elif kind == "energy-cores-freq":
        cols = list(dict.fromkeys((r["freq_hz"], r["cores"]) for r in rows))
        keys = list(dict.fromkeys((r["algorithm"], r["llc_bytes"]) for r in rows))
        val = {(r["algorithm"], r["llc_bytes"], r["freq_hz"], r["cores"]): r["flop_per_j"] for r in rows}
        echo_table(["algorithm", "LLC"] + [f"{f / 1e9:g}G/P{c}" for f, c in cols],
                   [[figures.LABEL[a], figures.fmt_bytes(s)]
                    + [f"{val[(a, s, f, c)] / 1e9:.3g}" if (a, s, f, c) in val else "-" for f, c in cols]
                    for a, s in keys])
        click.echo("GFLOP/J upper bounds (eq.3) at frequency f (GHz) with P active cores")
    else:
        echo_table(["algorithm", "LLC", "OI (flop/B)", "cores", "f (GHz)", "GFLOP/J", ""],
                   [[figures.LABEL[r["algorithm"]], figures.fmt_bytes(r["llc_bytes"]),
                     f"{r['oi_flop_per_byte']:.4g}", r["cores"], f"{r['freq_hz'] / 1e9:.2f}",
                     f"{r['flop_per_j'] / 1e9:.4g}", "best" if r["best"] else ""] for r in rows])
    for n in data.notes:
        click.echo(f"note: {n}")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
