"""archline model show|predict|plot"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from archline.cli.output import echo_files, echo_json, echo_table, format_option, panels
from archline.cli.params import FIGURE_SUFFIXES, POSITIVE, OutPath, check_finite, intensities
from archline.fit.summary import (
    SYMBOLS,
    energy_missing,
    platform_summary,
    predict_rows,
    predict_time_rows,
    time_only,
)
from archline.model.units import display

if TYPE_CHECKING:
    from archline.formats.platforms.profiles import Platform

precision_option = click.option("--precision", type=click.Choice(["sp", "dp", "both"]), default="both",
                                show_default=True, help="single or double precision (flop costs differ)")


def _precisions(platform_name: str, precision: str) -> list[str] | None:
    return None if precision == "both" else [precision]


def _cautions(pl: Platform) -> dict[str, Any]:
    """JSON keys ``not_trusted`` (figure names) and ``cautions`` (one line each), where the platform has any."""
    out: dict[str, Any] = {k: v for k, v in (("not_trusted", pl.not_trusted), ("cautions", pl.cautions)) if v}
    if "nominal (ERT spec)" in pl.notes:      # an ERT file's spec peaks
        out["notes"] = pl.notes
    return out


def _stderr(pl: Platform, sym: str, precision: str) -> float | None:
    """The standard error of the constant behind ``sym`` at ``precision`` (a fitted table's, localhost's spread);
    None for a derived symbol or a constant without one."""
    for key in (f"{sym}_{precision}", sym):
        c = pl.constants.get(key)
        if c is not None:
            return c.stderr if c.value is not None and c.stderr is not None and c.stderr > 0 else None
    return None


@click.group()
def model() -> None:
    """The energy-roofline model of a platform or a fitted cost table.

    \b
    NAME_OR_COSTS is a platform name (`archline platforms list`), a profile
    .toml, a cost table .json written by `archline fit`, or the roofline.json
    of the Empirical Roofline Toolkit (ERT): its measured ceilings become the
    time constants (tau = 1/rate; no energy: no meter stands behind it):
      archline model show Results.mymachine/roofline.json
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
    from archline.formats.platforms.profiles import load_platform

    pl = load_platform(name_or_costs)
    summary = platform_summary(pl, _precisions(name_or_costs, precision))
    if fmt == "json":   # localhost's NOT TRUSTED figures and a copy from another machine (also said on stderr)
        echo_json({**summary, **_cautions(pl)})
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
            v, u = display(summary[p].get(sym), unit)
            shown_unit = u or display(1.0, unit)[1]       # a dash (no value) keeps the symbol's unit
            se = _stderr(pl, sym, p) if summary[p].get(sym) is not None else None
            vals.append(v if se is None else f"{v} ± {float(display(se, unit)[0]):.2g}")   # a fitted constant's stderr
        rows.append([sym, *vals, shown_unit, meaning])
    if rows:
        echo_table(["symbol", *[p.upper() for p in precs], "unit", "meaning"], rows)
    else:
        click.echo("nothing can be computed from this profile's constants")
    if time_only(pl):     # every energy answer is absent for one reason: said once, not per symbol and precision
        untimed = {p: [s for s, why in summary[p].get("missing", {}).items() if str(why).startswith("needs tau_")]
                   for p in precs}
        for p, syms in untimed.items():    # a precision the source lacks (an ERT file of dp only): its own reason
            if syms:
                click.echo(f"no {p.upper()} time answers ({', '.join(syms)}): "
                           f"{pl.source(f'tau_flop_{p}') or f'no tau_flop_{p}'}")
        absent = sorted({s for p in precs for s in summary[p].get("missing", {}) if s not in untimed[p]},
                        key=list(SYMBOLS).index)
        click.echo(f"no energy answers ({', '.join(absent)}): {pl.source('pi0') or 'no energy constants'}")
    if "nominal (ERT spec)" in pl.notes:      # an ERT file's spec peaks (ert_file.py), beside its measured ones
        click.echo(pl.notes[pl.notes.index("nominal (ERT spec)"):])
    for p in precs if not time_only(pl) else ():
        by_reason: dict[str, list[str]] = {}
        for sym, why in summary[p].get("missing", {}).items():
            by_reason.setdefault(why, []).append(sym)
        for why, syms in by_reason.items():
            click.echo(f"cannot compute {', '.join(syms)} ({p.upper()}): {why}")
    if "delta_pi" not in summary[precs[0]] and "missing" not in summary[precs[0]]:
        why = pl.source("delta_pi")
        click.echo("\ndelta_pi (the power cap) is not known, so the free (uncapped) model is used"
                   + (f" ({why})" if why else ""))


