"""archline plot"""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_files, format_option, panels
from archline.cli.params import FIGURE_SUFFIXES, OutPath


@click.command()
@click.argument("files_or_costs", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(["roofline", "archline", "powerline", "compare", "all", "ceilings"]),
              default="all", show_default=True,
              help="one panel, all three, 'compare' (several platforms on the same three panels), or 'ceilings': "
                   "the power and energy-efficiency rooflines of GPUs with their optimisation ceilings (S4; "
                   "docs/model.md)")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default=None,
              help="rows and model lines of this precision [default: the precisions the result rows have, both "
                   "when both are there; without rows sp (dp for a dp-only time table); ceilings: both]")
@click.option("--out", "-o", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), required=True,
              help="output figure (.png, .pdf, .svg)")
@click.option("--where", multiple=True, metavar="KEY=VALUE",
              help="only result rows whose text column KEY is VALUE (repeat: same key = any of, other keys = all of)")
@format_option
def plot(files_or_costs: tuple[str, ...], kind: str, precision: str | None, out: Path,
         where: tuple[str, ...], fmt: str) -> None:
    """Draw the model of platforms or cost tables, with measured results over it.

    \b
    FILES_OR_COSTS mixes platform names, profile .toml, cost-table .json, ERT
    roofline.json (the Empirical Roofline Toolkit's measured ceilings, drawn
    as a time roofline) and results (archline.results/1: .csv, .parquet, or a
    data set directory from `archline lab collect`). Results are drawn as points over
    the model of the platform named in their rows (or over the given costs).
    With --kind ceilings, a .toml holding [[ceiling]] tables is your own
    table of ceilings (docs/model.md shows the format), and result rows of
    the ceil_flop/ceil_mem kernels become ceilings:
      archline bench run --backend opencl --kernel ceilings --precision sp --out R

    \b
    Examples:
      archline plot gtx580 gtx680 i7-950 --kind compare --out compare.png
      archline plot results/run1/results.csv costs.json --kind all --out fit.png
      archline plot lab-dataset/ gtx580 --where host=node03 --out node03.png
      archline plot gtx580 --kind ceilings --out gtx580-power-roofline.png
      archline plot Results.mymachine/roofline.json --kind roofline --out ert.png
      archline plot R/*.csv costs.json my-ceilings.toml --kind ceilings --out ceilings.png
      archline plot gtx580 --out gtx580.png --format json     the file written and what it shows, as JSON
    """
    from archline.fit.figure_layout import check_figure_format

    check_figure_format(out)        # a .pgf without TeX: one line before anything is read or drawn
    if kind == "ceilings":
        from archline.cli.output import echo_table
        from archline.fit.analyses.s4.inputs import ceiling_rows, load_ceiling_inputs
        from archline.fit.plots.power_roofline import plot_power_roofline

        inputs = load_ceiling_inputs(files_or_costs, precision)
        path = plot_power_roofline(inputs.ceilings, out, inputs.points, notes=inputs.notes)
        if fmt == "table":
            echo_table(["ceiling", "kind", "rate", "P_peak (W)", "EE at P_peak", "from"],
                       ceiling_rows(inputs.ceilings))
        for note in inputs.notes:
            click.echo(f"archline: warning: {note}", err=True)
        shows = (f"power and energy-efficiency rooflines with {len(inputs.ceilings)} ceiling(s) and "
                 f"{len(inputs.points)} kernel point(s)")
        echo_files(fmt, [(path, shows)], kind=kind, notes=inputs.notes,
                   ceilings=[{"label": c.label, "kind": c.kind, "rate_per_s": c.rate_per_s,
                              "peak_power_w": c.peak_power_w, "efficiency_per_j": c.efficiency_per_j,
                              "precision": c.precision, "source": c.source} for c in inputs.ceilings])
        return
    from archline.fit.plots.inputs import plot_plan
    from archline.fit.plots.rooflines import KINDS, plot_model

    files_or_costs = _once(files_or_costs)
    plan = plot_plan(files_or_costs, precision, KINDS if kind in ("all", "compare") else (kind,), where)
    path = plot_model(plan.curves, out, kinds=plan.kinds, measured=plan.measured, notes=plan.notes)
    for note in plan.notes:
        click.echo(f"archline: warning: {note}", err=True)
    shows = f"{panels(plan.kinds)} of {', '.join(c.label for c in plan.curves) or 'no model'}" + (
        f", with measured points of {', '.join(m.label for m in plan.measured)}" if plan.measured else "")
    echo_files(fmt, [(path, shows)], kind=kind, notes=plan.notes)


def _once(items: tuple[str, ...]) -> tuple[str, ...]:
    """Each file once (the same file named twice, or through a link, is drawn once, with a warning, as every reader
    says); a platform name, which is no file here, as given."""
    import os

    from archline.common.files import unique_inputs

    def warn(line: str) -> None:
        click.echo(f"archline: warning: {line}", err=True)

    files = [i for i in items if os.path.isfile(i)]
    kept = {os.fspath(p) for p in unique_inputs(files, warn)}
    out, seen = [], set()
    for i in items:
        key = os.fspath(Path(i)) if os.path.isfile(i) else None
        if key is None:
            out.append(i)
        elif key in kept and key not in seen:
            seen.add(key)
            out.append(i)
    return tuple(out)
