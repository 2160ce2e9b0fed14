"""``archline ipp fit``, ``ipp validate`` and ``ipp microbench``: S3 Table 2's unit powers from microbenchmark rows
(S3 §3.4) and measured against predicted power (S3 §6.1, Figs. 7 and 9; §6.3, Fig. 12)."""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, NON_NEGATIVE, OutPath
from archline.common.outputs import show

_gpu_option = click.option("--gpu", "gpu_name", default="gtx280", show_default=True, metavar="NAME|GPU.toml",
                           help="GPU parameter file: idle power, beta, SM count, which units are on chip and "
                           "Spec.Linear (and the powers kept for units no row accesses)")
_rows_arg = click.argument("rows_file", metavar="ROWS.csv", type=click.Path(dir_okay=False, path_type=Path))
_plot_option = click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path),
                            metavar="FIG.png", help="draw measured and predicted power per row (S3 Figs. 7, 9)")


@click.command("fit")
@_rows_arg
@_gpu_option
@_plot_option
@format_option
def fit_cmd(rows_file: Path, gpu_name: str, plot_path: Path | None, fmt: str) -> None:
    """Fit every unit's maximum power (S3 Table 2) to measured GPU powers (S3 §3.4, eq.5-16).

    \b
    ROWS.csv: name, gpu_power_w (measured), active_sms (optional), rate_<unit> access rates (eq.10) for
    fp, reg, alu, sfu, int, fds, shared, texture, const_cache, global_mem, local_mem (missing = 0).
    Power is linear in the unit powers, so the fit is non-negative least squares; units that no row
    accesses keep the GPU file's value.

    \b
    Examples:
      archline ipp microbench > rows.csv && archline ipp fit rows.csv      recovers S3 Table 2
      archline ipp fit my-rows.csv --gpu mygpu.toml --plot fit.png --format json
    """
    from archline.fit.analyses.hongkim.files import load_gpu
    from archline.fit.analyses.hongkim.unit_fit import fit_unit_powers, plot_validation, read_rows

    gpu = load_gpu(gpu_name)
    f = fit_unit_powers(read_rows(rows_file, gpu), gpu)
    tag = " [emulated]" if f.emulated else ""
    if plot_path is not None:
        plot_validation(f.names, f.measured_w, f.predicted_w, plot_path,
                        f"S3 Fig. 7: measured and fitted-model GPU power, {gpu.name}{tag}")
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, Sec. 3.4, Table 2", **f.as_dict(),
                   **files_json(plot_path, f"S3 Fig. 7: measured and fitted-model GPU power per row, {gpu.name}{tag}")})
        return
    click.echo(f"unit powers fitted to {len(f.names)} rows on {gpu.name}{tag} (S3 Sec. 3.4; eq.5-16)")
    echo_table(["unit", "max power (W)", "stderr (W)", f"{gpu.name} file (W)", ""],
               [[u, f"{f.fitted.get(u, f.prior[u]):.4g}",
                 "-" if f.stderr.get(u) is None else f"{f.stderr[u]:.2g}", f"{f.prior[u]:.4g}",
                 "" if u in f.fitted else "kept"] for u in f.prior])
    click.echo(f"fitted model against the rows: geometric-mean error {100 * f.geomean_error:.2f}% (rows a unit "
               f"alone explains fit exactly and pull it down), RMS {f.rms_w:.3g} W")
    for n in f.notes:
        click.echo(f"note: {n}")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")


@click.command("validate")
@_rows_arg
@_gpu_option
@_plot_option
@format_option
def validate_cmd(rows_file: Path, gpu_name: str, plot_path: Path | None, fmt: str) -> None:
    """Measured GPU power of each row against the model's prediction with the GPU file's unit powers (S3 §6.1).

    \b
    The paper's geometric-mean error: §6.1 (measured times) 2.5% for its microbenchmarks (Fig. 7), 9.18% for
    its GPGPU kernels (Fig. 9); §6.3 (IPP's predicted times, Fig. 12) 2.7% and 8.94%.

    \b
    ROWS.csv as for 'archline ipp fit'.
    Examples:
      archline ipp validate my-rows.csv --plot fig7.png
      archline ipp validate my-rows.csv --gpu fitted.toml --format json
    """
    from archline.fit.analyses.hongkim.files import load_gpu
    from archline.fit.analyses.hongkim.unit_fit import geomean_error, plot_validation, predict_w, read_rows

    gpu = load_gpu(gpu_name)
    rows = read_rows(rows_file, gpu)
    pred = predict_w(rows, gpu)
    meas = [r.gpu_power_w for r in rows]
    import numpy as np

    m = np.array(meas)
    err = geomean_error(m, pred)
    tag = " [emulated]" if any(r.emulated for r in rows) else ""
    if plot_path is not None:
        plot_validation([r.name for r in rows], m, pred, plot_path,
                        f"S3 Figs. 7/9: measured and predicted GPU power, {gpu.name}{tag}")
    if fmt == "json":
        echo_json({"gpu": gpu.name, "source": "Hong & Kim, ISCA 2010, Sec. 6.1, Figs. 7 and 9",
                   **files_json(plot_path, f"S3 Figs. 7/9: measured and predicted GPU power per row, {gpu.name}{tag}"),
                   "rows": [{"name": r.name, "measured_w": r.gpu_power_w, "predicted_w": float(p)}
                            for r, p in zip(rows, pred, strict=True)],
                   "geomean_error": err, "emulated": bool(tag)})
        return
    click.echo(f"measured against predicted GPU power on {gpu.name}{tag} (S3 Sec. 6.1, Figs. 7 and 9)")
    echo_table(["row", "measured (W)", "predicted (W)", "error"],
               [[r.name, f"{r.gpu_power_w:.4g}", f"{p:.4g}", f"{100 * (p - r.gpu_power_w) / r.gpu_power_w:+.2f}%"]
                for r, p in zip(rows, pred, strict=True)])
    click.echo(f"geometric-mean error {100 * err:.2f}% (S3 §6.1: 2.5% microbenchmarks, Fig. 7; 9.18% GPGPU "
               "kernels, Fig. 9; §6.3, Fig. 12, with IPP's predicted times: 2.7% and 8.94%)")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")


@click.command("microbench")
@_gpu_option
@click.option("--noise", type=NON_NEGATIVE, default=0.0, show_default=True,
              help="relative measurement error (normal) added to each power, e.g. 0.02")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def microbench_cmd(gpu_name: str, noise: float, seed: int) -> None:
    """Print emulated microbenchmark rows (CSV): S3 Fig. 8's FP, MB4, MB8, MEM, INT, CONST, TEX, SHARED and one
    per remaining unit, with GPU power from the model and the GPU file's unit powers (S3 Table 2 for gtx280).

    \b
    The rows have known unit powers: 'archline ipp fit' on them recovers the GPU file's Table 2.
    Examples:
      archline ipp microbench > rows.csv
      archline ipp microbench --noise 0.02 --seed 1 > noisy.csv
    """
    from archline.fit.analyses.hongkim.files import load_gpu
    from archline.fit.analyses.hongkim.unit_fit import emulated_rows, rows_csv

    gpu = load_gpu(gpu_name)
    click.echo(rows_csv(emulated_rows(gpu, noise, seed), gpu), nl=False)