@model.command("predict")
@click.argument("name_or_costs")
@click.option("--intensity", "-i", required=True, metavar="LIST",
              help="flop/byte values: '0.25,1,4' or a range of powers of two '0.25:64'")
@click.option("--cap-divisor", type=POSITIVE, default=1.0, show_default=True,
              help="throttle: use delta_pi/K (S1 §4.4.4); needs delta_pi")
@click.option("--precision", type=click.Choice(["sp", "dp"]), default=None,
              help="[default: sp, or dp where the platform has only dp (a time table of a dp-only run)]")
@format_option
def predict_cmd(name_or_costs: str, intensity: str, cap_divisor: float, precision: str | None, fmt: str) -> None:
    """Performance, energy efficiency and power at given intensities.

    \b
    Example:
      archline model predict gtx580 --intensity 0.25:64 --precision dp
    """
    from archline.formats.platforms.profiles import load_platform

    pl = load_platform(name_or_costs)
    values = intensities(intensity)
    if precision is None:           # sp unless the platform has dp only (localhost's quick run measures dp)
        precision = "dp" if pl.value("tau_flop_sp") is None and pl.value("tau_flop_dp") is not None else "sp"
    no_energy = energy_missing(pl, precision)
    if no_energy is not None:       # a time-only platform: the time roofline, energy answers absent and why
        if cap_divisor != 1.0:
            pl.require("delta_pi", "--cap-divisor")
        rows = predict_time_rows(pl, precision, values)
        check_finite(rows, ("gflop_per_s",))
        capped = False
    else:
        m = pl.machine(precision, needed_for="model predict")
        rows = predict_rows(m, values, cap_divisor)
        check_finite(rows, ("gflop_per_s", "gflop_per_j", "power_w"))
        capped = m.capped
    if fmt == "json":
        echo_json({"platform": pl.name, "precision": precision, "emulated": pl.emulated, "capped": capped,
                   "cap_divisor": cap_divisor, "points": rows,
                   **({"energy_missing": no_energy} if no_energy is not None else {}), **_cautions(pl)})
        return
    model_name = ("time roofline only (no energy constants)" if no_energy is not None
                  else "capped model" if capped else "free model (delta_pi unknown)")
    click.echo(f"{pl.name} {precision.upper()}: {model_name}" + (" [emulated]" if pl.emulated else ""))

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.4g}"

    echo_table(["I (flop/B)", "GFLOP/s", "GFLOP/J", "power (W)", "bound by"],
               [[f"{r['intensity']:g}", num(r["gflop_per_s"]), num(r["gflop_per_j"]), num(r["power_w"]),
                 r["bound"]] for r in rows])
    if no_energy is not None:
        click.echo(f"note: GFLOP/J and power: - ({no_energy})")


@model.command("plot")
@click.argument("name_or_costs", nargs=-1, required=True)
@click.option("--out", "-o", type=OutPath(suffixes=FIGURE_SUFFIXES, path_type=Path), default=None,
              help="output figure (.png, .pdf, .svg); default NAME.png")
