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


def _hosts(path: Path) -> set[str]:
    """The host names a machine's rows report (a file the data set writer will refuse: none, it says why)."""
    try:
        table = read_csv_table(path, whole_lines=False)
    except DatasetError:
        return set()
    if "host" not in table.column_names:
        return set()
    return {h for h in table.column("host").unique().to_pylist() if h}


def _shared_hosts(hosts: dict[str, set[str]]) -> dict[str, str]:
    """Per machine, a note naming the other machines that report one of its host names."""
    notes: dict[str, str] = {}
    for m, mine in hosts.items():
        parts = []
        for h in sorted(mine):
            others = [o for o, theirs in hosts.items() if o != m and h in theirs]
            if others:
                parts.append(f"host '{h}' is also reported by {', '.join(others)}")
        if parts:
            notes[m] = ("; ".join(parts) + ": every row kept, told apart by run_id (give each machine its own "
                        "`host` in the lab file to tell them apart by host)")
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
    hosts: dict[str, set[str]] = {}
    for m in lab.machines:
        st = statuses[m.name]
        csv = lab.results / m.name / RESULTS_NAME
        n, why = _rows(csv) if csv.exists() else (0, "")
        if n:
            sources.append(csv)
            hosts[m.name] = _hosts(csv)
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
    shared = _shared_hosts(hosts)
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
