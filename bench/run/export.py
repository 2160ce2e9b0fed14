"""The rows ``archline bench export-ert`` summarises, read once through the results file's owner and checked: a file
that is not an ``archline.results/1`` CSV, a file named twice, a time that is not a positive number and a rate no
machine reaches are each one line, never a silent drop or a roofline.json of nonsense; a failed checksum is a
warning (the row stays out of the peaks, and in the JSON's checksum count)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.run.summary import LEVELS, PRECISION_FLOPS, checksum_state, summarize
from archline.common.files import unique_inputs
from archline.common.outputs import show
from archline.common.peaks import TRUE_WORDS
from archline.formats import schema
from archline.formats.ert_roofline import MAX_GB_PER_S, MAX_GFLOP_PER_S, cpu_model, figure_name
from archline.formats.results_check import is_emulated
from archline.formats.results_file import ResultsFile

log = logging.getLogger("archline.bench")


class NonPhysicalError(BenchError):
    """A results row whose time or rate no machine has (exit 2, naming file, line and column)."""


def _float(v: str | None) -> float | None:
    """A CSV cell's number (None when empty, NaN when not a number): Python's ``1_0`` (10) is not a number in a
    CSV, as for every other reader of the file (pyarrow, pandas)."""
    if v is None or v.strip() == "":
        return None
    if "_" in v:
        return math.nan
    try:
        return float(v)
    except ValueError:
        return math.nan


def _bad(v: float) -> str:
    """Why a count or rate is not one, in words: negative, not a number, infinite, or too large."""
    if math.isnan(v):
        return "not a number"
    if math.isinf(v):
        return "infinite"
    return "negative" if v < 0 else ""


def check_row(row: dict[str, str], where: str) -> None:
    """Refuse ``row`` (at ``where``: ``file:line``) when its time is not a positive finite number of seconds, a count
    is negative or not a number, or it implies a rate above :data:`MAX_GFLOP_PER_S` / :data:`MAX_GB_PER_S`."""
    t = _float(row.get("time_s"))
    if t is None or not (math.isfinite(t) and t > 0):
        raise NonPhysicalError(f"{where}: time_s = {row.get('time_s')!r} is not a positive number of seconds; "
                               "fix or remove the row")
    checks = [(col, "GFLOP/s", MAX_GFLOP_PER_S) for _, col in PRECISION_FLOPS] + [
        (col, "GB/s", MAX_GB_PER_S) for col, _ in LEVELS]
    for col, unit, bound in checks:
        v = _float(row.get(col))
        if v is None:
            continue
        if why := _bad(v):
            raise NonPhysicalError(f"{where}: {col} = {row.get(col)} is {why}, not a count; fix or remove the row")
        if v / t / 1e9 > bound:
            raise NonPhysicalError(f"{where}: {col} = {row.get(col)} in time_s = {t:g} is {v / t / 1e9:.3g} {unit}, "
                                   f"more than any machine (limit {bound:g}); fix or remove the row")


def warning(message: str) -> None:
    """A warning of the export, printed as ``archline: warning: ...`` on stderr."""
    log.warning(f"archline: warning: {message}")


def _file_rows(p: Path) -> tuple[list[dict[str, str]], str]:
    """The rows of one results file as text cells, and how its rows are named (``line`` for a CSV, whose header is
    line 1; ``row`` for Parquet): a CSV through its owner (:class:`ResultsFile`), a Parquet file through the data
    set's (:func:`archline.formats.dataset.read_dataset_table`)."""
    from archline.formats.dataset import PARQUET_SUFFIXES, DatasetError, read_dataset_table

    if p.suffix.lower() in PARQUET_SUFFIXES:
        try:
            table = read_dataset_table(p)
        except DatasetError as e:
            raise BenchError(str(e)) from None
        missing = [c for c in schema.REQUIRED_FOR_FIT if c not in table.column_names]
        if missing:
            raise BenchError(f"{show(p)}: not an {schema.SCHEMA} file: missing column(s) {', '.join(missing)}")
        return [{k: schema.cell(v) for k, v in r.items()} for r in table.to_pylist()], "row"
    with ResultsFile.open(p) as rf:
        rf.check_schema(schema.REQUIRED_FOR_FIT)
        return list(rf.rows()), "line"


def _check_contract(rows: Sequence[dict[str, str]], p: Path) -> None:
    """The checks the fit makes of every row (schema version, precision and level words, numbers, counts >= 0: the
    same code, :func:`archline.formats.dataset.check_rows`), so a file ``fit`` refuses is not exported either."""
    import pyarrow as pa

    from archline.formats.dataset import DatasetError, check_rows

    # a failed checksum is a row the export counts (and the fit drops): checked here as any other row
    cells = [{**r, "checksum_ok": ""} if str(r.get("checksum_ok") or "").strip().lower() in schema.FALSE_WORDS
             else r for r in rows]
    try:
        check_rows(pa.Table.from_pylist(cells), p)
    except DatasetError as e:
        raise BenchError(str(e)) from None