@click.option("--precision", type=click.Choice(["sp", "dp", "both"]), default="both", show_default=True)
@format_option
def plot_cmd(name_or_costs: tuple[str, ...], out: Path | None, precision: str, fmt: str) -> None:
    """Roofline, arch line and power line on one figure (log2 axes, balance points marked, cap shown).

    \b
    Examples:
      archline model plot gtx580 --out gtx580.png
      archline model plot gtx580 gtx680 --precision sp --out two.png --format json
    """
    from archline.common.outputs import safe_component
    from archline.fit.figure_layout import check_figure_format
    from archline.fit.plots.rooflines import KINDS, curves_for, plot_model
    from archline.formats.platforms.profiles import load_platform

    if out is not None:
        check_figure_format(out)    # a .pgf without TeX: one line before anything is read or drawn
    pls = [load_platform(n) for n in name_or_costs]
    precs = ["sp", "dp"] if precision == "both" else [precision]
    curves = curves_for(pls, [p for p in precs if all(p in pl.precisions_available() for pl in pls)]
                        or [p for p in precs if all(p in pl.precisions_timed() for pl in pls)] or precs)
    kinds = ("roofline",) if all(c.time_only for c in curves) else KINDS   # no energy constants: time roofline
    if kinds != KINDS:
        click.echo("archline: warning: no energy constants (no meter), so only the time roofline is drawn", err=True)
    path = plot_model(curves, out or Path(f"{safe_component(pls[0].name)}.png"), kinds=kinds)  # name made safe
    echo_files(fmt, [(path, f"{panels(kinds)} of {', '.join(c.label for c in curves)}")])


@model.command("peak")
@click.argument("name_or_profile")
@click.option("--mix", "mix_name", required=True, metavar="FILE|fmmu",
              help="instruction mix (.toml with [instructions.<class>] count, unit = core|sfu, flops); "
                   "'fmmu' is the FMM_U inner loop of the thesis")
@format_option
def peak_cmd(name_or_profile: str, mix_name: str, fmt: str) -> None:
    """The peak flop rate for a given instruction mix, from the profile's issue rules ([issue] table).

    \b
    Each class's cycles per warp instruction (32 lanes / its units), the scalar instructions an SM issues
    a cycle while it runs, and its flops per instruction give the mix's average flops per cycle per SM:
      peak = SMs x clock x sum_c(n_c*cycles_c*flops_per_cycle_c) / sum_c(n_c*cycles_c)
    (the thesis §3.4.4; docs/model.md). The FMA-only peak assumes every instruction is an FMA.

    \b
    Examples:
      archline model peak gtx580 --mix fmmu         788 GFLOP/s for FMM_U, against 1581 with FMAs only
      archline model peak gtx580 --mix mymix.toml --format json
    """
    from archline.fit.analyses.choi.mix_peak import issue_rules, load_mix, mix_peak
    from archline.formats.platforms.profiles import load_platform

    pl = load_platform(name_or_profile)
    rules = issue_rules(pl)
    mix = load_mix(mix_name)
    r = mix_peak(rules, mix)
    fma_peak = pl.value("peak_flop_per_s_sp")
    out = {"platform": pl.name, "mix": mix.name, "mix_source": mix.source, "issue_source": rules.source,
           "flops_per_mix": mix.flops, "instructions_per_mix": mix.instructions, **r.as_dict(),
           "fma_peak_flop_per_s": fma_peak,
           "fraction_of_fma_peak": None if not fma_peak else r.peak_flop_per_s / fma_peak}
    if fmt == "json":
        echo_json(out)
        return
    click.echo(f"{pl.name}, mix {mix.name}: {mix.flops:g} flops in {mix.instructions:g} instructions "
               f"({rules.sms} SMs x {rules.cores_per_sm} cores, {rules.sfus_per_sm} SFUs, "
               f"{rules.clock_hz / 1e9:g} GHz)")
    echo_table(["class", "count", "unit", "flops/instr", "cycles", "instr/cycle", "flops/cycle"],
               [[c["class"], f"{c['count']:g}", c["unit"], f"{c['flops_per_instruction']:g}", f"{c['cycles']:g}",
                 f"{c['instructions_per_cycle']:g}", f"{c['flops_per_cycle']:g}"] for c in r.per_class])
    click.echo(f"cycles per mix (per SM, one warp): {r.cycles_per_mix:g}")
    click.echo(f"average issue rate: {r.instructions_per_cycle:.4g} scalar instructions/cycle/SM; "
               f"{r.flops_per_cycle:.4g} flops/cycle/SM")
    click.echo(f"instruction-mix peak: {r.peak_flop_per_s / 1e9:.4g} GFLOP/s"
               + (f" (FMA-only peak {fma_peak / 1e9:.4g} GFLOP/s: {100 * r.peak_flop_per_s / fma_peak:.1f}%)"
                  if fma_peak else ""))


