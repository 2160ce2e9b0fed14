"""A real one-node Slurm cluster for the tests: Debian's ``slurm-wlm`` and ``munge``, every file of it (munge key
and socket, slurm.conf, state, spool, logs, pids) in one private directory, on free ports, so it never touches
/etc or a cluster someone else started on this machine.

* munged runs on a private socket with a private key (``--force``: as root, and in a world-writable /tmp);
* slurm.conf names this host as the only node (``select/cons_tres``, ``proctrack/linuxproc``, ``task/none``),
  one partition ``debug``, no accounting (no slurmdbd: ``sacct`` is disabled, so ``archline lab status`` takes
  states from ``squeue`` and from the results);
* ``slurmctld`` and ``slurmd`` are started with ``-f`` and the client commands find the file through
  ``SLURM_CONF`` in the environment the cluster hands back.

:func:`start` returns the cluster or raises :class:`Unavailable` with the reason a test is skipped for.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "srun")
PARTITION = "debug"


class Unavailable(RuntimeError):
    """Why the cluster cannot be started here."""


@dataclass
class Cluster:
    base: Path
    conf: Path
    node: str
    cpus: int
    env: dict[str, str]
    pids: dict[str, int] = field(default_factory=dict)

    def run(self, *cmd: str, check: bool = True) -> str:
        out = subprocess.run(cmd, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=60)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: rc {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    def queue(self) -> list[str]:
        """``JOBID STATE`` lines of every job still in the queue."""
        return [ln.strip() for ln in self.run("squeue", "--noheader", "--array", "--format=%i %T").splitlines()
                if ln.strip()]

    def wait_idle(self, timeout_s: float = 120.0) -> None:
        end = time.monotonic() + timeout_s
        while self.queue():
            if time.monotonic() > end:
                raise RuntimeError(f"jobs still queued after {timeout_s:g} s: {self.queue()}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to every daemon at once, SIGKILL to any still there after 5 s."""
        pids = [p for p in (self.pids.get(n) for n in ("slurmd", "slurmctld", "munged")) if p is not None]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 5.0
        for pid in pids:
            while time.monotonic() < end:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pid(path: Path, timeout_s: float = 20.0) -> int:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            text = path.read_text().strip()
            if text:
                return int(text)
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.1)
    raise Unavailable(f"{path.name} did not appear within {timeout_s:g} s")


def _tail(path: Path, n: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])
    except OSError:
        return "(no log)"


def start(base: Path) -> Cluster:
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]
    if missing:
        raise Unavailable(f"Slurm/munge not installed (missing {', '.join(missing)}; apt-get install slurm-wlm munge,"
                          " as .ci/run does)")
    if os.geteuid() != 0:
        raise Unavailable("starting slurmctld/slurmd for the test cluster needs root")
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    for d in ("munge", "state", "spool", "log"):
        (base / d).mkdir(exist_ok=True)
    os.chmod(base / "munge", 0o700)
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = base / "munge" / "munge.socket"
    node = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    mem_mb = max(512, int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.5))
    c = Cluster(base=base, conf=base / "slurm.conf", node=node, cpus=cpus, env={})
    sbin = "/usr/sbin"
    munged = shutil.which("munged") or f"{sbin}/munged"
    r = subprocess.run([munged, "--force", f"--socket={sock}", f"--key-file={key}",
                        f"--pid-file={base / 'munge' / 'munged.pid'}", f"--log-file={base / 'log' / 'munged.log'}",
                        f"--seed-file={base / 'munge' / 'munged.seed'}"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Unavailable(f"munged did not start: {r.stderr.strip() or _tail(base / 'log' / 'munged.log')}")
    c.pids["munged"] = _pid(base / "munge" / "munged.pid")
    ctld_port, d_port = _free_port(), _free_port()
    c.conf.write_text(f"""\
ClusterName=archlinetest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base / 'state'}
SlurmdSpoolDir={base / 'spool'}
SlurmctldPidFile={base / 'slurmctld.pid'}
SlurmdPidFile={base / 'slurmd.pid'}
SlurmctldLogFile={base / 'log' / 'slurmctld.log'}
SlurmdLogFile={base / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")
    c.env = {"SLURM_CONF": str(c.conf)}
    env = {**os.environ, **c.env}
    for name, cmd in (("slurmctld", [shutil.which("slurmctld") or f"{sbin}/slurmctld", "-f", str(c.conf)]),
                      ("slurmd", [shutil.which("slurmd") or f"{sbin}/slurmd", "-f", str(c.conf), "-N", node])):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            c.stop()
            raise Unavailable(f"{name} did not start: {r.stderr.strip() or _tail(base / 'log' / f'{name}.log')}")
        try:
            c.pids[name] = _pid(base / f"{name}.pid")
        except Unavailable as e:
            c.stop()
            raise Unavailable(f"{e}; {name} log: {_tail(base / 'log' / f'{name}.log')}") from None
    end = time.monotonic() + 30
    while True:       # the node must come up idle before jobs can run
        try:
            state = c.run("sinfo", "--noheader", "--format=%T").strip()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            state = str(e)
        if state.startswith(("idle", "mixed", "allocated")):
            return c
        if time.monotonic() > end:
            c.stop()
            raise Unavailable(f"the test node did not come up (sinfo: {state!r}; slurmd log: "
                              f"{_tail(base / 'log' / 'slurmd.log')})")
        time.sleep(0.3)
