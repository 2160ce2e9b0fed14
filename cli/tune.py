"""``archline tune``: choose the DVFS setting with the least predicted energy (S1 §5.3.2, Table 8)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from archline.cli.params import POSITIVE


@click.command("tune")
@click.option("--costs", required=True, metavar="DVFS_COSTS",
              help="a DVFS cost table (.json from 'archline fit --model dvfs', with a settings list)")
@click.option("--intensity", "intensity", type=POSITIVE, metavar="I",
              help="operational intensity in flop/B: rank the settings by predicted energy at I")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default="sp", show_default=True)
@click.option("--flops-per-cycle", type=POSITIVE, metavar="N",
              help="flops per core clock (2 x cores), for tau_flop when the table has none")
@click.option("--bytes-per-cycle", type=POSITIVE, metavar="N",
              help="DRAM bytes per memory clock, for tau_mem when the table has none")
@click.option("--measured", type=click.Path(dir_okay=False, path_type=Path), metavar="RESULTS.csv",
              help="measured result rows at the same settings: report Model and Time Oracle as in S1 Table 8")
@click.option("--paper/--no-paper", default=True, show_default=True,
              help="show S1 Table 8 (Jetson TK1) beside the --measured report")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def tune(costs: str, intensity: float | None, precision: str, flops_per_cycle: float | None,
         bytes_per_cycle: float | None, measured: Path | None, paper: bool, fmt: str) -> None:
    """Pick the (core, memory) clock setting that saves the most energy, and compare with race-to-halt.

    \b
    Model: least predicted energy E/W = eps_flop + eps_mem/I + pi0*max(tau_flop, tau_mem/I) with the
    setting's costs (thesis eq.44-48). Race-to-halt: the fastest setting. With --measured, every case in the
    data is judged against the measured optimum (mispredictions; energy lost mean/min/max over them).

    \b
    Examples:
      archline tune --costs tk1-dvfs.json --intensity 4 --flops-per-cycle 384 --bytes-per-cycle 16
      archline tune --costs tk1-dvfs.json --measured results/dvfs.csv
    """
    from archline.fit.analyses.choi import dvfs_tune as dt
    from archline.formats.platforms.profiles import load_platform

    if intensity is None and measured is None:
        raise click.UsageError("give --intensity I, --measured RESULTS.csv, or both")
    platform = load_platform(costs)
    out: dict[str, object] = {"platform": platform.name, "emulated": platform.emulated,
                              "source": "S1 §5.3.2, Table 8"}
    ranked: list[dt.Ranked] = []
    if intensity is not None:
        ranked = dt.rank_settings(platform, intensity, precision, flops_per_cycle=flops_per_cycle,
                                  bytes_per_cycle=bytes_per_cycle)
        best, race = ranked[0], dt.race_to_halt(ranked)
        saving = 100.0 * (race.energy_per_flop_j - best.energy_per_flop_j) / race.energy_per_flop_j
        out["intensity_flop_per_byte"] = intensity
        out["precision"] = precision
        out["settings"] = [{"core_mhz": r.setting.core_mhz, "mem_mhz": r.setting.mem_mhz,
                            "core_v": r.setting.core_v, "mem_v": r.setting.mem_v,
                            "energy_per_flop_j": r.energy_per_flop_j, "time_per_flop_s": r.time_per_flop_s,
                            "power_w": r.power_w} for r in ranked]
        out["model_choice"] = {"core_mhz": best.setting.core_mhz, "mem_mhz": best.setting.mem_mhz}
        out["race_to_halt"] = {"core_mhz": race.setting.core_mhz, "mem_mhz": race.setting.mem_mhz}
        out["energy_saving_vs_race_to_halt_pct"] = saving
    evaluation = None
    if measured is not None:
        evaluation = dt.evaluate(platform, dt.read_measured(measured))
        out["table8"] = [r.as_dict() for r in evaluation.rows]
        out["skipped"] = evaluation.skipped
    if fmt == "json":
        click.echo(json.dumps(out, indent=2))
        return
    tag = " (emulated)" if platform.emulated else ""
    if ranked:
        best, race = ranked[0], dt.race_to_halt(ranked)
        click.echo(f"DVFS settings of {platform.name}{tag} at I = {intensity:g} flop/B ({precision}), "
                   "least predicted energy first:")
        click.echo(f"  {'core/mem MHz':<14}{'pJ/flop':>10}{'ps/flop':>10}{'W':>8}")
        for r in ranked:
            mark = ("  <- model choice" if r is best else "") + ("  <- race-to-halt" if r is race else "")
            click.echo(f"  {r.setting.label:<14}{r.energy_per_flop_j * 1e12:>10.4g}"
                       f"{r.time_per_flop_s * 1e12:>10.4g}{r.power_w:>8.3g}{mark}")
        click.echo(f"model choice {best.setting.label} MHz uses {out['energy_saving_vs_race_to_halt_pct']:.2f}% "
                   f"less energy than race-to-halt ({race.setting.label} MHz)")
    if evaluation is not None:
        if ranked:
            click.echo("")
        click.echo(f"Autotuning against measured data ({measured}), S1 Table 8 format:")
        ref = {(r.benchmark, r.strategy): r for r in dt.paper_table8()} if paper else None
        click.echo(dt.format_table8(evaluation.rows, ref))
        click.echo("energy lost (%) = 100*(E(choice) - E_min)/E_min over the mispredicted cases")
        for s in evaluation.skipped:
            click.echo(f"skipped {s}")
