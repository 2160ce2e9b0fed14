"""archline plot"""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("files_or_costs", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(["roofline", "archline", "powerline", "compare", "all", "ceilings"]),
              default="all", show_default=True,
              help="one panel, all three, 'compare' (several platforms on the same three panels), or 'ceilings': "
                   "the power / energy-efficiency roofline of GPUs (S4, model.md §11)")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="output figure (.png, .pdf, .svg)")
def plot(files_or_costs: tuple[str, ...], kind: str, precision: str, out: Path) -> None:
    """Draw the model of platforms or cost tables, with measured results over it.

    \b
    FILES_OR_COSTS mixes platform names, profile .toml, cost-table .json and
    result .csv files (archline.results/1). Results are drawn as points over
    the model of the platform named in their rows (or over the given costs).

    \b
    Examples:
      archline plot gtx580 gtx680 i7-950 --kind compare --out compare.png
      archline plot results/run1/results.csv costs.json --kind all --out fit.png
      archline plot gtx580 --kind ceilings --out gtx580-power-roofline.png
    """
    from archline.fit.plots.inputs import load_plot_inputs
    from archline.fit.plots.rooflines import KINDS, plot_model

    if kind == "ceilings":
        from dataclasses import replace

        from archline.fit.analyses.power_roofline import ceilings_from_platform, plot_power_roofline
        from archline.fit.platforms.profiles import load_platform

        ceilings = [replace(c, label=f"{pl.name} {c.label}")
                    for pl in map(load_platform, files_or_costs) for c in ceilings_from_platform(pl)]
        click.echo(f"wrote {plot_power_roofline(ceilings, out)}")
        return
    curves, measured = load_plot_inputs(files_or_costs, precision)
    kinds = KINDS if kind in ("all", "compare") else (kind,)
    if kind == "all" and all(c.time_only for c in curves):
        kinds = ("roofline",)  # time-only results: the arch and power lines need energy
    path = plot_model(curves, out, kinds=kinds, measured=measured)
    click.echo(f"wrote {path}")
