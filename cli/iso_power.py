"""``archline iso-power``: N small systems against one big one at equal power (S1 §4.1, §5.2.3)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from archline.cli.output import echo_json, echo_table, files_json, format_option
from archline.cli.params import FIGURE_SUFFIXES, POSITIVE, OutPath
from archline.common.outputs import show


class Setting(click.ParamType):
    """KEY=VALUE, VALUE a positive finite number in SI units (J, J/B, W, flop/s, B/s)."""

    name = "KEY=VALUE"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, float]:
        if isinstance(value, tuple):
            return value  # type: ignore[return-value]
        from archline.fit.analyses.choi.cluster import SETTABLE

        key, sep, num = str(value).partition("=")
        key = key.strip()
        if not sep or key not in SETTABLE:
            self.fail(f"'{value}' is not KEY=VALUE with KEY one of {', '.join(SETTABLE)}", param, ctx)
        try:
            v = float(num)
        except ValueError:
            self.fail(f"'{num}' is not a number", param, ctx)
        if not (math.isfinite(v) and v > 0):
            self.fail(f"{key} must be a positive finite number, got '{num}'", param, ctx)
        return key, v


SETTING = Setting()


@click.command("iso-power")
@click.argument("big")
@click.argument("small")
@click.option("--budget-w", type=POSITIVE, default=None, help="power budget (default: the peak power of BIG)")
@click.option("--n", "n", type=click.IntRange(min=1), default=None,
              help="use this many SMALL systems instead of budget / power (e.g. the thesis's measured 22)")
@click.option("--power-a", type=POSITIVE, default=None, metavar="W", help="peak power of BIG (overrides its profile)")
@click.option("--power-b", type=POSITIVE, default=None, metavar="W", help="peak power of SMALL (overrides its profile)")
@click.option("--set-a", "set_a", type=SETTING, multiple=True,
              help="give BIG a constant its profile lacks, e.g. eps_flop_sp=30e-12 (SI units; repeatable)")
@click.option("--set-b", "set_b", type=SETTING, multiple=True,
              help="give SMALL a constant its profile lacks, e.g. pi0=2.5 (SI units; repeatable)")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--intensity", "-i", default="0.25:64", show_default=True, metavar="LIST",
              help="flop/byte values: '0.25,1,4' or powers of two 'LOW:HIGH'")
@click.option("--work-flop", type=POSITIVE, default=1e12, show_default=True,
              help="the workload whose time and energy are reported")
@click.option("--plot", "plot_path", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), metavar="FIG.png",
              help="draw S1 Fig. 16's time, energy and power panels against intensity")
@format_option
def iso_power(big: str, small: str, budget_w: float | None, n: int | None, power_a: float | None,
              power_b: float | None, set_a: tuple[tuple[str, float], ...],
              set_b: tuple[tuple[str, float], ...], precision: str, intensity: str, work_flop: float,
              plot_path: Path | None, fmt: str) -> None:
    """How many SMALL systems match BIG at equal power, and what each side delivers in time and energy.

    \b
    N = budget / peak power of one SMALL (budget: BIG's peak power, or --budget-w), rounded down. A peak
    power is the model's P_max when every constant is known (a fitted cost table), else the profile's TDP.
    N x SMALL has N times the flop rate, bandwidth and power of one; energy per flop is unchanged (the
    network is ignored, as in the thesis §4.1 and §5.2.3). BIG and SMALL are platform names, profiles or
    cost tables from 'archline fit'.

    \b
    Examples:
      archline iso-power titan arndale-gpu                 N from the profiles (250 W TDP, < 10 W board)
      archline iso-power titan jetson-tk1 --n 22 --plot tk1.png    the thesis's 22 boards (measured powers)
      archline iso-power gtx580-costs.json jetson-costs.json --budget-w 400 --format json
      archline iso-power titan jetson-tk1 --n 22 --set-a eps_flop_sp=40e-12 --set-a pi0=120 \\
          --set-b eps_flop_sp=25e-12 --set-b eps_mem=200e-12 --set-b pi0=2 --plot fig16.png

    \b
    --plot draws S1 Fig. 16's three panels (time roofline, energy arch line, power line). The Titan's and
    the Jetson's energy constants are in S1 Tables 6-7, which archline does not have: give them with
    --set-a/--set-b (values you measured or assume), or pass cost tables; a side without them has no
    energy or power curve, and the figure says so.

    More in docs/analyses.md.
    """
    from archline.cli.params import intensities as parse_intensities
    from archline.fit.analyses.choi.cluster import iso_power as compute
    from archline.fit.analyses.choi.cluster import (
        missing_energy,
        plot_iso_power,
        settings_dict,
        system,
        with_constants,
    )
    from archline.formats.platforms.profiles import load_platform

    pa = with_constants(load_platform(big), settings_dict(set_a, "--set-a"))
    pb = with_constants(load_platform(small), settings_dict(set_b, "--set-b"))
    a = system(pa, precision, power_a)
    b = system(pb, precision, power_b)
    r = compute(a, b, budget_w=budget_w, n=n, intensities=parse_intensities(intensity), work_flop=work_flop)
    if plot_path is not None:
        missing = [f"{p.name}: no {', '.join(m)}" for p in (pa, pb) if (m := missing_energy(p, precision))]
        plot_iso_power(r, plot_path, precision, missing)
    if fmt == "json":
        echo_json({"precision": precision, "source": "thesis §4.1, §5.2.3", **r.as_dict(),
                   **files_json(plot_path, f"{precision.upper()} iso-power comparison of the two systems against "
                                           "intensity (thesis §4.1, §5.2.3)")})
        return
    tag = " [emulated]" if a.emulated or b.emulated else ""
    for s in (a, b):
        pw = "unknown" if s.peak_power_w is None else f"{s.peak_power_w:.4g} W"
        bw = "-" if s.peak_byte_per_s is None else f"{s.peak_byte_per_s / 1e9:.4g} GB/s"
        click.echo(f"{s.name}: {s.peak_flop_per_s / 1e9:.4g} GFLOP/s, {bw}, peak power {pw} ({s.power_source})")
    click.echo(f"N = {r.n_small} x {b.name} ({r.n_source}){tag}")
    bwr = r.bandwidth_ratio
    click.echo(f"aggregate peak: {r.compute_ratio:.3g}x the flop rate"
               + ("" if bwr is None else f", {bwr:.3g}x the bandwidth") + f" of one {a.name}")

    def fmt_v(v: float | None, scale: float = 1.0) -> str:
        return "-" if v is None else f"{v / scale:.4g}"

    echo_table(["I (flop/B)", f"{a.name} GFLOP/s", f"{r.n_small}x GFLOP/s", "speedup", f"{a.name} T (s)",
                f"{r.n_small}x T (s)", f"{a.name} E (J)", f"{r.n_small}x E (J)", f"{a.name} W", f"{r.n_small}x W"],
               [[f"{p['intensity']:g}", fmt_v(p["a_flop_per_s"], 1e9), fmt_v(p["b_flop_per_s"], 1e9),
                 fmt_v(p["speedup_b_over_a"]), fmt_v(p["a_time_s"]), fmt_v(p["b_time_s"]),
                 fmt_v(p["a_energy_j"]), fmt_v(p["b_energy_j"]), fmt_v(p["a_power_w"]), fmt_v(p["b_power_w"])]
                for p in r.rows])
    click.echo(f"T and E: for {work_flop:g} flop of work at each intensity")
    for note in r.notes:
        click.echo(f"note: {note}")
    if plot_path is not None:
        click.echo(f"wrote {show(plot_path)}")
