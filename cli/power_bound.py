"""``archline power-bound``: S1 §4.4.4's power-bounding scenario (a GTX Titan halved to 140 W against Arndale
GPUs), rebuilt from the values the thesis prints (S1 Table 6 is absent)."""

from __future__ import annotations

import click

from archline.cli.output import echo_json, format_option
from archline.cli.params import POSITIVE


@click.command("power-bound")
@click.option("--full-power-w", type=POSITIVE, default=280.0, show_default=True,
              help="the big node's full power (S1 §4.4.4: twice the 140 W it is halved to)")
@click.option("--capped-power-w", type=POSITIVE, default=140.0, show_default=True, help="the node power bound")
@click.option("--divisor", "k", type=click.FloatRange(min=1.0, min_open=True, max=1e6), default=8.0,
              show_default=True, help="the cap the bound corresponds to, delta_pi/k")
@click.option("--intensity", type=POSITIVE, default=0.25, show_default=True, help="flop/byte")
@click.option("--boards", type=click.IntRange(min=1), default=47, show_default=True,
              help="small boards that match the big node at full power (S1 §4.1: 47 Arndale GPUs)")
@click.option("--boards-ratio", type=POSITIVE, default=1.6, show_default=True,
              help="those boards' speed over the uncapped big node at INTENSITY (S1 Fig. 9: up to 1.6x)")
@format_option
def power_bound(full_power_w: float, capped_power_w: float, k: float, intensity: float, boards: int,
                boards_ratio: float, fmt: str) -> None:
    """S1 §4.4.4: halve the Titan's node power to 140 W (delta_pi/8); how fast is it, and how many small boards
    fit in 140 W and how much faster are they?

    \b
    pi0 and delta_pi from P_full = pi0 + delta_pi and P_cap = pi0 + delta_pi/k; tau_mem from tau_mem*pi0 =
    515 pJ/B, eps_mem 267 pJ/B and eps_hat = 1/16 GFLOP/J (S1 §4.4.3). The split of eps_hat into eps_flop and
    pi0*tau_flop is not printed, so the throttled rate is given over all of it.

    \b
    Example:
      archline power-bound              thesis: 0.31x, 23 boards, 2.8x
    """
    from archline.fit.analyses.choi.throttling import ThrottleError, titan_power_bound

    if capped_power_w >= full_power_w:
        raise ThrottleError("--capped-power-w must be below --full-power-w")
    r = titan_power_bound(full_power_w=full_power_w, capped_power_w=capped_power_w, k=k, intensity=intensity,
                          boards_full=boards, small_ratio_full=boards_ratio)
    if fmt == "json":
        echo_json(r.as_dict())
        return
    lo, hi = r.throttled_rate
    click.echo(f"pi0 {r.pi0_w:.4g} W, delta_pi {r.delta_pi_w:.4g} W (from {r.full_power_w:g} W and "
               f"{r.capped_power_w:g} W = pi0 + delta_pi/{r.k:g}); tau_mem {r.tau_mem_s_per_byte * 1e12:.4g} ps/B "
               f"({1e-9 / r.tau_mem_s_per_byte:.4g} GB/s)")
    click.echo(f"throttled rate at I = {r.intensity:g}: {lo:.3f}-{hi:.3f} of the uncapped "
               "(over every eps_flop in (0, eps_hat))   [S1 Sec. 4.4.4 prints approximately 0.31]")
    click.echo(f"boards within {r.capped_power_w:g} W: floor({r.boards_full} x {r.capped_power_w:g}/"
               f"{r.full_power_w:g}) = {r.boards}   [prints 23]")
    click.echo(f"{r.boards} boards against the throttled node: {r.small_ratio_full:g} x {r.boards}/{r.boards_full} / "
               f"rate = {r.speedup[0]:.2f}-{r.speedup[1]:.2f}x   [prints approximately 2.8: inconsistent, "
               "see docs/analyses.md]")