def _mark_emulated(rows: Sequence[dict[str, str]], name: str, say: Callable[[str], None]) -> None:
    """Rows of the emulated back end are emulated, whatever their ``emulated`` cell says (the one provenance rule,
    as the fit reads them: formats/results_check.py); an absent or false cell on such rows is said once."""
    of_emulator = [r for r in rows if is_emulated(r.get("backend") or "", None)]
    odd = [r for r in of_emulator if not is_emulated("", r.get("emulated"))]      # the cell: absent or false
    if odd:
        cell = "has no emulated column" if "emulated" not in rows[0] else "says emulated=false"
        say(f"{name}: {len(odd)} row(s) of the emulated back end {cell}; they are emulated (as `archline fit` "
            "reads them) and exported so")
        for r in odd:
            r["emulated"] = "true"


def read_rows(paths: Sequence[Path], warn: Callable[[str], None] | None = None) -> list[dict[str, str]]:
    """Every row of ``paths`` (each file once; CSV or Parquet), checked as the fit checks
    them and for rates no machine has; warnings (a file named twice, failed checksums, emulated rows not marked so)
    go to ``warn`` (default: ``archline: warning:`` lines on stderr)."""
    say = warn or warning
    rows: list[dict[str, str]] = []
    for p in unique_inputs(paths, say):
        got, unit = _file_rows(p)
        first = 2 if unit == "line" else 1
        failed: list[int] = []
        for i, row in enumerate(got):
            pos = i + first
            if None in row or None in row.values():     # csv.DictReader's mark of a row with more or fewer cells
                raise BenchError(f"{show(p)}:{pos}: the row has {'more' if None in row else 'fewer'} cells than the "
                                 "header; fix or remove the row")
            check_row(row, f"{show(p)}:{pos}" if unit == "line" else f"{show(p)}, row {pos}")
            if checksum_state(row) is False:
                failed.append(pos)
        if got:
            _check_contract(got, p)
            _mark_emulated(got, show(p), say)
        rows.extend(got)
        if failed:
            lines = ", ".join(map(str, failed[:10])) + (" ..." if len(failed) > 10 else "")
            say(f"{show(p)}: {len(failed)} row(s) failed their checksum ({unit}(s) {lines}); they are left out of "
                "the peaks and bandwidths and counted in the checksum status")
    if not rows:        # a header only: a roofline of no measurement would pass for one (docs/errors.md)
        names = ", ".join(show(p) for p in paths)
        raise BenchError(f"{names}: no result rows (a header only); export a results file of a run that measured "
                         "points")
    return rows


def check_one_machine(rows: Sequence[dict[str, str]]) -> None:
    """A roofline describes one machine: rows of several platforms or hosts, or emulated rows beside measured ones,
    are refused (one line naming them), never merged into peaks no machine has."""
    machines = sorted({f"{r.get('platform') or '?'} on {r.get('host') or '?'}" for r in rows})
    if len(machines) > 1:
        raise BenchError(f"the rows come from {len(machines)} machines ({'; '.join(machines[:4])}"
                         f"{' ...' if len(machines) > 4 else ''}): a roofline describes one; export each machine's "
                         "files on their own")
    if len({str(r.get("emulated", "")).strip().lower() in TRUE_WORDS for r in rows}) > 1:
        raise BenchError("the rows mix emulated and measured results: a roofline describes one machine; export "
                         "them apart")


class NoFigureError(BenchError):
    """Rows that give no peak and no bandwidth (every checksum failed, latency rows only): exit 2, nothing written."""


def export_roofline(out: Path, rows: Sequence[dict[str, str]], names: Sequence[str],
                    require_figure: bool = False) -> dict[str, Any]:
    """The summary of ``rows`` (one machine's), written to ``out`` as ERT's roofline.json, ``results`` always the
    list of the files read, ``figures`` each figure's points and spread; the summary is returned for the report.
    With ``require_figure`` (``bench export-ert``), rows that give no figure are refused and nothing is written:
    an empty roofline.json is no roofline (archline's own reader refuses it)."""
    from archline.formats.ert_roofline import write_ert

    check_one_machine(rows)
    summ = summarize(rows)
    if require_figure and not (summ["peaks_gflop_per_s"] or summ["bandwidths_gb_per_s"]):
        raise NoFigureError(f"{', '.join(names)}: {_why_no_figure(rows)}; nothing written")
    hosts = sorted({str(r.get("host") or "") for r in rows} - {""})
    meta: dict[str, Any] = {"results": list(names), **({"hostname": hosts[0]} if hosts else {})}
    write_ert(out, _roofline(summ, meta, str(rows[0].get("platform") or "") if rows else ""))
    return summ


