"""``archline bench sweep CONFIG.toml``: the cron entry point. Locked, resumable, logged, with exit codes.

A sweep config (TOML; every key but ``platform`` optional, a typo'd key is an error that names it)::

    [sweep]
    name = "nightly-gtx580"          # default: the config file's stem
    platform = "gtx580"              # profile name or .toml path (relative to the config file)
    emulate = false                  # true: the emulated device and the emulated PowerMon 2 on a pty
    backend = "cuda"                 # default: the profile's [bench] backend (emulated with emulate = true)
    kernels = ["intensity"]          # default: the profile's [bench] kernels
    precisions = ["sp", "dp"]
    quick = false
    power_caps_w = [150.0, 200.0]    # default: the profile's [bench] power_caps_w (empty: leave the cap alone)
    dvfs_settings = ["S1", "S4"]     # ids of the profile's [dvfs] settings
    out = "results/nightly"          # default: results/<name>, relative to the config file
    time_compression = 50.0          # emulate only: device seconds per host second
    seed = 0                         # emulate only
    meter = "powermon"               # which of the profile's meters (default: the first)
    max_points = 0                   # stop after this many points this run (0: all); the next run resumes

Files in ``out``: ``results.csv`` (one ``archline.results/1`` row per point, appended atomically, never
rewritten), ``sweep.log`` (plain timestamped lines), ``.sweep.lock`` (held while running), traces under
``traces/``. A point is done when ``results.csv`` has a row with its ``point_id`` and the sweep's
``config_hash`` (a hash of the config and the profile it names); a changed config starts the points afresh
in the same file. Exit codes (for cron; also in docs/cron.md):

==  ==================================================================================================
0   every point of the sweep is done (possibly by an earlier run)
1   internal error (a bug: the traceback is in the log)
2   bad config or profile (the message names the key)
3   some points failed; their errors are in the log, the rest were written; the next run retries them
4   a meter or device the config names is missing or not permitted
5   stopped after ``max_points`` with points still to do; the next run resumes
75  another sweep holds the lock (EX_TEMPFAIL): nothing was done; try again later
130 interrupted (SIGINT/SIGTERM); finished rows are kept and the next run resumes
==  ==================================================================================================
"""

from __future__ import annotations

import csv
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from archline.bench.errors import BenchError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_CONFIG = 2
EXIT_POINTS_FAILED = 3
EXIT_METER_MISSING = 4
EXIT_MORE_TO_DO = 5
EXIT_LOCKED = 75
EXIT_INTERRUPTED = 130

RESULTS_NAME = "results.csv"
LOG_NAME = "sweep.log"
LOCK_NAME = ".sweep.lock"


class SweepConfigError(BenchError):
    exit_code = EXIT_CONFIG


class SweepLockedError(BenchError):
    exit_code = EXIT_LOCKED


class MeterMissingError(BenchError):
    exit_code = EXIT_METER_MISSING


@dataclass
class SweepConfig:
    path: Path
    name: str
    platform: str
    emulate: bool = False
    backend: str | None = None
    kernels: tuple[str, ...] | None = None
    precisions: tuple[str, ...] | None = None
    quick: bool = False
    power_caps_w: tuple[float, ...] | None = None
    dvfs_settings: tuple[str, ...] | None = None
    out: Path = Path("results")
    time_compression: float | None = None
    seed: int = 0
    meter: str | None = None
    max_points: int = 0
    raw: dict[str, Any] = field(default_factory=dict)


_KEYS = ("name", "platform", "emulate", "backend", "kernels", "precisions", "quick", "power_caps_w",
         "dvfs_settings", "out", "time_compression", "seed", "meter", "max_points")


