"""``archline lab collect LAB.toml --out DATASET``: every machine's rows into one partitioned Parquet data set
(:mod:`archline.formats.dataset`: ``platform=/host=/run_id=`` directories, copies of a point dropped), and per
machine what is in, what is missing and what failed.

Machines that report the same host name (containers, copies of one image) keep every row: a point is one run's
(:data:`archline.formats.dataset.POINT_KEY` holds the run id, which no two machines share), and each such machine's
note names the others, since ``--where host=...`` cannot tell them apart (``--where run_id=...`` can).

An unreachable results directory is an error, and so is a lab none of whose machines has a row: never an empty
data set.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.bench.lab.status import LabError, TaskStatus, lab_status
from archline.bench.run.sweep import RESULTS_NAME
from archline.formats.dataset import DatasetError, DatasetReport, write_dataset
from archline.formats.lab_file import Lab
from archline.formats.results_file import ResultsFile, SourceError

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("archline.bench")


@dataclass
class MachineReport:
    machine: str
    state: str
    rows: int
    points_planned: int | None
    points_missing: list[str] = field(default_factory=list)
    failed_last_run: int = 0
    note: str = ""


@dataclass
class CollectReport:
    dataset: DatasetReport
    machines: list[MachineReport]
    warnings: list[str] = field(default_factory=list)   #: for stderr, as ``archline: warning: ...`` lines

    def as_json(self) -> dict[str, Any]:
        d = asdict(self.dataset)
        d["path"] = str(d["path"])
        return {"dataset": d, "machines": [asdict(m) for m in self.machines]}


def _read(path: Path, running: bool) -> tuple[pa.Table | None, str]:
    """A machine's results file read once, by its owner (a FIFO or pipe cannot be read twice): its rows as a
    table (None without rows), or the reason it counts 0. A file that is ours but whose rows cannot be read is
    a LabError (nothing collected). A partial last line is a row being appended while the task runs (left out);
    a task that is not running has a cut-off file: an error, as everywhere else."""
    try:
        with ResultsFile.open(path, whole_lines=not running) as f:
            f.check_ours()
            if not f.n_rows():
                return None, ""
            try:
                return f.table(), ""
            except SourceError as e:
                raise LabError(str(e)) from None
    except SourceError as e:
        if "ends in the middle of a line" in str(e):    # whole lines asked for: the task is not appending
            raise LabError(f"{e} (its task is not running); nothing collected") from None
        return None, str(e)


def _runs(table: pa.Table) -> set[tuple[str, str]]:
    """The (host, run_id) pairs a machine's rows report."""
    if "host" not in table.column_names or "run_id" not in table.column_names:
        return set()
    pairs = zip(table.column("host").to_pylist(), table.column("run_id").to_pylist(), strict=True)
    return {(h, r) for h, r in pairs if h and r}


def _shared_hosts(runs: dict[str, set[tuple[str, str]]]) -> dict[str, str]:
    """Per machine, a note naming the other machines that report one of its host names (other runs: all kept)
    or one of its runs (a copied results file: kept once)."""
    notes: dict[str, str] = {}
    for m, mine in runs.items():
        parts = []
        for h in sorted({h for h, _ in mine}):
            mine_h = {r for hh, r in mine if hh == h}
            others = [o for o, theirs in runs.items() if o != m and any(hh == h for hh, _ in theirs)]
            same = [o for o in others if mine_h & {r for hh, r in runs[o] if hh == h}]
            apart = [o for o in others if o not in same]
            if apart:
                parts.append(f"host '{h}' is also reported by {', '.join(others)}: every row of another run kept, "
                             "told apart by run_id (give each machine its own `host` in the lab file to tell them "
                             "apart by host)")
            if same:
                parts.append(f"the same run of host '{h}' is also in the results of {', '.join(same)} (a copied "
                             "results file?): its rows kept once")
        if parts:
            notes[m] = "; ".join(parts)
    return notes


def collect(lab: Lab, out: Path, *, merge: bool = True) -> CollectReport:
    if not lab.results.is_dir():
        why = "does not exist" if not lab.results.exists() else "is not a directory"
        raise LabError(f"results directory {lab.results} is not reachable: it {why} (is the shared filesystem "
                       "mounted here?); nothing collected")
    if not os.access(lab.results, os.R_OK | os.X_OK):
        raise LabError(f"results directory {lab.results} is not readable by this user; nothing collected")
    statuses: dict[str, TaskStatus] = {s.machine: s for s in lab_status(lab)}
    sources: list[Path] = []
    tables: list[pa.Table] = []
    machines: list[MachineReport] = []
    runs: dict[str, set[tuple[str, str]]] = {}
    for m in lab.machines:
        st = statuses[m.name]
        csv = lab.results / m.name / RESULTS_NAME
        table, why = _read(csv, st.state == "running") if os.path.lexists(csv) else (None, "")
        n = table.num_rows if table is not None else 0
        if table is not None and n:
            sources.append(csv)
            tables.append(table)
            runs[m.name] = _runs(table)
        rep = MachineReport(m.name, st.state, n, st.points_planned, list(st.missing_points))
        rep.failed_last_run = st.failed_points
        if st.state == "failed":
            rep.note = st.reason
        if not n:
            rep.note = why or rep.note or ("no results yet" if st.state != "missing" else st.reason)
        machines.append(rep)
    if not sources:
        raise LabError(f"no rows to collect: none of the {len(lab.machines)} machine(s) has results under "
                       f"{lab.results} (`archline lab status {lab.path}` says why)")
    try:
        ds = write_dataset(sources, out, merge=merge, tables=tables)
    except DatasetError as e:
        raise LabError(str(e)) from None
    shared = _shared_hosts(runs)
    warnings = []
    for rep in machines:
        if rep.machine in shared:
            warnings.append(f"machine {rep.machine}: {shared[rep.machine]}")
            rep.note = "; ".join(x for x in (rep.note, shared[rep.machine]) if x)
    return CollectReport(ds, machines, warnings)


def collect_table(report: CollectReport) -> tuple[list[str], list[list[str]]]:
    head = ["machine", "state", "rows", "points", "missing", "note"]
    rows = []
    for m in report.machines:
        planned = m.points_planned
        pts = f"{planned - len(m.points_missing)}/{planned}" if planned is not None else "-"
        miss = m.points_missing[0] + (f" (+{len(m.points_missing) - 1} more)" if len(m.points_missing) > 1 else "") \
            if m.points_missing else ""
        rows.append([m.machine, m.state, str(m.rows), pts, miss or "-", m.note])
    return head, rows