@model.command("keckler")
@click.argument("name_or_costs", default="gtx580")
@format_option
def keckler_cmd(name_or_costs: str, fmt: str) -> None:
    """What the fitted flop and DRAM costs hold beyond Keckler et al.'s circuit energies (Choi et al. §V-A).

    \b
    Keckler et al. give a Fermi-class double-precision FMA 50 pJ (25 pJ per flop), a DRAM byte 253-389 pJ and
    an SRAM read or write 1.75 pJ per byte. The fitted eps_flop_dp minus 25 pJ is the instruction overhead of
    a flop; spread over a 4-byte word it adds to the DRAM cost, and so does one write and one read of L1 and
    of L2 (7 pJ/B). The result is compared with the fitted eps_mem.

    \b
    Examples:
      archline model keckler                 the GTX 580: 187 pJ overhead per flop, 306.8-442.8 pJ/B against 513
      archline model keckler my-costs.json --format json
    """
    from archline.fit.analyses.choi.keckler import keckler_comparison
    from archline.formats.platforms.profiles import load_platform

    k = keckler_comparison(load_platform(name_or_costs))
    if fmt == "json":
        echo_json({**k.as_dict(), "source": "Choi et al., IPDPS 2013, §V-A; Keckler et al., IEEE Micro 2011"})
        return

    def pj(v: float) -> str:
        return f"{v * 1e12:.4g}"

    def rng(v: tuple[float, float]) -> str:
        return f"{pj(v[0])}-{pj(v[1])}"

    click.echo(f"{k.platform}: fitted eps_flop_dp {pj(k.eps_flop_dp_j)} pJ/flop, "
               f"eps_mem {pj(k.eps_mem_j_per_byte)} pJ/B")
    echo_table(["quantity", "value", "unit", "how"], [
        ["Keckler flop (FPU only)", "25", "pJ/flop", "50 pJ per DP FMA / 2 flops"],
        ["fitted / Keckler", f"{k.ratio_to_keckler_flop:.3g}", "x", "eps_flop_dp / 25 pJ"],
        ["overhead per flop", pj(k.overhead_per_flop_j), "pJ/flop", "eps_flop_dp - 25 pJ"],
        ["overhead per SP byte", pj(k.overhead_per_byte_j), "pJ/B", "overhead / 4-byte word"],
        ["DRAM + overhead", rng(k.mem_with_overhead_j_per_byte), "pJ/B", "253-389 pJ/B + overhead per byte"],
        ["L1 + L2 SRAM", pj(k.sram_j_per_byte), "pJ/B", "2 levels x (write + read) x 1.75 pJ/B"],
        ["total estimate", rng(k.total_estimate_j_per_byte), "pJ/B", "DRAM + overhead + SRAM"],
        ["fitted eps_mem - estimate", rng(k.fitted_minus_estimate_j_per_byte), "pJ/B",
         "cache management, tag matching, ..."],
    ])
