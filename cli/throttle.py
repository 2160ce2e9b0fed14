"""``archline throttle``: power-cap throttling, delta_pi/k for k = 1..8 (S1 §4.4.4, Fig. 13; model.md §4)."""

from __future__ import annotations

from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, POSITIVE, OutPath
from archline.common.outputs import show


@click.command("throttle")
@click.argument("platform")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--delta-pi-w", type=POSITIVE, default=None, metavar="W",
              help="usable power above pi0 (overrides the profile's delta_pi; a profile gives it as "
              "delta_pi = { value = W, source = ... } under [constants])")
@click.option("--pi0-w", type=POSITIVE, default=None, metavar="W", help="constant power (overrides the profile's)")
@click.option("--max-divisor", type=click.IntRange(min=2, max=64), default=8, show_default=True,
              help="throttle delta_pi/k for k = 1..N")
@click.option("--intensity", "-i", default="0.25:64", show_default=True, metavar="LIST",
              help="flop/byte values: '0.25,1,4' or powers of two 'LOW:HIGH'")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw power, performance and energy efficiency against intensity (S1 Fig. 13)")
@format_option
def throttle(platform: str, precision: str, delta_pi_w: float | None, pi0_w: float | None, max_divisor: int,
             intensity: str, plot_path: Path | None, fmt: str) -> None:
    """Throttle PLATFORM's power cap to delta_pi/k, every other constant (pi0 included) kept (S1 §4.4.4).

    \b
    Prints, per intensity, the power and the performance and energy efficiency relative to k = 1, as S1
    Fig. 13 draws them. PLATFORM: a profile with delta_pi, or a cost table from 'archline fit --model capped';
    --delta-pi-w gives delta_pi to a profile that lacks it.

    \b
    Examples:
      archline throttle gtx580 --delta-pi-w 150 --plot throttle.png
      archline throttle my-capped-costs.json -i 0.25,1,4,16
    """
    from archline.cli.params import intensities as parse_intensities
    from archline.fit.analyses.choi import throttling as th
    from archline.formats.platforms.profiles import load_platform

    pl = load_platform(platform)
    m = th.require_cap(th.with_power(pl.machine(precision, needed_for="throttling"), pi0_w, delta_pi_w), pl.name)
    sw = th.throttle_sweep(m, parse_intensities(intensity), range(1, max_divisor + 1))
    if plot_path is not None:
        th.plot_throttle(sw, plot_path, f"{pl.name} {precision.upper()}")
    if fmt == "json":
        echo_json({"platform": pl.name, "precision": precision, "emulated": pl.emulated, **sw.as_dict(),
                   **files_json(plot_path, f"S1 Fig. 13: power, performance and efficiency at delta_pi/k, {pl.name} "
                                           f"{precision.upper()}")})
        return
    tag = " [emulated]" if pl.emulated else ""
    click.echo(f"{pl.name} {precision.upper()}{tag}: pi0 {m.pi0_w:.4g} W, delta_pi {m.delta_pi_w:.4g} W "
               "(S1 Sec. 4.4.4: delta_pi/k, pi0 kept)")
    ks = [k for k in sw.divisors if k in (1, 2, 4, 8) or k == sw.divisors[-1]]
    idx = [sw.divisors.index(k) for k in ks]
    headers = ["I (flop/B)"] + [f"P k={k:g} (W)" for k in ks] + [f"perf k={k:g}" for k in ks[1:]] + \
        [f"eff k={k:g}" for k in ks[1:]]
    rows = []
    for j, i in enumerate(sw.intensities):
        rows.append([f"{i:g}"] + [f"{sw.power_w[r, j]:.4g}" for r in idx] +
                    [f"{sw.rel_perf[r, j]:.3f}" for r in idx[1:]] + [f"{sw.rel_eff[r, j]:.3f}" for r in idx[1:]])
    echo_table(headers, rows)
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