def load_config(path: Path) -> SweepConfig:
    import difflib

    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SweepConfigError(f"sweep config {path} does not exist") from None
    except OSError as e:
        raise SweepConfigError(f"cannot read sweep config {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepConfigError(f"{path}: not valid TOML: {e}") from None
    extra = [k for k in data if k != "sweep"]
    if extra:
        raise SweepConfigError(f"{path}: unknown top-level key '{extra[0]}' (the config is one [sweep] table)")
    t = data.get("sweep")
    if not isinstance(t, dict):
        raise SweepConfigError(f"{path}: missing the [sweep] table")
    for k in t:
        if k not in _KEYS:
            near = difflib.get_close_matches(k, _KEYS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(_KEYS)})"
            raise SweepConfigError(f"{path}: [sweep]: unknown key '{k}'{hint}")
    if "platform" not in t:
        raise SweepConfigError(f"{path}: [sweep]: missing 'platform'")

    def strs(k: str) -> tuple[str, ...] | None:
        if k not in t:
            return None
        v = t[k]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise SweepConfigError(f"{path}: [sweep] {k}: expected a list of strings")
        return tuple(v)

    def typed(k: str, types: tuple[type, ...], default: Any) -> Any:
        if k not in t:
            return default
        v = t[k]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise SweepConfigError(f"{path}: [sweep] {k}: expected {' or '.join(x.__name__ for x in types)}, "
                                   f"got {v!r}")
        return v

    base = path.parent
    name = str(typed("name", (str,), path.stem))
    plat = str(t["platform"])
    if plat.endswith(".toml") and not Path(plat).is_absolute():
        plat = str((base / plat).resolve())
    caps = None
    if "power_caps_w" in t:
        c = t["power_caps_w"]
        if not isinstance(c, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in c):
            raise SweepConfigError(f"{path}: [sweep] power_caps_w: expected a list of watts")
        caps = tuple(float(x) for x in c)
    out = Path(str(typed("out", (str,), f"results/{name}")))
    tc = typed("time_compression", (int, float), None)
    return SweepConfig(
        path=path, name=name, platform=plat, emulate=bool(typed("emulate", (bool,), False)),
        backend=typed("backend", (str,), None), kernels=strs("kernels"), precisions=strs("precisions"),
        quick=bool(typed("quick", (bool,), False)), power_caps_w=caps, dvfs_settings=strs("dvfs_settings"),
        out=out if out.is_absolute() else base / out, time_compression=None if tc is None else float(tc),
        seed=int(typed("seed", (int,), 0)), meter=typed("meter", (str,), None),
        max_points=int(typed("max_points", (int,), 0)), raw=dict(t),
    )


