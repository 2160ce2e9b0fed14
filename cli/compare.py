"""archline compare INPUTS... --by host|run|platform"""

from __future__ import annotations

import json
from pathlib import Path

import click

from archline.cli.output import files_json, format_option
from archline.cli.params import OutPath
from archline.common.outputs import show


@click.command("compare")
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("--by", type=click.Choice(["host", "run", "platform"]), required=True,
              help="what a group is: a host (node variability), a run (before/after) or a platform.")
@click.option("--model", type=click.Choice(["basic", "cache", "capped"]), default="basic", show_default=True,
              help="the model every group is fitted with.")
@click.option("--where", multiple=True, metavar="KEY=VALUE",
              help="only rows whose text column KEY is VALUE (repeat: same key = any of, other keys = all of).")
@click.option("--method", type=click.Choice(["two-stage", "pooled"]), default="two-stage", show_default=True,
              help="two-stage: one fit per run of each host (per host of each run with --by run), groups "
                   "tested against the variation between those fits (the run a random effect); pooled: one "
                   "fit per group, tests on the fit's own standard errors (optimistic: repeats of a run are "
                   "not independent).")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="significance level (after Holm).")
@format_option
@click.option("--figure", type=OutPath(path_type=Path), default=None,
              help="also draw each coefficient per group with its 95% CI (.png, .pdf, .svg).")
def compare(inputs: tuple[str, ...], by: str, model: str, where: tuple[str, ...], method: str, alpha: float,
            fmt: str, figure: Path | None) -> None:
    """Fit each group of the result rows in INPUTS on its own and put the coefficients side by side: each
    group's value with its 95% CI, the spread across groups, and which groups differ significantly.

    INPUTS are archline.results/1 CSV or Parquet files or data set directories (`archline lab collect`).
    With --by host or --by run the groups are compared within each platform.

    \b
    Tests (named in the output as well), --method two-stage:
      stage 1  one fit per run of each host (--by host), per host of each run (--by run)
      differs  each group's mean of its fits against the median of the others, t-test with the pooled
               variance between the fits within a group, Holm-corrected over the groups
      pairs    every pair of groups, the same t-test, Holm-corrected over the pairs
      spread   range, coefficient of variation, one-way ANOVA F test
      variance components: between groups, between runs (or hosts), residual
    With one run per host (or --method pooled) the tests use each group's fit's standard errors
    (Welch t-tests, Cochran's Q), which take repeats as independent and are optimistic.

    \b
    Examples:
      archline compare fleet/ --by host --where platform=gtx580 --figure nodes.png
      archline compare before/ after/ --by run
      archline compare fleet/ --by platform --format json
    """
    from archline.fit.analyses.choi.compare import compare_files

    if figure is not None:      # before any work: the figure is not an input, and its format can be written
        from archline.common.outputs import check_output
        from archline.fit.figure_layout import check_figure_format

        check_output(figure, extra_inputs=inputs)
        check_figure_format(figure)
    cmp = compare_files(inputs, by, where=where, model=model, alpha=alpha, method=method)
    for w in cmp.warnings:      # as `archline fit` says them, whatever the format
        click.echo(f"archline: warning: {w}", err=True)
    drawn = None
    if figure is not None:      # drawn first: the JSON report lists it
        from archline.fit.plots.compare import compare_figure

        drawn = compare_figure(cmp, figure)
    if fmt == "json":
        click.echo(json.dumps({**cmp.as_json(), **files_json(drawn, f"the fitted costs of each {by} with their "
                                                                     "confidence intervals")},
                              indent=1, default=float))
    else:
        from archline.fit.analyses.choi.compare_report import to_table

        click.echo(to_table(cmp), nl=False)
    if drawn is not None:
        click.echo(f"wrote {show(drawn)}", err=True)
