"""``archline bound``: Elango et al. upper bounds on operational intensity (S2; model.md §12.2)."""

from __future__ import annotations

import json

import click

from archline.cli.output import format_option
from archline.cli.params import BYTES


@click.command("bound")
@click.argument("algorithm", required=False)
@click.option("--fast-memory", "fast_memory", type=BYTES, metavar="BYTES",
              help="fast-memory (cache) size S in bytes; K/M/G suffixes are binary (512K = 524288 B)")
@click.option("--word-bytes", type=click.Choice(["4", "8"]), default="8", show_default=True,
              help="bytes per word (the paper's words are 8-byte doubles)")
@click.option("--costs", metavar="COSTS",
              help="a cost table (.json), profile (.toml) or shipped platform name: "
              "adds floors on time and energy per flop and the best flop/J")
@click.option("--fft-bound", type=click.Choice(["full", "half"]), default="full", show_default=True,
              help="FFT's bound: full = log2(S) flop/word (S2 Thm 3.1), half = 0.5*log2(S) (the reading of S2 "
              "Sec. 6 and Fig. 4's text); see docs/analyses.md")
@format_option
@click.option("--list", "list_", is_flag=True, help="list the known algorithms with their formulas")
def bound(algorithm: str | None, fast_memory: int | None, word_bytes: str, costs: str | None, fft_bound: str,
          fmt: str, list_: bool) -> None:
    """Upper bound on the operational intensity of ALGORITHM with a fast memory of BYTES.

    \b
    OI_max(S) = W / (word_bytes * Q_min(S)), from I/O lower bounds valid for every schedule
    (Elango et al., TACO 2015). Algorithms: matmul, fft, cg, jacobi2d.

    \b
    Examples:
      archline bound fft --fast-memory 512K            2.0 flop/B (S = 65536 words)
      archline bound matmul --fast-memory 8M --costs i7-950
      archline bound --list
    """
    from archline.fit.analyses.elango import oi_bounds as ob

    if list_:
        rows = [{"algorithm": b.name, "title": b.title, "op_count": b.op_count,
                 "formula_flop_per_word": b.formula_flop_per_word, "certainty": b.certainty,
                 "citation": b.citation} for b in ob.BOUNDS.values()]
        if fmt == "json":
            click.echo(json.dumps(rows, indent=2))
        else:
            for r in rows:
                click.echo(f"{r['algorithm']:<9} OI <= {r['formula_flop_per_word']:<12} flop/word   "
                           f"{r['title']}  [{r['certainty']}; {r['citation']}]")
        return
    if algorithm is None:
        raise click.UsageError("give an ALGORITHM (or --list)")
    b = ob.get_bound(algorithm)   # unknown algorithm: one line listing the known ones
    if fast_memory is None:
        raise click.UsageError("--fast-memory BYTES is required")
    result = ob.oi_upper_bound(algorithm, float(fast_memory), int(word_bytes),
                               fft_bound if algorithm == "fft" else None)
    if costs is not None:
        from archline.formats.platforms.profiles import load_platform
        result = ob.with_costs(result, load_platform(costs))
    if fmt == "json":
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    r = result
    factor = next((f for n, f, _ in b.readings if n == r.reading), 1.0)
    scaled = "" if factor == 1.0 else f"{factor:g}*"     # the reading's factor on the printed formulas
    click.echo(f"{b.title}  ({b.name})")
    click.echo(f"  fast memory S          {r.fast_memory_bytes:.0f} B = {r.fast_memory_words:g} words "
               f"of {r.word_bytes} B")
    click.echo(f"  W                      {b.op_count}")
    q_min = b.io_lower_bound_words
    if scaled:      # W over the reading's bound: its formula in place of the full one
        f = b.formula_flop_per_word
        q_min = q_min.replace(f, f"({scaled}{f})") if f in q_min else f"({q_min}) / {factor:g}"
    click.echo(f"  Q_min (words)          {q_min}")
    click.echo(f"  OI upper bound         {r.oi_upper_flop_per_word:.6g} flop/word = "
               f"{r.oi_upper_flop_per_byte:.6g} flop/B   [{scaled}{b.formula_flop_per_word} flop/word]")
    click.echo(f"  source                 {b.citation}")
    if len(b.readings) > 1:
        why = next(w for n, _, w in b.readings if n == r.reading)
        click.echo(f"  reading                {r.reading}: {why}")
    if b.uncertain:
        click.echo("  UNCERTAIN              the paper's text is unclear here; see the note below")
    for n in b.notes:
        click.echo(f"  note                   {n}")
    if r.platform is not None:
        tag = "  (emulated)" if r.emulated else ""
        assert r.min_time_per_flop_s is not None and r.min_energy_per_flop_j is not None
        assert r.max_flop_per_j is not None and r.max_flop_per_s is not None
        click.echo(f"  on {r.platform} ({r.precision}){tag}:")
        click.echo(f"    time per flop     >= {r.min_time_per_flop_s * 1e12:.4g} ps   "
                   f"(<= {r.max_flop_per_s / 1e9:.4g} GFLOP/s)")
        click.echo(f"    energy per flop   >= {r.min_energy_per_flop_j * 1e12:.4g} pJ   "
                   f"(<= {r.max_flop_per_j / 1e9:.4g} GFLOP/J)")
