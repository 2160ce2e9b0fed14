"""``archline tradeoff``: work-communication trade-offs, speedup and greenup (S1 §3.5.4, Fig. 8; model.md §2)."""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, OutPath
from archline.common.outputs import show


def _floats(text: str, what: str) -> list[float]:
    from archline.fit.analyses.choi.tradeoff import TradeoffError
    try:
        vals = [float(x) for x in text.split(",")]     # an empty item ('1,,2') is not a number: refused
    except ValueError:
        raise TradeoffError(f"{what} must be a comma-separated list of numbers, got '{text}'") from None
    if not vals or any(not (v >= 1 and v < float("inf")) for v in vals):
        raise TradeoffError(f"{what} must be finite numbers >= 1, got '{text}'")
    return vals


@click.command("tradeoff")
@click.argument("platform")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="dp", show_default=True)
@click.option("--f", "f_text", default="1,1.25,1.5,2,3,4", show_default=True, metavar="LIST",
              help="extra-work factors f >= 1")
@click.option("--m", "m_text", default="1,1.5,2,4,8,16", show_default=True, metavar="LIST",
              help="traffic-reduction factors m >= 1")
@click.option("--with-pi0", is_flag=True, help="greenups with constant power (eta_flop, S1 §3.5.5); default pi0 = 0")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw the (speedup, greenup) points and the per-case bounds (S1 Fig. 8)")
@format_option
def tradeoff(platform: str, precision: str, f_text: str, m_text: str, with_pi0: bool, plot_path: Path | None,
             fmt: str) -> None:
    """Speedup and greenup of doing f times the work with 1/m of the traffic, over I in [B_tau/4, B_eps].

    \b
    S1 §3.5.4 (eq.15-23) and Fig. 8: per case, the range of speedups and the smallest lower and largest upper
    greenup bounds; "faster but less efficient" counts points with dT > 1 and dE < 1 (the thesis: unlikely).

    \b
    Example:
      archline tradeoff fermi-sample --plot fig8.png
    """
    from archline.fit.analyses.choi.tradeoff import CASES, plot_tradeoffs, tradeoff_grid
    from archline.formats.platforms.profiles import load_platform

    pl = load_platform(platform)
    g = tradeoff_grid(pl.machine(precision, needed_for="the trade-off analysis"), fs=_floats(f_text, "--f"),
                      ms=_floats(m_text, "--m"), use_pi0=with_pi0)
    if plot_path is not None:
        plot_tradeoffs(g, plot_path, f"{pl.name} {precision.upper()}")
    d = g.as_dict()
    if fmt == "json":
        echo_json({"platform": pl.name, "precision": precision, **d,
                   **files_json(plot_path, f"S1 Fig. 8: speedup and greenup over the f, m grid, {pl.name} "
                                           f"{precision.upper()}")})
        return
    click.echo(f"{pl.name} {precision.upper()}: B_tau {g.B_tau:.4g}, B_eps {g.B_eps:.4g} flop/B, eta {g.eta:.3g}; "
               f"{d['points']} points, I in [B_tau/4, B_eps] (S1 Sec. 3.5.4, Fig. 8)")
    echo_table(["case", "points", "speedup min", "speedup max", "greenup lower bound", "greenup upper bound"],
               [[CASES[int(c)], b["points"], f"{b['speedup_lo']:.3g}", f"{b['speedup_hi']:.3g}",
                 f"{b['greenup_lo']:.3g}", f"{b['greenup_hi']:.3g}"] for c, b in d["cases"].items()])
    click.echo(f"faster but less efficient (dT > 1, dE < 1): {d['faster_but_less_efficient']} of {d['points']}")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