def _why_no_figure(rows: Sequence[dict[str, str]]) -> str:
    if all(checksum_state(r) is False for r in rows):
        return (f"every row ({len(rows)}) failed its checksum, so no peak or bandwidth is measured; rerun the points "
                "(a wrong answer is not a measurement)")
    kernels = ", ".join(sorted({str(r.get("kernel") or "?") for r in rows}))
    return (f"the rows (kernel {kernels}) measure no peak GFLOP/s and no bandwidth; export rows of the intensity, "
            "cache or ceiling kernels (chase measures latency)")


def export_warnings(summ: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the terminal must say about an export besides the path: each figure NOT TRUSTED, with its reason (a
    cache level slower than DRAM is non-physical), and rows of a level ERT's file has no name for (``shared``),
    left out."""
    figs = summ.get("figures") or {}
    out = [f"{name} = {fig.get('gflop_per_s', fig.get('gb_per_s')):.4g} "
           f"{'GFLOP/s' if 'gflop_per_s' in fig else 'GB/s'} is NOT TRUSTED: {fig.get('why_not_trusted')}"
           for name, fig in figs.items() if not fig.get("trusted", True)]
    if out and summ.get("advice"):
        out.append(f"to measure the figures not trusted again: {summ['advice']}")
    shared = sum(1 for r in rows if str(r.get("level") or "").strip().lower() == "shared")
    if shared:
        out.append(f"{shared} row(s) of level shared left out: ERT's roofline.json names L1, L2, L3 and DRAM only")
    return out


def _roofline(summ: dict[str, Any], metadata: dict[str, Any], platform: str = "") -> Any:
    from archline.formats.ert_roofline import ErtRoofline

    spec_flops, spec_bytes, spec_source = nominal_peaks(platform)
    return ErtRoofline.from_summary(summ["peaks_gflop_per_s"], summ["bandwidths_gb_per_s"],
                                    {**metadata, "emulated": summ["emulated"], "checksums": summ["checksums"],
                                     **({"energy_source": summ["energy_source"]} if summ.get("energy_source") else {}),
                                     "figures": summ["figures"], "not_trusted": summ["not_trusted"],
                                     "spec_source": spec_source},
                                    spec_flops, spec_bytes)


def nominal_peaks(platform: str) -> tuple[dict[str, float], dict[str, float], str]:
    """ERT's ``spec`` (nominal peaks) from the shipped or user profile named ``platform``: its
    ``peak_flop_per_s_sp``/``_dp`` (GFLOP/s) and ``peak_byte_per_s`` (GB/s, as DRAM), and where they come from;
    none (empty, as ERT writes a spec it was not given) for a platform without a profile (localhost) or peaks."""
    from archline.formats.platforms.profiles import find_profile, load_profile
    from archline.model.errors import ArchlineFitError

    found = find_profile(platform) if platform else None
    if found is None:
        return {}, {}, f"none: platform {platform or '?'!r} has no profile with nominal peaks"
    try:
        pl = load_profile(found)
    except ArchlineFitError as e:
        return {}, {}, f"none: profile {platform!r} could not be read ({e})"
    flops = {p: v / 1e9 for p in ("sp", "dp") if (v := _value(pl, f"peak_flop_per_s_{p}"))}
    gbytes = {"DRAM": v / 1e9} if (v := _value(pl, "peak_byte_per_s")) else {}
    if not flops and not gbytes:
        return {}, {}, f"none: profile {platform!r} gives no nominal peak"
    srcs = sorted({c.source for k in ("peak_flop_per_s_sp", "peak_flop_per_s_dp", "peak_byte_per_s")
                   if (c := pl.constants.get(k)) is not None and c.value and c.source})
    return flops, gbytes, f"profile {platform}" + (f" ({'; '.join(srcs)})" if srcs else "")


def _builtin_cpu(backend: str) -> bool:
    """A back end whose rows may become localhost's kept roofline: one of archline's own (a folder in the
    registry's BUILTIN, not a plugin, whatever name the plugin takes) that measures this CPU's cores."""
    from archline.bench.registry import backends, is_builtin

    return is_builtin(backend) and backends()[backend].device_kind == "cpu"


def _value(pl: Any, key: str) -> float | None:
    """A profile constant as given (not derived from its inverse: a nominal peak is a peak the profile states)."""
    c = pl.constants.get(key)
    return c.value if c is not None else None


def write_host_roofline(summ: dict[str, Any], rows: Sequence[dict[str, Any]], results: Path) -> Path | None:
    """After a measured (not emulated) run of a built-in CPU back end on platform ``localhost`` that measured at
    least one figure: a copy of its roofline.json at :func:`archline.formats.ert_roofline.host_roofline_path`, where
    ``localhost`` is read as a platform (model, plot, predict), with the run's id, CSV, time, host and CPU model (a
    plugin back end's rows never: whatever it calls itself, it is not one of the registry's BUILTIN). From the copy
    before (same host and CPU), a figure this run did not measure is kept, and so is a trusted figure this run
    measured NOT TRUSTED (an untrusted figure never replaces a trusted one); each figure names its run, and one
    line on stderr says which figures this run gave and which were kept, and why. A run that measured no figure
    (the chase kernel alone), or any other run (emulated, another platform, a GPU device, a plugin) writes none
    (None) and says nothing. A failure to write it is one warning line: the run itself succeeded."""
    from archline.common.stamps import utc_iso
    from archline.formats.ert_roofline import host_roofline_path, write_ert

    if (summ["emulated"] or not rows or {str(r.get("platform")) for r in rows} != {"localhost"}
            or not all(_builtin_cpu(str(r.get("backend"))) for r in rows)
            or not (summ.get("peaks_gflop_per_s") or summ.get("bandwidths_gb_per_s"))):
        return None
    path = host_roofline_path()
    run_id = str(rows[0].get("run_id") or "")
    meta = {"run_id": run_id, "results_csv": str(results.resolve()),
            "created_utc": utc_iso(), "hostname": str(rows[0].get("host") or ""), "cpu_model": cpu_model(),
            "results": [results.name]}
    roof = _roofline(summ, meta, "localhost")
    # the copy's own figures: naming their run must not change the run's summary (its report, its roofline.json)
    roof.metadata["figures"] = {k: dict(v) for k, v in roof.metadata["figures"].items()}
    roof.metadata["not_trusted"] = list(roof.metadata["not_trusted"])
    for fig in roof.metadata["figures"].values():
        fig["run_id"] = run_id
    kept = _keep_unmeasured(roof, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        written = write_ert(path, roof)
    except OSError as e:
        log.warning(f"archline: warning: could not keep this run's roofline as localhost's platform at {show(path)} "
                    f"({e.strerror or e}); the run's own files are complete")
        return None
    mine = [figure_name(n) for n in [*roof.gflops, *roof.gbytes]
            if (roof.metadata["figures"].get(figure_name(n)) or {}).get("run_id", run_id) == run_id]
    line = (f"localhost's roofline ({show(path)}): {', '.join(mine) or 'no figure'} from this run"
            + ("; " + "; ".join(kept) if kept else ""))
    (log.warning if any("over this run's" in k for k in kept) else log.info)(line)
    return written


def _keep_unmeasured(roof: Any, path: Path) -> list[str]:
    """Carry into ``roof`` the figures of the copy at ``path`` that ``roof`` lacks, and the trusted ones ``roof``
    has NOT TRUSTED, where that copy is readable and from the same host and CPU model (a copy from another machine,
    through a shared home, is replaced whole); returns one phrase per figure kept, saying why."""
    from archline.formats.ert_roofline import read_ert

    try:
        prev = read_ert(path)
    except (OSError, ValueError, KeyError, TypeError):
        return []
    meta = roof.metadata
    if (prev.metadata.get("hostname"), prev.metadata.get("cpu_model")) != (meta["hostname"], meta["cpu_model"]):
        return []
    prev_figs = prev.metadata.get("figures") if isinstance(prev.metadata.get("figures"), dict) else {}
    kept: list[str] = []
    for new, old, unit in ((roof.gflops, prev.gflops, "GFLOP/s"), (roof.gbytes, prev.gbytes, "GB/s")):
        for name, value in old.items():
            fig_name = figure_name(name)
            found = prev_figs.get(fig_name)
            old_fig: dict[str, Any] = found if isinstance(found, dict) else {}
            old_fig = {**old_fig, "run_id": old_fig.get("run_id") or prev.metadata.get("run_id")}
            new_fig = meta["figures"].get(fig_name) or {}
            if name not in new:
                kept.append(f"kept {fig_name} {value:.4g} {unit} of run {old_fig['run_id']} (not measured now)")
            elif not new_fig.get("trusted", True) and old_fig.get("trusted", True) and value > 0:
                kept.append(f"kept {fig_name} {value:.4g} {unit} of run {old_fig['run_id']} (trusted) over this "
                            f"run's {new[name]:.4g} (NOT TRUSTED: {new_fig.get('why_not_trusted')})")
                meta["not_trusted"] = [n for n in meta["not_trusted"] if n != fig_name]
            else:
                continue
            new[name] = value
            meta["figures"][fig_name] = old_fig
            if not old_fig.get("trusted", True) and fig_name not in meta["not_trusted"]:
                meta["not_trusted"] = [*meta["not_trusted"], fig_name]
    return kept
