"""``archline lab collect LAB.toml --out DATASET``: every machine's rows into one partitioned Parquet data set
(:mod:`archline.fit.io.dataset`: ``platform=/host=/run_id=`` directories, copies of a point dropped), and per
machine what is in, what is missing and what failed.

Machines that report the same host name (containers, copies of one image) keep every row: a point is one run's
(:data:`archline.fit.io.dataset.POINT_KEY` holds the run id, which no two machines share), and each such machine's
note names the others, since ``--where host=...`` cannot tell them apart (``--where run_id=...`` can).

An unreachable results directory is an error, and so is a lab none of whose machines has a row: never an empty
data set.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.lab.labfile import Lab
from archline.bench.lab.status import LabError, TaskStatus, lab_status
from archline.bench.run.sweep import RESULTS_NAME
from archline.fit.io.dataset import DatasetError, DatasetReport, read_csv_table, write_dataset
from archline.fit.io.results_file import ResultsFile, SourceError

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

    def as_json(self) -> dict[str, Any]:
        d = asdict(self.dataset)
        d["path"] = str(d["path"])
        return {"dataset": d, "machines": [asdict(m) for m in self.machines]}


def _rows(path: Path) -> tuple[int, str]:
    """Complete rows of a machine's results file, counted by the file's owner; a file that cannot be read or is
    not a results file counts 0, with the reason."""
    try:
        with ResultsFile.open(path, whole_lines=False) as f:
            f.check_ours()
            return f.n_rows(), ""
    except SourceError as e:
        return 0, str(e)


def _runs(path: Path) -> set[tuple[str, str]]:
    """The (host, run_id) pairs a machine's rows report (a file the data set writer will refuse: none, it says
    why)."""
    try:
        table = read_csv_table(path, whole_lines=False)
    except DatasetError:
        return set()
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
                parts.append(f"host '{h}' is also reported by {', '.join(apart)}: every row kept, told apart by "
                             "run_id (give each machine its own `host` in the lab file to tell them apart by host)")
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
    machines: list[MachineReport] = []
    runs: dict[str, set[tuple[str, str]]] = {}
    for m in lab.machines:
        st = statuses[m.name]
        csv = lab.results / m.name / RESULTS_NAME
        n, why = _rows(csv) if csv.exists() else (0, "")
        if n:
            sources.append(csv)
            runs[m.name] = _runs(csv)
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
        ds = write_dataset(sources, out, merge=merge)
    except DatasetError as e:
        raise LabError(str(e)) from None
    shared = _shared_hosts(runs)
    for rep in machines:
        if rep.machine in shared:
            log.warning(f"machine {rep.machine}: {shared[rep.machine]}")
            rep.note = "; ".join(x for x in (rep.note, shared[rep.machine]) if x)
    return CollectReport(ds, machines)


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