def config_hash(cfg: SweepConfig, profile_raw: dict[str, Any]) -> str:
    """Hash of what decides the measurements: the [sweep] table (minus where things go and how many this run)
    and the profile's content."""
    keep = {k: v for k, v in cfg.raw.items() if k not in ("out", "max_points", "name")}
    blob = json.dumps({"sweep": keep, "profile": profile_raw}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- the lock ---------------------------------------------------------------------------------------------

class SweepLock:
    """An ``fcntl.flock`` on ``<out>/.sweep.lock``: released by the kernel when the process dies, even by
    SIGKILL, so a stale lock never blocks the next cron run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = ""
            try:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SweepLockedError(f"sweep is locked: another sweep is running on {self.path.parent} "
                                       f"({holder or 'holder unknown'}); exiting without doing anything") from None
            raise
        os.ftruncate(fd, 0)
        stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        os.pwrite(fd, f"pid {os.getpid()} since {stamp}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


# --- log ---------------------------------------------------------------------------------------------------

class SweepLog:
    """Plain timestamped lines appended to ``sweep.log`` (one write each), echoed to ``echo`` if given."""

    def __init__(self, path: Path, echo: TextIO | None = None) -> None:
        self.path = path
        self.echo = echo
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, msg: str) -> None:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for line in msg.splitlines() or [""]:
            os.write(self.fd, f"{stamp} [{os.getpid()}] {line}\n".encode())

    def close(self) -> None:
        os.close(self.fd)


def done_points(results: Path, chash: str) -> set[str]:
    """point_ids already in ``results`` under this config hash (complete lines only)."""
    if not results.exists():
        return set()
    done: set[str] = set()
    with open(results, newline="") as f:
        text = f.read()
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.DictReader(text.splitlines())
    for row in reader:
        if row.get("config_hash") == chash and row.get("point_id"):
            done.add(row["point_id"])
    return done


# --- running ------------------------------------------------------------------------------------------------

@dataclass
class SweepOutcome:
    exit_code: int
    done_before: int
    written: int
    failed: int
    remaining: int
    message: str


def run_sweep(config_path: Path, *, stream: TextIO | None = None, tty: bool | None = None) -> SweepOutcome:
    """Run (or resume) a sweep. Raises SweepLockedError / SweepConfigError / MeterMissingError for the CLI."""
    from archline.bench.runner import ensure_header, repair_tail
    from archline.bench.runner_session import open_session

    cfg = load_config(config_path)
    stream = stream or sys.stderr
    lock = SweepLock(cfg.out / LOCK_NAME)
    lock.acquire()
    log = SweepLog(cfg.out / LOG_NAME)
    interrupted: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM,)}
    session = None
    try:
        log(f"sweep '{cfg.name}' starting: config {cfg.path}, platform {cfg.platform}, out {cfg.out}")
        results = cfg.out / RESULTS_NAME
        cut = repair_tail(results)
        if cut:
            log(f"removed a partial last line ({cut} bytes) from {results}")
        stale = list((cfg.out / "traces").glob("**/.*.tmp"))
        for f in stale:  # temp files of traces a killed run was writing; never final names
            f.unlink(missing_ok=True)
        if stale:
            log(f"removed {len(stale)} unfinished trace temp file(s)")
        try:
            session = open_session(
                cfg.platform, emulate=cfg.emulate, backend=cfg.backend, kernels=cfg.kernels,
                precisions=cfg.precisions, quick=cfg.quick, power_caps_w=cfg.power_caps_w,
                dvfs_settings=cfg.dvfs_settings, time_compression=cfg.time_compression, seed=cfg.seed,
                meter=cfg.meter, trace_dir=cfg.out / "traces", config_hasher=lambda raw: config_hash(cfg, raw),
                log=log)
        except BenchError as e:
            log(f"error: {e}")
            raise
        chash = session.ctx.config_hash
        points = session.points
        done = done_points(results, chash)
        todo = [(i, p) for i, p in enumerate(points) if p.point_id not in done]
        log(f"config hash {chash}: {len(points)} points, {len(points) - len(todo)} already done, "
            f"{len(todo)} to do; {session.describe()}")
        ensure_header(results)
        if cfg.max_points > 0:
            todo_now = todo[: cfg.max_points]
        else:
            todo_now = todo
        written, failed = session.run_indexed(todo_now, results, stream=stream, tty=tty, log=log)
        remaining = len(todo) - written
        if failed:
            code, msg = EXIT_POINTS_FAILED, f"{failed} point(s) failed (see {cfg.out / LOG_NAME}); rerun to retry"
        elif remaining:
            code, msg = EXIT_MORE_TO_DO, f"{remaining} point(s) left; the next run resumes"
        else:
            code, msg = EXIT_OK, f"sweep complete: {len(points)} points in {results}"
        log(f"wrote {written} row(s); {msg}")
        return SweepOutcome(code, len(points) - len(todo), written, failed, remaining, msg)
    except KeyboardInterrupt:
        log("interrupted; finished rows are kept, the next run resumes")
        return SweepOutcome(EXIT_INTERRUPTED, 0, 0, 0, -1, "interrupted; the next run resumes")
    except BenchError:
        raise
    except Exception:
        log("internal error:\n" + traceback.format_exc())
        raise
    finally:
        if session is not None:
            session.close()
        for s, h in old.items():
            signal.signal(s, h)
        log.close()
        lock.release()


def main(argv: Sequence[str] | None = None, *, stream: TextIO | None = None,
         echo: Callable[[str], None] | None = None) -> int:
    """``python -m archline.bench.sweep CONFIG.toml``: the same as ``archline bench sweep``."""
    args = list(sys.argv[1:] if argv is None else argv)
    out = echo or (lambda s: print(s, file=sys.stderr))
    if len(args) != 1:
        out("usage: python -m archline.bench.sweep CONFIG.toml")
        return EXIT_CONFIG
    from archline.fit.errors import ArchlineFitError
    from archline.powermon.errors import MeterError

    try:
        res = run_sweep(Path(args[0]), stream=stream)
    except BenchError as e:
        out(f"archline: error: {e}")
        return int(getattr(e, "exit_code", EXIT_CONFIG))
    except ArchlineFitError as e:
        out(f"archline: error: {e}")
        return EXIT_CONFIG
    except MeterError as e:
        out(f"archline: error: {e}")
        return EXIT_METER_MISSING
    out(res.message)
    return res.exit_code


def outcome_dict(o: SweepOutcome) -> dict[str, Any]:
    return asdict(o)


if __name__ == "__main__":
    sys.exit(main())
