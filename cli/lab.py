"""archline lab submit|status|collect LAB.toml"""

from __future__ import annotations

import json
from pathlib import Path

import click

from archline.cli.output import echo_json, format_option, format_options
from archline.cli.params import OutPath
from archline.common.outputs import show

lab_file = click.argument("lab_toml", type=click.Path(dir_okay=False, path_type=Path))


@click.group()
def lab() -> None:
    """The same sweeps across a lab's machines, on Slurm or on this machine (docs/lab.md).

    \b
    archline lab submit lab.toml --wait         one Slurm job array, one task per machine
    archline lab submit lab.toml --scheduler local   the same lab here, one machine after another
    archline lab status lab.toml                queued, running, done, failed (why), missing
    archline lab collect lab.toml --out fleet/  one partitioned Parquet data set of every machine's rows
    archline fit fleet/ --where host=node03     then fit, plot or compare it
    archline compare fleet/ --by host
    """


@lab.command("submit")
@lab_file
@click.option("--scheduler", type=click.Choice(["slurm", "local"]), default=None,
              help="override the lab file's [lab] scheduler; local runs the tasks here, one after another.")
@click.option("--machine", "only", multiple=True, help="submit only this machine (repeatable).")
@click.option("--wait", is_flag=True, help="block, printing progress, until every task has ended (local always "
              "waits: the tasks run here).")
@format_options(help="table: each task's state when waited for; json: one JSON document (job ids, machines "
                     "skipped and why, each task's state when waited for) alone on stdout; progress on stderr")
def submit_cmd(lab_toml: Path, scheduler: str | None, only: tuple[str, ...], wait: bool, fmt: str) -> None:
    """Submit every machine's sweep: one task per machine, each the locked, resumable sweep that cron runs,
    into <results>/<machine>/. A machine still queued or running is left alone; a state file that cannot be
    read is an error before anything is submitted.

    SIGTERM or Ctrl-C while the local scheduler runs a task stops that task (its emulators too): its record
    says interrupted, its finished rows are kept, and the command exits 130.

    Exit status: 0 when submitted (with --wait: when every task is done), 3 when a task failed, 75 while
    another submit of this lab runs (nothing submitted) or a task it waited for is still queued or running,
    130 when interrupted.

    \b
    Examples:
      archline lab submit lab.toml --wait              one Slurm job array, one task per machine
      archline lab submit lab.toml --scheduler local   the same lab here, one machine after another
      archline lab submit lab.toml --scheduler local --format json
    """
    from archline.bench.lab.labfile import load_lab
    from archline.bench.lab.submit import submit

    lab_ = load_lab(lab_toml)
    report = submit(lab_, scheduler=scheduler, only=only, wait=wait, echo=lambda s: click.echo(s, err=True))
    if fmt == "json":
        echo_json({"submitted": report.submitted, "skipped": report.skipped, "arrays": report.arrays,
                   "tasks": None if report.statuses is None else [s.as_json() for s in report.statuses]})
    elif report.statuses is not None:
        _print_status(report.statuses, "table")
    if report.statuses is not None:
        states = {s.state for s in report.statuses}
        if states & {"queued", "running"}:      # another submit's task: still running, not failed (as status)
            click.get_current_context().exit(75)
        if states - {"done"}:
            click.get_current_context().exit(3)


@lab.command("status")
@lab_file
@format_option
@click.option("--wait", is_flag=True, help="block until every task has ended, printing each change.")
def status_cmd(lab_toml: Path, fmt: str, wait: bool) -> None:
    """State of each machine's task: queued, running, done, failed (with the reason) or missing; from the
    Slurm queue (squeue) and from the results themselves (each task's record and rows).

    A state file that cannot be read (damaged, a wrong type, written by a newer archline) is one line naming
    it (exit 2): remove or fix it; a newer field is ignored.

    Exit status: 0 when every task is done, 3 when any is failed or missing, 75 while any is queued or
    running.

    \b
    Examples:
      archline lab status lab.toml
      archline lab status lab.toml --format json
    """
    from archline.bench.lab.labfile import load_lab
    from archline.bench.lab.status import lab_status
    from archline.bench.lab.submit import wait as wait_all

    lab_ = load_lab(lab_toml)
    statuses = wait_all(lab_, echo=lambda s: click.echo(s, err=True)) if wait else lab_status(lab_)
    _print_status(statuses, fmt)
    states = {s.state for s in statuses}
    if states & {"queued", "running"}:
        click.get_current_context().exit(75)
    if states - {"done"}:
        click.get_current_context().exit(3)


def _print_status(statuses: list, fmt: str) -> None:  # type: ignore[type-arg]
    from archline.bench.lab.status import status_table
    from archline.cli.output import echo_table

    if fmt == "json":
        click.echo(json.dumps([s.as_json() for s in statuses], indent=1))
        return
    echo_table(*status_table(statuses))


@lab.command("collect")
@lab_file
@click.option("--out", type=OutPath(file_okay=False, dir_okay=True, path_type=Path), required=True,
              help="the data set directory (created, or merged into when it exists).")
@click.option("--replace", is_flag=True, help="write the data set afresh instead of merging into the one at --out.")
@format_option
def collect_cmd(lab_toml: Path, out: Path, replace: bool, fmt: str) -> None:
    """Merge every machine's rows into one hive-partitioned Parquet data set
    (OUT/platform=P/host=H/run_id=R/part-*.parquet), dropping copies of a point (same host, run id, config
    hash and point id: machines that share a host name keep every row), and report per machine the points
    missing or failed. `archline fit OUT`, `archline plot OUT`
    and `archline compare OUT` read it.

    \b
    Examples:
      archline lab collect lab.toml --out fleet/
    """
    from archline.bench.lab.collect import collect, collect_table
    from archline.bench.lab.labfile import load_lab
    from archline.cli.output import echo_table

    report = collect(load_lab(lab_toml), out, merge=not replace)
    for w in report.warnings:
        click.echo(f"archline: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps(report.as_json(), indent=1))
        return
    d = report.dataset
    echo_table(*collect_table(report))
    click.echo(f"wrote {show(d.path)}: {d.rows} rows in {d.partitions} partition(s) (platform/host/run_id); "
               f"{d.new_rows} read from the results, {d.kept_existing} already in the data set, "
               f"{d.duplicates} copied point(s) dropped")
