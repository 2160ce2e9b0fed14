"""``archline powers``: power across platforms (S1 Ch. 4): Fig. 12's comparison, Fig. 14's throttling spread and
the pi0-share correlation (S1 §4.4.3-4.4.4)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from archline.cli.iso_power import Setting
from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, POSITIVE, OutPath
from archline.common.outputs import show


class PlatformSetting(click.ParamType):
    """PLATFORM:KEY=VALUE, VALUE a positive finite number in SI units (J, J/B, W, flop/s, B/s)."""

    name = "PLATFORM:KEY=VALUE"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, str, float]:
        if isinstance(value, tuple):
            return value  # type: ignore[return-value]
        plat, sep, rest = str(value).partition(":")
        if not (sep and plat.strip()):
            self.fail(f"'{value}' is not PLATFORM:KEY=VALUE", param, ctx)
        key, v = Setting().convert(rest, param, ctx)     # KEY=VALUE as iso-power's --set-a reads it
        return plat.strip(), key, v


def _g(v: float | None, scale: float = 1.0, fmt: str = ".3g") -> str:
    return "-" if v is None or not math.isfinite(v) else format(v * scale, fmt)


@click.command("powers")
@click.argument("platforms", nargs=-1)
@click.option("--kind", type=click.Choice(["compare", "throttle-spread", "pi0-share"]), default="compare",
              show_default=True, help="S1 Fig. 12, S1 Fig. 14, or the pi0-share correlation of S1 Sec. 4.4.3")
@click.option("--set", "settings", type=PlatformSetting(), multiple=True, metavar="PLATFORM:KEY=VALUE",
              help="give a platform a constant its profile lacks, e.g. titan:delta_pi=160 (SI units; repeatable)")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--divisor", type=POSITIVE, default=8.0, show_default=True, metavar="K",
              help="throttle-spread: the power cap delta_pi/K (K > 1)")
@click.option("--intensity", "-i", default="0.25:64", show_default=True, metavar="LIST",
              help="flop/byte values: '0.25,1,4' or powers of two 'LOW:HIGH'")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw the kind's figure (S1 Fig. 12, Fig. 14, or the pi0-share scatter)")
@format_option
def powers(platforms: tuple[str, ...], kind: str, settings: tuple[tuple[str, str, float], ...], precision: str,
           divisor: float, intensity: str, plot_path: Path | None, fmt: str) -> None:
    """Compare PLATFORMS' power (default: the twelve of S1 Table 6) as S1 Ch. 4 does.

    \b
    --kind compare          S1 Fig. 12: modelled power against intensity, by decreasing peak flop/J, with
                            pi0, delta_pi, eps_mem + tau_mem*pi0 per byte and the memory efficiency
    --kind throttle-spread  S1 Fig. 14: performance and efficiency at delta_pi/K relative to delta_pi
    --kind pi0-share        S1 Sec. 4.4.3: pi0/(pi0 + delta_pi), the count above 50%, and its correlation
                            with peak energy efficiency
    S1 Table 6 (every platform's pi0, delta_pi, eps_flop) is absent from the thesis: give what a profile lacks
    with --set PLATFORM:KEY=VALUE, or pass cost tables from 'archline fit --model capped'.

    \b
    Examples:
      archline powers xeon-phi titan arndale-gpu
      archline powers titan --kind throttle-spread --set titan:pi0=120 --set titan:delta_pi=160 \\
          --set titan:eps_flop_sp=30e-12 --set titan:peak_flop_per_s_sp=3.69e12 \\
          --set titan:peak_byte_per_s=233e9 --plot fig14.png
    """
    from archline.cli.params import intensities as parse_intensities
    from archline.fit.analyses.choi import powers as pw

    if not divisor > 1:
        raise pw.PowersError(f"--divisor must be > 1, got {divisor:g}")
    names = list(platforms) or list(pw.S1_TABLE6)
    grid = parse_intensities(intensity)
    pps = pw.load(names, pw.settings_by_platform(names, settings), precision)
    if kind == "compare":
        _compare(pw.compare(pps, grid), precision, plot_path, fmt)
    elif kind == "throttle-spread":
        _spread(pw.throttle_spread(pps, grid, divisor), plot_path, fmt)
    else:
        _share(pw.pi0_share(pps), plot_path, fmt)
    if plot_path is not None and fmt != "json":
        click.echo(f"wrote {show(plot_path)}")


def _compare(c: object, precision: str, plot_path: Path | None, fmt: str) -> None:
    from archline.fit.analyses.choi.powers import Comparison
    from archline.fit.plots.powers import plot_compare

    assert isinstance(c, Comparison)
    if plot_path is not None:
        plot_compare(c, plot_path, precision)
    if fmt == "json":
        echo_json({"kind": "compare", "precision": precision, **c.as_dict(),
                   **files_json(plot_path, f"S1 Fig. 12: {precision.upper()} modelled power against intensity "
                                           "per platform")})
        return
    click.echo(f"S1 Fig. 12 ({precision.upper()}): by decreasing peak energy efficiency; '-' where a constant is "
               "missing (S1 Table 6 is absent)")
    rows = []
    for p in c.platforms:
        lo, hi = c.power_range(p.name) if p.name in c.power_w else (None, None)
        m = p.machine
        rows.append([p.name + (" [emulated]" if p.emulated else ""), _g(p.peak_flop_per_j, 1e-9),
                     _g(p.memory_flop_per_j, 1e-9), _g(p.streaming_j_per_byte, 1e12, ".4g"),
                     _g(p.pi0_w if m is None else m.pi0_w), _g(m.delta_pi_w if p.capped and m else None),
                     _g(p.pi0_share, 1, ".2f"), _g(lo), _g(hi), ", ".join(p.missing) or "-"])
    echo_table(["platform", "peak Gflop/J", "mem Gflop/J", "eps_mem+tau_mem*pi0 pJ/B", "pi0 W", "delta_pi W",
                "pi0 share", "P min W", "P max W", "missing"], rows)


def _spread(s: object, plot_path: Path | None, fmt: str) -> None:
    from archline.fit.analyses.choi.powers import Spread
    from archline.fit.plots.powers import plot_spread

    assert isinstance(s, Spread)
    if plot_path is not None:
        plot_spread(s, plot_path)
    if fmt == "json":
        echo_json({"kind": "throttle-spread", **s.as_dict(),
                   **files_json(plot_path, "S1 Fig. 14: performance and efficiency at delta_pi/K relative to "
                                           "delta_pi")})
        return
    click.echo(f"S1 Fig. 14: delta_pi/{s.divisor:g} relative to delta_pi (pi0 and every other constant kept)")
    rows = [[n, f"{i:g}", f"{s.power_drop[n][j]:.3f}", f"{s.rel_perf[n][j]:.3f}", f"{s.rel_eff[n][j]:.3f}"]
            for n in s.rel_perf for j, i in enumerate(s.intensities)]
    echo_table(["platform", "I (flop/B)", "power", "performance", "energy efficiency"], rows)
    for n, miss in s.skipped.items():
        click.echo(f"{n}: not throttled (no {', '.join(miss)})")


def _share(r: object, plot_path: Path | None, fmt: str) -> None:
    from archline.fit.analyses.choi.powers import Pi0Share
    from archline.fit.plots.powers import plot_pi0_share

    assert isinstance(r, Pi0Share)
    if plot_path is not None:
        plot_pi0_share(r, plot_path)
    if fmt == "json":
        echo_json({"kind": "pi0-share", **r.as_dict(),
                   **files_json(plot_path, "S1 Sec. 4.4.3: pi0/(pi0 + delta_pi) against peak energy efficiency")})
        return
    rows = [[p.name, _g(p.machine.pi0_w if p.machine else None), _g(p.machine.delta_pi_w if p.machine else None),
             _g(p.pi0_share, 1, ".3f"), _g(p.peak_flop_per_j, 1e-9)] for p in r.platforms]
    if rows:
        echo_table(["platform", "pi0 W", "delta_pi W", "pi0/(pi0+delta_pi)", "peak Gflop/J"], rows)
    corr = "not computable (needs 3 platforms with pi0, delta_pi and the energy constants)" \
        if r.correlation is None else f"{r.correlation:.3f}"
    click.echo(f"above 50%: {r.above_half} of {len(r.platforms)}   [S1 Sec. 4.4.3 prints 7 of 12]")
    click.echo(f"correlation with peak energy efficiency: {corr}   [S1 Sec. 4.4.3 prints about -0.6]")
    for n, miss in r.skipped.items():
        click.echo(f"{n}: left out (no {', '.join(miss)})")
