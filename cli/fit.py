"""archline fit FILES... : the per-platform cost table from result rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from archline.cli.complete import platform_names
from archline.cli.params import FIGURE_SUFFIXES, OutPath
from archline.common.outputs import show

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.regress.result import FitResult
    from archline.formats.costs_files import Job


@click.command("fit")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True,
              help="table for people (pJ/flop, pJ/B, W); json = archline.costs/1; csv = one line per number.")
@click.option("--out", type=OutPath(dir_okay=True), default=None,
              help="write here instead of stdout; with several platforms and json, or ending in /, a directory (one "
                   "file each). "
                   "A .json file takes --format json and a .csv file --format csv: another format is refused.")
@click.option("--model", type=click.Choice(["auto", "basic", "cache", "capped", "dvfs", "time"]), default="auto",
              show_default=True, help="auto picks by cross-validated error and says so; time: the time terms only "
                                      "(what rows without energy give; auto picks it for them).")
@click.option("--cache-method", type=click.Choice(["joint", "residual"]), default="joint", show_default=True,
              help="cache model: one joint fit, or S1 eq.11-12 residuals after eq.9.")
@click.option("--figure", type=OutPath(suffixes=FIGURE_SUFFIXES), default=None,
              help="fit-report PNG: measured points over the fitted lines, and residuals.")
@click.option("--points", type=OutPath(suffixes=(".csv",)), default=None,
              help="CSV of per-point relative errors of time, energy and power.")
@click.option("--include-emulated/--exclude-emulated", default=True, show_default=True,
              help="fit emulated rows (as their own group, labelled emulated) or drop them.")
@click.option("--mix-emulated", is_flag=True, help="fit emulated and real rows of a platform together.")
@click.option("--platform", default=None, shell_complete=platform_names, help="fit only this platform's rows.")
@click.option("--folds", type=click.IntRange(min=2), default=None,
              help="k for k-fold cross-validation [default: 10; dvfs: the number of settings].")
@click.option("--cv", "cv", type=click.Choice(["grouped", "rowwise"]), default="grouped", show_default=True,
              help="folds by configuration (dvfs: by voltage setting), never splitting one; or row-wise, which "
                   "lets repeats of a configuration sit in training and test folds.")
@click.option("--holdout-col", default=None,
              help="column splitting rows into training (T) and validation (V/validation/test/1/true).")
@click.option("--one-precision", is_flag=True, help="basic: allow data with only SP or only DP rows.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0), default=200, show_default=True,
              help="bootstrap resamples for the non-OLS fits (capped uses at most 100).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="seed for folds and bootstrap.")
@click.option("--where", multiple=True, metavar="KEY=VALUE",
              help="only rows whose text column KEY is VALUE (repeat: same key = any of, other keys = all of).")
def fit(files: tuple[str, ...], fmt: str, out: str | None, model: str, cache_method: str, figure: str | None,
        points: str | None, include_emulated: bool, mix_emulated: bool, platform: str | None, folds: int | None,
        holdout_col: str | None, cv: str, one_precision: bool, n_boot: int, seed: int,
        where: tuple[str, ...]) -> None:
    """Fit the energy-roofline model to archline.results/1 FILES: CSV files, Parquet files, or a data set
    directory written by `archline lab collect` (platform=<p>/host=<h>/run_id=<r>/part-*.parquet). `-`
    reads a CSV from standard input (a file named '-' is ./-); a pipe is read block by block.

    Rows of one configuration are fitted through their count, means and spreads (the same estimate as
    fitting every row); the output gives rows and configurations.

    \b
    Models (equations in docs/model.md):
      basic   S0 eq.9, SP and DP jointly (statsmodels OLS)
      cache   + L1/L2/L3/shared, random-access, integer terms (joint or residual eq.11-12)
      capped  power-cap model eq.32-38 (scipy least squares), KS test free vs capped
      dvfs    S1 eq.48 by non-negative least squares over every voltage setting
      time    tau per flop, byte of each level, access and op (observed peaks), no energy
    Rows without energy (no meter: energy_j empty) give the time table; its energy terms
    are listed as absent, with the rows' reason. Beside rows with energy they give the taus.
    Every coefficient has a standard error and a 95% interval; one the data cannot identify is left out with
    a warning, never printed as 0.

    \b
    Examples:
      archline fit results/*.csv
      archline fit results/*.csv --format json --out gtx580.json
      archline fit tk1/*.csv --model dvfs --folds 16 --holdout-col split
      archline fit results/*.csv --figure fit.png --points errors.csv
      archline fit lab-dataset/ --format json --out costs/
      archline fit lab-dataset/ --where host=node03
    """
    from archline.fit.figure_layout import check_figure_format
    from archline.fit.regress.api import FitOptions, fit_files
    from archline.fit.regress.outliers import outlier_warnings
    from archline.formats.costs import render
    from archline.formats.costs_files import points_job, write_all

    if out is not None:
        _check_suffix(out, fmt)
        _check_out_dir(out)
    if figure:
        check_figure_format(figure)          # a .pgf without TeX: one line, before the fit and before any output
    opts = FitOptions(model=model, folds=folds, holdout_col=holdout_col, include_emulated=include_emulated,
                      mix_emulated=mix_emulated, platform=platform, cache_method=cache_method,
                      one_precision=one_precision, n_boot=n_boot, seed=seed, cv=cv, where=where)
    from archline.formats.results_read import refuse_json_inputs

    refuse_json_inputs(files)
    results = fit_files(files, opts)
    jobs = _out_jobs(results, out, fmt) if out is not None else []
    if points:
        jobs.append(points_job(results, points))
    if figure:
        from archline.fit.plots.report import fit_report_jobs
        from archline.formats.results_check import ResultsError

        timed = [r.platform for r in results if r.model == "time"]
        if timed:       # the report draws the energy fit: a time table has none (before anything is written)
            raise ResultsError(f"--figure draws the energy fit, and the rows of '{timed[0]}' have no energy; leave "
                               "--figure out (`archline plot ROWS` draws their time roofline)")
        jobs += fit_report_jobs(results, figure)
    written = write_all(jobs)                # every output checked first; none renamed unless all are written
    if out is None:
        click.echo(render(results, fmt), nl=False)
    for p in written:
        click.echo(f"wrote {show(p)}", err=True)
    for r in results:      # json/csv: every warning on stderr; a table carries them, and its outliers go there too
        name = r.platform.encode("unicode_escape").decode() if not r.platform.isprintable() else r.platform
        for w in (r.warnings if fmt != "table" else outlier_warnings(r)):
            click.echo(f"archline: warning: {name}: {w}", err=True)
    sys.stdout.flush()


#: --out suffixes that name a format: written in any other, the file would lie about its contents
_SUFFIX_FORMAT = {".json": "json", ".csv": "csv"}


def _check_suffix(out: str, fmt: str) -> None:
    """Refuse ``--out x.json`` with ``--format table`` or ``csv`` (and ``x.csv`` with another format than csv)
    before the fit: a text table in a .json file is read as broken JSON later."""
    import os

    from archline.common.outputs import is_stream

    if is_stream(out) or os.path.isdir(out):
        return
    suffix = os.path.splitext(out)[1].lower()
    want = _SUFFIX_FORMAT.get(suffix)
    if want is not None and want != fmt:
        raise click.BadParameter(f"{show(out)} is a {suffix} file but --format is {fmt}; give --format {want} "
                                 f"or another file name", ctx=click.get_current_context(silent=True),
                                 param_hint="'--out'")


def _names_dir(out: str) -> bool:
    """``--out costs/``: a trailing slash always names a directory (one file per platform in it)."""
    import os

    from archline.common.outputs import is_stream

    return out.endswith(("/", os.sep)) and not is_stream(out)


def _check_out_dir(out: str) -> None:
    """``--out c3/`` where c3 is a file: refused before the fit (exit 2), not a raw 'File exists' after it."""
    import os

    if _names_dir(out) and os.path.lexists(out.rstrip("/" + os.sep)) and not os.path.isdir(out):
        raise click.BadParameter(f"{show(out)} names a directory but {show(out.rstrip('/' + os.sep))} is a file; "
                                 "give a new or existing directory, or a file name without the slash",
                                 ctx=click.get_current_context(silent=True), param_hint="'--out'")


def _out_jobs(results: list[FitResult], out: str, fmt: str) -> list[Job]:
    """The cost-table outputs: ``costs_jobs``, except that a trailing slash makes a directory even for one
    platform, and several platforms' json into an existing file is refused (exit 2) naming the file."""
    import os

    from archline.formats.costs import EXTENSIONS
    from archline.formats.costs_files import costs_jobs, group_filename

    if _names_dir(out):
        return [j for r in results for j in costs_jobs([r], os.path.join(out, group_filename(r, EXTENSIONS[fmt])),
                                                        fmt)]
    if len(results) > 1 and fmt == "json" and Path(out).suffix != ".json" and os.path.lexists(out) \
            and not os.path.isdir(out):
        raise click.BadParameter(f"{show(out)} is a file, but {len(results)} platforms were fitted and json writes "
                                 "one file each into a directory; give a directory (e.g. --out costs/), or one "
                                 "platform with --platform", ctx=click.get_current_context(silent=True),
                                 param_hint="'--out'")
    return costs_jobs(results, out, fmt)
