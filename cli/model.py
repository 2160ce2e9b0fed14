"""archline model show|predict|plot"""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, format_option
from archline.fit.model.summary import SYMBOLS, parse_intensities, platform_summary, predict_rows
from archline.fit.model.units import display

precision_option = click.option("--precision", type=click.Choice(["sp", "dp", "both"]), default="both",
                                show_default=True, help="single or double precision (flop costs differ)")


def _precisions(platform_name: str, precision: str) -> list[str] | None:
    return None if precision == "both" else [precision]


@click.group()
def model() -> None:
    """The energy-roofline model of a platform or a fitted cost table.

    \b
    NAME_OR_COSTS is a platform name (`archline platforms list`), a profile
    .toml, or a cost table .json written by `archline fit`.
    The capped model (S1 eq.32-38) is used whenever delta_pi is known;
    otherwise the free model (S0 eq.1-8).
    """


@model.command("show")
@click.argument("name_or_costs")
@precision_option
@format_option
def show_cmd(name_or_costs: str, precision: str, fmt: str) -> None:
    """Constants and derived balances, powers and efficiencies.

    \b
    Keys (JSON) are the symbols of the model, in SI units:
      B_tau, B_eps  time and energy balance (flop/byte)
      eps_hat       least energy per flop, eta_flop = eps_flop/eps_hat
      pi_flop, pi_mem, P_max, headroom, Bhat_eps (arch line = 1/2)

    \b
    Example:
      archline model show gtx580 --precision sp
    """
    from archline.fit.platforms.profiles import load_platform

    pl = load_platform(name_or_costs)
    summary = platform_summary(pl, _precisions(name_or_costs, precision))
    if fmt == "json":
        echo_json(summary)
        return
    precs = [p for p in ("sp", "dp") if p in summary]
    click.echo(f"{pl.name}: {pl.title}" + ("  [emulated]" if pl.emulated else ""))
    rows = []
    for sym, (unit, meaning) in SYMBOLS.items():
        if not any(sym in summary[p] for p in precs):
            continue
        vals = []
        shown_unit = unit
        for p in precs:
            v, shown_unit = display(summary[p].get(sym), unit)
            vals.append(v)
        rows.append([sym, *vals, shown_unit, meaning])
    echo_table(["symbol", *[p.upper() for p in precs], "unit", "meaning"], rows)
    if "delta_pi" not in summary[precs[0]]:
        why = pl.source("delta_pi")
        click.echo("\ndelta_pi (the power cap) is not known, so the free (uncapped) model is used"
                   + (f" ({why})" if why else ""))


@model.command("predict")
@click.argument("name_or_costs")
@click.option("--intensity", "-i", required=True, metavar="LIST",
              help="flop/byte values: '0.25,1,4' or a range of powers of two '0.25:64'")
@click.option("--cap-divisor", type=float, default=1.0, show_default=True,
              help="throttle: use delta_pi/K (S1 §4.4.4); needs delta_pi")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@format_option
def predict_cmd(name_or_costs: str, intensity: str, cap_divisor: float, precision: str, fmt: str) -> None:
    """Performance, energy efficiency and power at given intensities.

    \b
    Example:
      archline model predict gtx580 --intensity 0.25:64 --precision dp
    """
    from archline.fit.platforms.profiles import load_platform

    pl = load_platform(name_or_costs)
    values = parse_intensities(intensity)
    m = pl.machine(precision, needed_for="model predict")
    rows = predict_rows(m, values, cap_divisor)
    if fmt == "json":
        echo_json({"platform": pl.name, "precision": precision, "emulated": pl.emulated, "capped": m.capped,
                   "cap_divisor": cap_divisor, "points": rows})
        return
    click.echo(f"{pl.name} {precision.upper()}: " + ("capped model" if m.capped else "free model (delta_pi unknown)")
               + (" [emulated]" if pl.emulated else ""))
    echo_table(["I (flop/B)", "GFLOP/s", "GFLOP/J", "power (W)", "bound by"],
               [[f"{r['intensity']:g}", f"{r['gflop_per_s']:.4g}", f"{r['gflop_per_j']:.4g}", f"{r['power_w']:.4g}",
                 r["bound"]] for r in rows])


@model.command("plot")
@click.argument("name_or_costs", nargs=-1, required=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="output figure (.png, .pdf, .svg); default NAME.png")
@click.option("--precision", type=click.Choice(["sp", "dp", "both"]), default="both", show_default=True)
def plot_cmd(name_or_costs: tuple[str, ...], out: Path | None, precision: str) -> None:
    """Roofline, arch line and power line on one figure (log2 axes, balance points marked, cap shown).

    \b
    Example:
      archline model plot gtx580 --out gtx580.png
    """
    from archline.fit.platforms.profiles import load_platform
    from archline.fit.plots.rooflines import curves_for, plot_model

    pls = [load_platform(n) for n in name_or_costs]
    precs = ["sp", "dp"] if precision == "both" else [precision]
    curves = curves_for(pls, [p for p in precs if all(p in pl.precisions_available() for pl in pls)] or precs)
    path = plot_model(curves, out or Path(f"{pls[0].name}.png"))
    click.echo(f"wrote {path}")
