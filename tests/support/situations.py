"""The situation harness (issue 22, build item 6): beside the bad-input matrix (:mod:`support.badinputs`, which
varies each parameter's *value*), every command is run with its *situation* varied:

* the kind of its input file: a FIFO fed by a writer thread, a ``/dev/fd/N`` pipe (process substitution), a
  character device (``/dev/zero``, ``/dev/null``), a symlink, a symlink loop, a directory, a dangling symlink;
* its output: the same file as an input (by name, through a symlink, as ``./name``), ``/dev/null``, ``/dev/full``,
  a symlink to a new file, names with a newline, a space, a leading dash or a byte that is not UTF-8, a read-only
  directory, a full disk;
* signals (SIGTERM, SIGINT, SIGKILL and a rerun) and a closed stdout (subprocesses, :func:`run_signalled`,
  :func:`run_closed_stdout`);
* state files from a newer version or with wrong types, and content that parses but lies.

Every case is judged by the same invariants (:func:`judge`): a documented exit code (never 1 or 143), no traceback,
an error is one line ``archline: error: ...``, every file that was there before is byte-identical afterwards
unless it is the output the user named, nothing is created outside that output (the case directory and its parent
are snapshot before and after), nothing new in the temp dir, no ``.tmp`` file left; and, where the right result is
known, the result (a FIFO, a pipe or a link gives what the plain file gives).

Cases run in-process like :mod:`support.badinputs` (fast), except those that need a process of their own: signals,
closed stdout, real process substitution, and ``/dev/zero`` (a reader that does not refuse it would read without
end, so those run in one memory-limited child).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.exits import command_codes
from support import badinputs as bi

REPO = bi.REPO
#: the documented exit codes a situation may end with (1 is a bug; 143 is a SIGTERM nobody handled)
DOCUMENTED = frozenset({0, 2, 3, 4, 5, 6, 7, 75, 130})
AREAS = ("results CSV", "cost table", "samples/meter", "lab/bench", "other")

#: a file kind read as a whole stream whose reader may look for a sidecar beside it
SIDECAR_KINDS = {"raw", "samples"}


# --- what a case is -----------------------------------------------------------------------------------------------

@dataclass
class Prep:
    """A prepared case: the arguments, where it runs, and what it may write."""

    args: list[str]
    cwd: Path
    #: paths the command may create or replace (a file, or a directory and everything under it)
    outputs: list[Path] = field(default_factory=list)
    #: directories where the command may add files but must leave every existing one alone
    new_only: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    #: run after the "after" snapshot (unmounting a file system the snapshot must still see)
    late_cleanup: list[Callable[[], None]] = field(default_factory=list)
    #: strings replaced by ``{IN}`` before two stdouts are compared
    norm: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Situation:
    id: str
    area: str
    prepare: Callable[[Path], Prep]
    expect: str = "any"                     #: "ok", "fail" or "any" (either, by the invariants)
    codes: frozenset[int] | None = None     #: when it fails, the exit codes it may fail with
    same_as: str | None = None              #: id of the reference case whose stdout an exit 0 must repeat
    check: Callable[[Prep, bi.Outcome], list[str]] | None = None
    guarded: bool = False                   #: run in the memory-limited child (it may read without end)
    slow: bool = False
    timeout_s: float = 12.0
    #: compare with the reference without its "emulated" labels (a pipe has no sidecar to say so; a warning must)
    unlabelled: bool = False

    @property
    def command(self) -> str:
        """The command this case runs (the test groups cases by it)."""
        return self.id.split(" :: ")[0].split(" [")[0].split("=")[0].strip()


# --- snapshots ------------------------------------------------------------------------------------------------------

def _hash(p: str) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def snapshot(root: Path) -> dict[str, tuple[str, ...]]:
    """Every entry under ``root`` (not following links): regular files by content hash, links by target."""
    out: dict[str, tuple[str, ...]] = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                try:
                    out[p] = ("file", _hash(p))
                except OSError as e:
                    out[p] = ("file", f"unreadable {e.errno}")
            elif stat.S_ISLNK(st.st_mode):
                out[p] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[p] = ("dir",)
            else:
                out[p] = ("other", oct(stat.S_IFMT(st.st_mode)))
    return out


def listing(d: Path) -> set[str]:
    try:
        return set(os.listdir(d))
    except OSError:
        return set()


def _under(p: str, roots: list[Path]) -> bool:
    for r in roots:
        rs = os.fspath(r)
        if p == rs or p.startswith(rs.rstrip("/") + "/"):
            return True
    return False


def _resolved_outputs(prep: Prep) -> list[Path]:
    """The outputs and, for a link, the file it points to (written through)."""
    out: list[Path] = []
    for o in prep.outputs:
        p = o if o.is_absolute() else prep.cwd / o
        out.append(p)
        with contextlib.suppress(OSError):
            if p.is_symlink():
                t = Path(os.readlink(p))
                out.append(t if t.is_absolute() else p.parent / t)
    return out


# --- judging --------------------------------------------------------------------------------------------------------

_PY_ERROR = re.compile(r"^(\s+File \".*\", line \d+|[A-Za-z_][\w.]*(Error|Exception|Warning): )")


def error_line_problems(code: int, stderr: str) -> list[str]:
    """An error is one line ``archline: error: ...`` (the last); an interruption ends ``archline: interrupted``."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    problems = []
    if "Traceback (most recent call last)" in stderr or any(_PY_ERROR.match(ln) for ln in lines):
        problems.append("traceback or Python error text on stderr")
    if code == 0:
        return problems
    if not lines:
        return [*problems, "failed with nothing on stderr"]
    if code == 130 and lines[-1].startswith(("archline: interrupted", "archline: error: ")):
        return problems
    errs = [ln for ln in lines if ln.startswith("archline: error:")]
    if len(errs) != 1 or errs[0] != lines[-1]:
        problems.append(f"{len(errs)} 'archline: error:' lines (the error must be the one last line)")
    return problems


def judge(sit: Situation, prep: Prep, out: bi.Outcome, before: dict[str, tuple[str, ...]],
          after: dict[str, tuple[str, ...]], parent_new: set[str], tmp_new: set[str],
          reference: bi.Outcome | None = None, reference_prep: Prep | None = None) -> list[str]:
    """What is wrong with this outcome (empty: the case passed)."""
    if out.hang:
        return [out.exception]
    problems: list[str] = []
    if out.exception:
        problems.append("exception escaped main: " + out.exception.strip().splitlines()[-1])
    if out.code not in DOCUMENTED:
        problems.append(f"exit {out.code} is not a documented code")
    elif out.code not in (command_codes(sit.command) or DOCUMENTED):    # issue 36: the command's own row
        problems.append(f"exit {out.code} is not one of {sit.command}'s codes (docs/errors.md)")
    problems += error_line_problems(out.code, out.stderr)
    if sit.expect == "ok" and out.code != 0:
        problems.append(f"exit {out.code}, expected success")
    if sit.expect == "fail" and out.code == 0:
        problems.append("exit 0, expected an error")
    if out.code != 0 and sit.codes is not None and out.code not in sit.codes:
        problems.append(f"exit {out.code}, expected {sorted(sit.codes)}")
    outs = _resolved_outputs(prep)
    for p, was in before.items():
        now = after.get(p)
        if now == was:
            continue
        if _under(p, outs) and not _under(p, prep.new_only):
            continue
        what = "removed" if now is None else ("changed" if was[0] == now[0] else f"became a {now[0]}")
        problems.append(f"{what}: {_rel(p, prep.cwd)}")
    for p in sorted(set(after) - set(before)):
        if p.endswith(".tmp"):
            problems.append(f"temp file left: {_rel(p, prep.cwd)}")
        elif not (_under(p, outs) or _under(p, prep.new_only)):
            problems.append(f"written outside the named output: {_rel(p, prep.cwd)}")
    if parent_new:
        problems.append(f"written beside the case directory: {sorted(parent_new)[:3]}")
    if tmp_new:
        problems.append(f"left in the temp dir: {sorted(tmp_new)[:3]}")
    if reference is not None and out.code == 0 and reference_prep is not None:
        a, b = _normal(reference.stdout, reference_prep), _normal(out.stdout, prep)
        if sit.unlabelled and "warning" in out.stderr:   # a pipe has no sidecar: no label, overflows unknown
            a, b = (re.sub(r"\s*[\[(]emulated[\])]", "", x) for x in (a, b))
            a, b = (re.sub(r"overflows (\d+|unknown)", "overflows ?", x) for x in (a, b))
            if "bound excludes" in out.stderr:   # said so: without the sidecar the bound lacks the resolution terms
                a, b = (_without_column(x, "err_j") for x in (a, b))
        if reference.code == 0 and a != b:
            problems.append(f"stdout differs from the plain file's: {_first_diff(a, b)}")
    if sit.check is not None:
        problems += sit.check(prep, out)
    return problems


def _without_column(text: str, name: str) -> str:
    """``text`` with the column headed ``name`` removed from its whitespace-separated table rows."""
    lines = text.splitlines()
    head = next((ln.split() for ln in lines if name in ln.split()), None)
    if head is None:
        return text
    k = head.index(name)
    return "\n".join(" ".join(f for i, f in enumerate(ln.split()) if i != k) if len(ln.split()) >= k + 1 else ln
                     for ln in lines)


def _rel(p: str, cwd: Path) -> str:
    try:
        return ascii(os.path.relpath(p, cwd))
    except ValueError:
        return ascii(p)


def _normal(text: str, prep: Prep) -> str:
    for s in sorted(prep.norm, key=len, reverse=True):
        if len(s) >= 6:         # a path or a file name, never a bare "3" of /dev/fd/3
            text = text.replace(s, "{IN}")
        elif s.startswith("(") and s.endswith(")"):    # "(3)": the name of /dev/fd/3 in a message
            text = text.replace(s, "({IN})")
    text = re.sub(r"/dev/pts/\d+", "/dev/pts/N", text)        # the emulator's pty: whichever is free
    return text.replace(os.fspath(prep.cwd), "{D}")


def _first_diff(a: str, b: str) -> str:
    for x, y in zip(a.splitlines(), b.splitlines(), strict=False):
        if x != y:
            return f"{x[:90]!r} vs {y[:90]!r}"
    return f"{len(a.splitlines())} vs {len(b.splitlines())} lines"


# --- running in-process ---------------------------------------------------------------------------------------------

run_inproc = bi.run_inproc     # the matrix's in-process runner: the same main, timeout and logger reset


def _cleanup(prep: Prep, late: bool = False) -> None:
    for f in (prep.late_cleanup if late else prep.cleanup):
        with contextlib.suppress(Exception):
            f()


@dataclass
class Result:
    sit: Situation
    prep: Prep
    out: bi.Outcome
    problems: list[str]

    def line(self) -> str:
        first = next((ln for ln in self.out.stderr.splitlines() if ln.strip()), "")
        last = next((ln for ln in reversed(self.out.stderr.splitlines()) if ln.strip()), "")
        shown = last if last.startswith("archline: ") else first
        return (f"[{self.sit.area}] {self.sit.id}\n    $ archline {_shell(self.prep.args)}\n"
                f"    exit {self.out.code}; stderr: {shown[:200]!r}\n    problems: {'; '.join(self.problems)}")


def _shell(args: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) if a.isprintable() else ascii(a) for a in args)


class Runner:
    """Runs situations in ``work`` (one directory per case), the temp dir pointed at ``tmpdir``."""

    def __init__(self, work: Path, tmpdir: Path) -> None:
        self.work = work
        self.tmpdir = tmpdir
        work.mkdir(parents=True, exist_ok=True)
        self._n = 0
        self._refs: dict[str, tuple[bi.Outcome, Prep]] = {}

    def _case_dir(self) -> Path:
        self._n += 1
        d = self.work / f"c{self._n:04d}"
        d.mkdir()
        return d

    def reference(self, sit: Situation) -> tuple[bi.Outcome, Prep]:
        if sit.id not in self._refs:
            d = self._case_dir()
            prep = sit.prepare(d)
            try:
                out = run_inproc(prep.args, prep.cwd, prep.env, sit.timeout_s)
            finally:
                _cleanup(prep)
            self._refs[sit.id] = (out, prep)
        return self._refs[sit.id]

    def run(self, sit: Situation, by_id: dict[str, Situation] | None = None) -> Result:
        ref = ref_prep = None
        if sit.same_as is not None and by_id is not None:
            ref, ref_prep = self.reference(by_id[sit.same_as])
        d = self._case_dir()
        prep = sit.prepare(d)
        before, parent, tmp = snapshot(d), listing(self.work), listing(self.tmpdir)
        try:
            out = run_inproc(prep.args, prep.cwd, prep.env, sit.timeout_s)
        finally:
            _cleanup(prep)
        after = snapshot(d)
        _cleanup(prep, late=True)
        problems = judge(sit, prep, out, before, after, listing(self.work) - parent, listing(self.tmpdir) - tmp,
                         ref, ref_prep)
        return Result(sit, prep, out, problems)

    def run_guarded(self, sits: list[Situation]) -> list[Result]:
        """Cases that may read without end, in one child process limited to 3 GiB of address space."""
        preps = [(s, s.prepare(self._case_dir())) for s in sits]
        befores = [snapshot(p.cwd) for _, p in preps]
        parent, tmp = listing(self.work), listing(self.tmpdir)
        job = [{"args": p.args, "cwd": os.fspath(p.cwd), "env": p.env, "timeout_s": s.timeout_s} for s, p in preps]
        env = {**os.environ, "TMPDIR": os.fspath(self.tmpdir),
               "PYTHONPATH": os.pathsep.join([os.fspath(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
        outs: list[bi.Outcome] = []
        try:
            r = subprocess.run([sys.executable, "-c", "from support.situations import _guarded_child; "
                                "_guarded_child()"], input=json.dumps(job), capture_output=True, text=True,
                               env=env, timeout=60 + 15 * len(job), errors="surrogateescape")
            reason = f"guarded child died (exit {r.returncode}): {r.stderr.strip()[-300:]}"
            outs = [bi.Outcome(**o) for o in json.loads(r.stdout.splitlines()[-1])] if r.stdout.strip() else []
        except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
            reason = f"guarded child failed: {e}"
        results = []
        for k, (s, p) in enumerate(preps):
            _cleanup(p)
            if k >= len(outs):
                results.append(Result(s, p, bi.Outcome(-1, "", "", "hang: " + reason), [reason]))
                continue
            after = snapshot(p.cwd)
            _cleanup(p, late=True)
            problems = judge(s, p, outs[k], befores[k], after, set(), set())
            results.append(Result(s, p, outs[k], problems))
        parent_new, tmp_new = listing(self.work) - parent - {p.cwd.name for _, p in preps}, listing(self.tmpdir) - tmp
        if (parent_new or tmp_new) and results:
            results[0].problems.append(f"the guarded batch left {sorted(parent_new | tmp_new)[:3]}")
        return results


def _guarded_child() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    job = json.loads(sys.stdin.read())
    res = []
    for c in job:
        try:
            o = run_inproc(c["args"], Path(c["cwd"]), c["env"], c["timeout_s"])
        except MemoryError:
            o = bi.Outcome(1, "", "", "MemoryError: ran out of its 3 GiB reading")
        res.append({"code": o.code, "stdout": o.stdout[-4000:], "stderr": o.stderr[-4000:],
                    "exception": o.exception[-2000:]})
    print("\n" + json.dumps(res), file=sys.__stdout__)


# --- the invocations ------------------------------------------------------------------------------------------------

@dataclass
class Target:
    """A valid invocation of a command, its file arguments as fixture kinds."""

    path: tuple[str, ...]
    args: list[str]                 #: with ``{kind}`` placeholders for fixture files
    label: str = ""

    @property
    def name(self) -> str:
        return " ".join(self.path) + (f" [{self.label}]" if self.label else "")


#: invocations that read a file where the baselines read a name, or that write an output the baseline does not
EXTRA: list[tuple[tuple[str, ...], list[str], str]] = [
    (("model", "show"), ["{costs}"], "costs file"),
    (("model", "predict"), ["{costs}", "-i", "1"], "costs file"),
    (("platforms", "show"), ["{profile}"], "profile file"),
    (("plot",), ["{results}", "--out", "p.png"], "results file"),
    (("fit",), ["{results}", "--format", "json", "--out", "costs.json"], "--out"),
    (("fit",), ["{results}", "--points", "points.csv"], "--points"),
    (("fit",), ["{results}", "--figure", "fit.png"], "--figure"),
    (("predict",), ["{counts}", "--costs", "gtx580", "--plot", "b.png"], "--plot"),
    (("meter", "emulate"), ["--script", "{script}", "--duration", "0.2", "--port-file", "port.txt"], "script"),
    (("ipp", "gpu"), ["{gpu}"], "gpu file"),
    (("ipp", "sweep"), ["table4", "-k", "Dotp", "--plot", "ipp.png"], "--plot"),
    (("iso-power",), ["titan", "jetson-tk1", "--n", "22", "--plot", "iso.png"], "--plot"),
    (("throttle",), ["gtx580", "--delta-pi-w", "150", "-i", "0.5,4", "--plot", "throttle.png"], "--plot"),
    (("powers",), ["gtx580", "i7-950", "-i", "0.5,4", "--plot", "powers.png"], "--plot"),
    (("tradeoff",), ["fermi-sample", "--f", "1,2", "--m", "1,4", "--plot", "tradeoff.png"], "--plot"),
    (("codesign",), ["energy-cores-freq", "-a", "cg", "--llc", "4K", "--plot", "codesign.png"], "--plot"),
    (("ipp", "fit"), ["{ipprows}"], "rows file"),
    (("ipp", "validate"), ["{ipprows}", "--plot", "validate.png"], "rows file, --plot"),
]

#: slow baselines (seconds each): their situations run under -m slow, except where listed in FAST_SLOW
SLOW_COMMANDS = {("bench", "run"), ("bench", "sweep"), ("lab", "submit")}
#: commands whose baseline needs a submitted lab (handled by the lab situations)
LAB_COMMANDS = {("lab", "status"), ("lab", "collect"), ("lab", "submit")}


def targets(fx: bi.Fixtures) -> list[Target]:
    inv = {os.fspath(v): k for k, v in fx.files.items()}
    out: list[Target] = []
    for path, _ in bi.commands():
        base = bi.baseline(path, fx)
        if base is None or path in LAB_COMMANDS:
            continue
        out.append(Target(path, [*path, *[("{" + inv[a] + "}") if a in inv else a for a in base]]))
    out += [Target(p, [*p, *a], label) for p, a, label in EXTRA]
    return out


def area_of(path: tuple[str, ...], kind: str = "") -> str:
    if kind in ("costs", "dvfs") or path[0] in ("model", "tune", "bound") or path[:1] == ("iso-power",):
        return "cost table"
    if kind == "results" or path[0] in ("fit", "compare", "plot"):
        return "results CSV"
    if path[0] == "meter" or kind in ("samples", "raw", "script"):
        return "samples/meter"
    if path[0] in ("bench", "lab") or kind in ("sweep", "lab"):
        return "lab/bench"
    return "other"


def _copy_fixture(fx: bi.Fixtures, kind: str, d: Path, name: str | None = None) -> Path:
    src = fx.files[kind]
    dst = d / (name or src.name)
    shutil.copyfile(src, dst)
    side = src.with_name(src.name + ".json")
    if side.exists():
        shutil.copyfile(side, dst.with_name(dst.name + ".json"))
    return dst


def materialize(t: Target, fx: bi.Fixtures, d: Path) -> tuple[list[str], dict[str, Path]]:
    """The target's arguments with every fixture copied into ``d`` (kind -> its copy)."""
    files: dict[str, Path] = {}
    args = []
    for a in t.args:
        m = re.fullmatch(r"\{(\w+)\}", a)
        if m:
            kind = m.group(1)
            if kind not in files:
                files[kind] = _copy_fixture(fx, kind, d)
            args.append(os.fspath(files[kind]))
        else:
            args.append(a)
    return args, files


def _output_params(t: Target) -> list[tuple[str, int]]:
    """(parameter name, index of its value in ``t.args``) of the outputs the invocation names."""
    from support.badinputs import OUTPUT_PARAMS

    cmd = dict(bi.commands())[t.path]
    out = []
    for p in cmd.params:
        if p.name in OUTPUT_PARAMS and isinstance(p, __import__("click").Option):
            for k, a in enumerate(t.args[:-1]):
                if a in p.opts:
                    out.append((p.name, k + 1))
    return out


def _input_kinds(t: Target) -> list[tuple[int, str]]:
    return [(k, m.group(1)) for k, a in enumerate(t.args) if (m := re.fullmatch(r"\{(\w+)\}", a))]


# --- file kinds of an input ------------------------------------------------------------------------------------------

def _fifo_feeder(path: Path, data: bytes) -> Callable[[], None]:
    os.mkfifo(path)

    def write() -> None:
        with contextlib.suppress(OSError), open(path, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()

    def stop() -> None:
        if t.is_alive():       # nobody opened it (or not to the end): open the read side to unblock the writer
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                time.sleep(0.01)
                os.close(fd)
        t.join(2)

    return stop


def _pipe_feeder(data: bytes) -> tuple[str, Callable[[], None]]:
    r, w = os.pipe()

    def write() -> None:
        with contextlib.suppress(OSError):
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        with contextlib.suppress(OSError):
            os.close(w)

    t = threading.Thread(target=write, daemon=True)
    t.start()

    def stop() -> None:
        with contextlib.suppress(OSError):
            os.close(r)
        t.join(2)

    return f"/dev/fd/{r}", stop


def input_kind_situations(fx: bi.Fixtures) -> list[Situation]:
    out: list[Situation] = []
    for t in targets(fx):
        for idx, kind in _input_kinds(t):
            area = area_of(t.path, kind)
            slow = t.path in SLOW_COMMANDS
            base_id = f"{t.name} :: {kind} as a plain file"

            def plain(d: Path, t: Target = t, idx: int = idx) -> Prep:
                args, _ = materialize(t, fx, d)
                return Prep(args, d, outputs=_default_outputs(t, d), norm=[args[idx], Path(args[idx]).name])

            out.append(Situation(base_id, area, plain, expect="ok", slow=slow))
            sidecar = kind in SIDECAR_KINDS

            for how in ("fifo", "devfd", "symlink"):
                def variant(d: Path, t: Target = t, idx: int = idx, kind: str = kind, how: str = how) -> Prep:
                    args, files = materialize(t, fx, d)
                    src = files[kind]
                    prep = Prep(args, d, outputs=_default_outputs(t, d))
                    if how == "fifo":
                        fifo = d / ("fifo-" + src.name)
                        if src.with_name(src.name + ".json").exists():
                            shutil.copyfile(src.with_name(src.name + ".json"), fifo.with_name(fifo.name + ".json"))
                        prep.cleanup.append(_fifo_feeder(fifo, src.read_bytes()))
                        new = os.fspath(fifo)
                    elif how == "devfd":
                        new, stop = _pipe_feeder(src.read_bytes())
                        prep.cleanup.append(stop)
                        prep.norm.append(f"({Path(new).name})")
                    else:
                        link = d / ("link-" + src.name)
                        link.symlink_to(src.name)
                        new = os.fspath(link)
                    args[idx] = new
                    prep.norm += [new, Path(new).name]
                    return prep

                relative_out = t.path == ("bench", "sweep") and how == "devfd"   # its out is beside the config
                out.append(Situation(f"{t.name} :: {kind} as a {how}", area, variant,
                                     expect="any" if (sidecar and how != "fifo") or relative_out else "ok",
                                     same_as=base_id, unlabelled=sidecar and how == "devfd",
                                     slow=slow, timeout_s=30 if slow else 8))
            for how, code in (("devzero", 2), ("devnull", 2), ("symlink loop", 2), ("directory", 2),
                              ("dangling symlink", 2)):
                def bad(d: Path, t: Target = t, idx: int = idx, how: str = how) -> Prep:
                    args, _ = materialize(t, fx, d)
                    if how == "devzero":
                        args[idx] = "/dev/zero"
                    elif how == "devnull":
                        args[idx] = "/dev/null"
                    elif how == "symlink loop":
                        (d / "loop-a").symlink_to("loop-b")
                        (d / "loop-b").symlink_to("loop-a")
                        args[idx] = os.fspath(d / "loop-a")
                    elif how == "directory":
                        (d / "a-dir").mkdir()
                        args[idx] = os.fspath(d / "a-dir")
                    else:
                        (d / "dangling").symlink_to("no-such-target")
                        args[idx] = os.fspath(d / "dangling")
                    return Prep(args, d, outputs=_default_outputs(t, d))

                out.append(Situation(f"{t.name} :: {kind} as {how}", area, bad, expect="fail",
                                     codes=frozenset({code}), guarded=how == "devzero", slow=slow and how != "devzero",
                                     timeout_s=10))
    return out


def _default_outputs(t: Target, d: Path) -> list[Path]:
    """What the plain invocation writes (its named outputs; a sweep's out directory beside its config)."""
    outs = [d / t.args[k] for _, k in _output_params(t)]
    if t.path == ("bench", "sweep"):
        outs.append(d / "sweep-out")
    if t.path == ("meter", "record") or t.path == ("meter", "decode"):  # a trace's sidecar and raw capture
        outs += [Path(os.fspath(o) + s) for o in list(outs) for s in (".json",)]
        outs += [o.with_name(o.name.rsplit(".", 1)[0] + ".raw.bin") for o in list(outs) if o.suffix == ".csv"]
        outs += [Path(os.fspath(o) + ".json") for o in list(outs) if o.name.endswith(".raw.bin")]
    return outs


# --- outputs ----------------------------------------------------------------------------------------------------------

def _mount(fs_dir: Path, *, ro: bool) -> Callable[[], None] | None:
    """A 64 KiB tmpfs at ``fs_dir``, read-only or already full; None when it cannot be mounted here."""
    opts = "size=64k" + (",ro" if ro else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", os.fspath(fs_dir)], capture_output=True)
    if r.returncode != 0:
        return None
    if not ro:
        with open(fs_dir / ".filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)

    def umount() -> None:
        if subprocess.run(["umount", os.fspath(fs_dir)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", os.fspath(fs_dir)], capture_output=True)

    return umount


@contextlib.contextmanager
def _inject(fs_dir: Path, err: int) -> Iterator[None]:
    """Without a mount: every open for writing, mkdir and rename under ``fs_dir`` fails with ``err``."""
    import builtins

    root = os.fspath(fs_dir)
    real = (os.open, os.mkdir, os.replace, os.rename, builtins.open)

    def under(p: Any) -> bool:
        try:
            return os.path.abspath(os.fsdecode(p)).startswith(root)
        except TypeError:
            return False

    def fail(p: Any) -> OSError:
        return OSError(err, os.strerror(err), os.fsdecode(p))

    def o(p: Any, flags: int, *a: Any, **k: Any) -> int:
        if under(p) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise fail(p)
        return real[0](p, flags, *a, **k)

    def m(p: Any, *a: Any, **k: Any) -> None:
        if under(p):
            raise fail(p)
        real[1](p, *a, **k)

    def mv(src: Any, dst: Any, *a: Any, **k: Any) -> None:
        if under(dst):
            raise fail(dst)
        real[2](src, dst, *a, **k)

    def bo(p: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if not isinstance(p, int) and under(p) and any(c in mode for c in "wax+"):
            raise fail(p)
        return real[4](p, mode, *a, **k)

    os.open, os.mkdir, os.replace, os.rename, builtins.open = o, m, mv, mv, bo  # type: ignore[assignment]
    try:
        yield
    finally:
        os.open, os.mkdir, os.replace, os.rename, builtins.open = real  # type: ignore[assignment]


ODD_NAMES = {"newline": "a\nb", "space": "a b", "dash": "-a", "non-utf8": os.fsdecode(b"\xffa")}


def output_situations(fx: bi.Fixtures) -> list[Situation]:
    out: list[Situation] = []
    for t in targets(fx):
        kinds = _input_kinds(t)
        for pname, vidx in _output_params(t):
            value = t.args[vidx]
            is_dir = pname in bi.OUTPUT_DIRS
            ext = "" if is_dir else "".join(Path(value).suffixes)
            area = area_of(t.path, kinds[0][1] if kinds else "")
            slow = t.path in SLOW_COMMANDS
            plotting = ext in (".png", ".pdf", ".svg")
            label = f"{t.name} :: {pname}"

            def mk(how: str, t: Target = t, vidx: int = vidx, ext: str = ext, is_dir: bool = is_dir) -> Callable[
                    [Path], Prep]:
                def prep(d: Path) -> Prep:
                    args, files = materialize(t, fx, d)
                    p = Prep(args, d)
                    first = next(iter(files.values()), None)
                    if how == "same file" and first is not None:
                        args[vidx] = os.fspath(first)
                    elif how == "link to the input" and first is not None:
                        (d / f"out-link{ext}").symlink_to(first.name)
                        args[vidx] = os.fspath(d / f"out-link{ext}")
                    elif how == "./input" and first is not None:
                        args[vidx] = "./" + first.name
                    elif how in ("/dev/null", "/dev/full"):
                        args[vidx] = how
                    elif how == "link to a new file":
                        (d / f"out-link{ext}").symlink_to(f"real-target{ext}")
                        args[vidx] = f"out-link{ext}"
                        p.outputs.append(d / f"real-target{ext}")
                        p.extra["link"] = d / f"out-link{ext}"
                    elif how in ODD_NAMES:
                        args[vidx] = ODD_NAMES[how] + ext
                        if how == "dash":
                            args[vidx] = "-a" + ext
                        p.extra["name"] = d / (ODD_NAMES[how] + ext)
                    elif how in ("read-only dir", "full disk"):
                        fs = d / "fs"
                        fs.mkdir()
                        undo = _mount(fs, ro=how == "read-only dir")
                        if undo is None:   # inject the failure instead
                            e = errno.EROFS if how == "read-only dir" else errno.ENOSPC
                            cm = _inject(fs, e)
                            cm.__enter__()
                            def uninject(cm: contextlib.AbstractContextManager[None] = cm) -> None:
                                cm.__exit__(None, None, None)

                            p.cleanup.append(uninject)
                        else:
                            p.late_cleanup.append(undo)
                        args[vidx] = os.fspath(fs / ("out" + ext))
                    p.outputs += [Path(a) if Path(a).is_absolute() else d / a
                                  for a in [args[vidx]] if not a.startswith("/dev/")]
                    p.outputs += [o for o in _default_outputs(t, d) if o.name != Path(t.args[vidx]).name]
                    if t.path in (("meter", "record"), ("meter", "decode")):   # a trace's sidecar and raw capture
                        for o in list(p.outputs):                                 # (beside a link or its target)
                            stem = o.name[:-len(".csv")] if o.name.endswith(".csv") else o.name
                            p.outputs += [Path(os.fspath(o) + ".json"), o.with_name(stem + ".raw.bin"),
                                          o.with_name(stem + ".raw.bin.json")]
                    if how in ("same file", "link to the input", "./input"):
                        p.outputs = [o for o in p.outputs if o.resolve() != (first.resolve() if first else None)]
                    return p
                return prep

            cases: list[tuple[str, str, frozenset[int] | None, Callable[[Prep, bi.Outcome], list[str]] | None,
                              bool]] = []
            if kinds:
                for how in ("same file", "link to the input", "./input"):
                    cases.append((how, "fail", frozenset({2}), None, False))
            if is_dir:
                cases += [("/dev/null", "fail", frozenset({2, 7}), None, False),
                          ("link to a new file", "ok", None, _link_kept, False)]
            else:
                cases += [("/dev/null", "ok", None, _devnull_kept, False),
                          ("/dev/full", "fail", frozenset({7}), None, False),
                          ("link to a new file", "ok", None, _link_kept, False)]
            for n in ODD_NAMES:
                cases.append((n, "ok", None, _name_exact, plotting and n != "newline"))
            cases += [("read-only dir", "fail", frozenset({7}), None, plotting),
                      ("full disk", "fail", frozenset({7}), None, plotting)]
            for how, expect, codes, check, extra_slow in cases:
                if pname == "port_file" and check in (_name_exact, _link_kept):   # named only while the pty is open
                    check = _port_file_gone
                out.append(Situation(f"{label}={how}", area, mk(how), expect=expect, codes=codes, check=check,
                                     slow=slow or extra_slow, timeout_s=40 if slow else 12))
    return out


def _devnull_kept(prep: Prep, out: bi.Outcome) -> list[str]:
    return [] if stat.S_ISCHR(os.stat("/dev/null").st_mode) else ["/dev/null is no longer a character device"]


def _link_kept(prep: Prep, out: bi.Outcome) -> list[str]:
    link: Path = prep.extra["link"]
    if out.code != 0:
        return []
    if not link.is_symlink():
        return [f"{link.name} is no longer a symlink"]
    target = link.parent / os.readlink(link)
    if not target.exists():
        return [f"the link's target {target.name} was not written"]
    if target.is_file() and target.stat().st_size == 0:
        return [f"the link's target {target.name} is empty"]
    return []


def _port_file_gone(prep: Prep, out: bi.Outcome) -> list[str]:
    """``meter emulate --port-file F``: F names the pty only while it is open (issue 36), so once the command has
    ended it is gone, under its exact name or as a link's target (the link itself stays a link)."""
    left = [p for p in (prep.extra.get("name"), *[o for o in prep.outputs if o.name.startswith("real-target")])
            if p is not None and os.path.lexists(p)]
    link = prep.extra.get("link")
    bad = [f"{p.name!a} outlived the pty it names" for p in left]
    return bad + ([f"{link.name} is no longer a symlink"] if link is not None and not link.is_symlink() else [])


def _name_exact(prep: Prep, out: bi.Outcome) -> list[str]:
    want: Path = prep.extra["name"]
    if out.code != 0:
        return []
    if not os.path.lexists(want):
        return [f"no output named {want.name!a}; the directory holds "
                f"{sorted(ascii(n) for n in os.listdir(prep.cwd))[:6]}"]
    return []


# --- content that parses but lies, state from another version ---------------------------------------------------

def _mutate_json(path: Path, fn: Callable[[Any], Any], allow_nan: bool = True) -> None:
    d = json.loads(path.read_text())
    d = fn(d) or d
    path.write_text(json.dumps(d, allow_nan=allow_nan, indent=1))


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    return rows[0], rows[1:]


def _write_rows(path: Path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    path.write_text(buf.getvalue())


def content_situations(fx: bi.Fixtures) -> list[Situation]:
    out: list[Situation] = []

    def simple(sid: str, area: str, kind: str, mutate: Callable[[Path], None], args: Callable[[Path, Path], list[str]],
               expect: str = "fail", codes: frozenset[int] | None = frozenset({2}),
               check: Callable[[Prep, bi.Outcome], list[str]] | None = None, same_as: str | None = None,
               outputs: Callable[[Path], list[Path]] | None = None,
               new_only: Callable[[Path], list[Path]] | None = None) -> None:
        def prep(d: Path) -> Prep:
            f = _copy_fixture(fx, kind, d)
            mutate(f)
            a = args(d, f)
            return Prep(a, d, outputs=outputs(d) if outputs else [], new_only=new_only(d) if new_only else [],
                        norm=[os.fspath(f), f.name])
        out.append(Situation(sid, area, prep, expect=expect, codes=codes, check=check, same_as=same_as))

    nothing: Callable[[Path], None] = lambda f: None  # noqa: E731

    # cost tables
    def costs_unit(f: Path) -> None:
        def fn(d: Any) -> None:
            c = d["coefficients"]["eps_flop_sp"]
            c["value"], c["unit"] = c["value"] * 1e12, "pJ/flop"
            c.pop("stderr", None)
            c.pop("ci95", None)
        _mutate_json(f, fn)

    def costs_unit_ref(f: Path) -> None:
        def fn(d: Any) -> None:
            d["coefficients"]["eps_flop_sp"].pop("stderr", None)
            d["coefficients"]["eps_flop_sp"].pop("ci95", None)
        _mutate_json(f, fn)

    def costs_inf(f: Path) -> None:
        _mutate_json(f, lambda d: d["coefficients"]["eps_mem"].update(value=float("inf")))

    def costs_future(f: Path) -> None:
        _mutate_json(f, lambda d: d.update(generator={"name": "archline", "version": "99"}, format_minor=7))

    def costs_cmd(cmd: list[str], extra: list[str]) -> Callable[[Path, Path], list[str]]:
        return lambda d, f: [*cmd, os.fspath(f), *extra]

    for cmd, extra in ((["model", "show"], []), (["model", "predict"], ["-i", "1"])):
        ref = f"{' '.join(cmd)} :: cost table in J/flop (reference)"
        simple(ref, "cost table", "costs", costs_unit_ref, costs_cmd(cmd, extra), expect="ok")
        simple(f"{' '.join(cmd)} :: cost table with unit pJ/flop (converted or refused)", "cost table", "costs",
               costs_unit, costs_cmd(cmd, extra), expect="any", same_as=ref)
        simple(f"{' '.join(cmd)} :: cost table with eps_mem Infinity", "cost table", "costs", costs_inf,
               costs_cmd(cmd, extra))
        simple(f"{' '.join(cmd)} :: cost table with fields from a newer writer", "cost table", "costs",
               costs_future, costs_cmd(cmd, extra), expect="ok")

    # samples and their sidecar
    integrate = lambda d, f: ["meter", "integrate", os.fspath(f), "--format", "json"]  # noqa: E731

    def holes(f: Path) -> None:
        header, rows = _rows(f)
        ts = sorted({float(r[0]) for r in rows})
        gap = set(ts[len(ts) // 3: len(ts) // 3 + 64])       # half a second of 128 Hz missing
        _write_rows(f, header, [r for r in rows if float(r[0]) not in gap])

    def check_holes(prep: Prep, o: bi.Outcome) -> list[str]:
        if o.code == 6:
            return []
        if o.code == 0:
            try:
                lost = json.loads(o.stdout)["lost_samples"]
            except (ValueError, KeyError):
                return ["no lost_samples in the JSON"]
            return [] if lost >= 64 else [f"64 missing samples per channel counted as lost_samples={lost}"]
        return []

    def one_t(f: Path) -> None:
        header, rows = _rows(f)
        _write_rows(f, header, [[rows[0][0], *r[1:]] for r in rows])

    def far_power(f: Path) -> None:
        header, rows = _rows(f)
        k = header.index("power_w")
        _write_rows(f, header, [[*r[:k], str(float(r[k]) * 10), *r[k + 1:]] for r in rows])

    def side(fn: Callable[[Any], Any]) -> Callable[[Path], None]:
        return lambda f: _mutate_json(f.with_name(f.name + ".json"), fn)

    simple("meter integrate :: samples with a hole in the cadence", "samples/meter", "samples", holes, integrate,
           expect="any", codes=frozenset({6}), check=check_holes)
    simple("meter integrate :: samples all at one t_s", "samples/meter", "samples", one_t, integrate)
    simple("meter integrate :: samples with power_w far from V*I", "samples/meter", "samples", far_power, integrate)
    ref_int = "meter integrate :: samples as written (reference)"
    simple(ref_int, "samples/meter", "samples", nothing, integrate, expect="ok")
    simple("meter integrate :: sidecar from a newer version (extra fields)", "samples/meter", "samples",
           side(lambda d: d.update(format_version=9, new_field={"x": 1})), integrate, expect="ok", same_as=ref_int)
    simple("meter integrate :: sidecar with wrong types (rate_hz text)", "samples/meter", "samples",
           side(lambda d: d.update(rate_hz="fast", channels="all")), integrate)
    decode = lambda d, f: ["meter", "decode", os.fspath(f), "--out", "out.csv"]  # noqa: E731
    dec_out: Callable[[Path], list[Path]] = lambda d: [d / "out.csv", d / "out.csv.json"]  # noqa: E731
    simple("meter decode :: capture sidecar with NaN clock offset_s", "samples/meter", "raw",
           side(lambda d: d.update(clock={"offset_s": float("nan"), "seconds_per_device_s": 1.0, "drift_ppm": 0.0})),
           decode, outputs=dec_out)
    simple("meter decode :: capture sidecar with drift_ppm -1e6", "samples/meter", "raw",
           side(lambda d: d.update(clock={"offset_s": 100.0, "seconds_per_device_s": 1.0, "drift_ppm": -1e6})),
           decode, outputs=dec_out)
    simple("meter decode :: capture sidecar with wrong types (channels text)", "samples/meter", "raw",
           side(lambda d: d.update(channels="zero", period_ticks="eight")), decode, outputs=dec_out)
    simple("meter decode :: capture sidecar from a newer version (extra fields)", "samples/meter", "raw",
           side(lambda d: d.update(format_minor=3, calibration={"gain": 1.0})), decode, expect="ok",
           outputs=dec_out)

    # results CSV
    def escaped(f: Path) -> None:
        header, rows = _rows(f)
        k = header.index("platform")
        _write_rows(f, header, [[*r[:k], "../escaped", *r[k + 1:]] for r in rows])

    def fit_dir(d: Path, f: Path) -> list[str]:
        (d / "outdir").mkdir()
        return ["fit", os.fspath(f), "--format", "json", "--out", "outdir"]

    simple("fit :: results CSV with platform ../escaped, --out a directory", "results CSV", "results", escaped,
           fit_dir, expect="any", outputs=lambda d: [d / "outdir"])
    simple("fit :: results CSV with platform ../escaped, --figure", "results CSV", "results", escaped,
           lambda d, f: ["fit", os.fspath(f), "--points", "pts.csv"], expect="any", outputs=lambda d: [d / "pts.csv"])
    # issue 25/26 commands that read a file
    def cut_half(f: Path) -> None:
        f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])

    simple("bench export-ert :: results CSV as written", "results CSV", "results", lambda f: None,
           lambda d, f: ["bench", "export-ert", os.fspath(f), "--out", "r.json"], expect="ok",
           outputs=lambda d: [d / "r.json"])
    simple("bench export-ert :: results CSV cut in half", "results CSV", "results", cut_half,
           lambda d, f: ["bench", "export-ert", os.fspath(f), "--out", "r.json"], outputs=lambda d: [d / "r.json"])
    simple("measure :: counts file that is a results CSV, not an ncu export", "results CSV", "results",
           lambda f: None, lambda d, f: ["measure", "--platform", "gtx580", "--emulate", "--counts-file",
                                         os.fspath(f), "--counts-tool", "ncu", "--costs", "gtx580", "--", "true"])
    simple("measure :: a results CSV given as archline's counts CSV (no --counts-tool)", "results CSV", "results",
           lambda f: None, lambda d, f: ["measure", "--costs", "gtx580", "--counts-file", os.fspath(f), "--",
                                         "true"])
    simple("meter calibrate :: a sensor profile that is a results CSV", "results CSV", "results", lambda f: None,
           lambda d, f: ["meter", "calibrate", "nvml0", "--emulate", "--sensor-profile", os.fspath(f)])
    # meter probe / calibrate on real hardware read the --platform profile
    simple("meter probe :: --platform a results CSV", "results CSV", "results", lambda f: None,
           lambda d, f: ["meter", "probe", "ps3", "--platform", os.fspath(f), "--out", "s.json"],
           outputs=lambda d: [d / "s.json"])
    simple("meter probe :: --platform a profile cut in half", "platform profile", "profile", cut_half,
           lambda d, f: ["meter", "probe", "ps3", "--platform", os.fspath(f), "--out", "s.json"],
           outputs=lambda d: [d / "s.json"])
    simple("meter calibrate :: --platform profile without the meter named", "platform profile", "profile",
           lambda f: None, lambda d, f: ["meter", "calibrate", "no-such-meter", "--platform", os.fspath(f)])
    ref_fit = "fit :: results CSV once (reference)"
    simple(ref_fit, "results CSV", "results", nothing, lambda d, f: ["fit", os.fspath(f)], expect="ok")

    def twice(how: str) -> Callable[[Path, Path], list[str]]:
        def a(d: Path, f: Path) -> list[str]:
            if how == "link":
                (d / "link.csv").symlink_to(f.name)
                return ["fit", os.fspath(f), os.fspath(d / "link.csv")]
            return ["fit", os.fspath(f), os.fspath(f) if how == "same" else "./" + f.name]
        return a

    def warned(prep: Prep, o: bi.Outcome) -> list[str]:
        return [] if o.code != 0 or "warning" in o.stderr.lower() else ["no warning that a file was given twice"]

    for how in ("same", "./name", "link"):
        simple(f"fit :: the same results file twice ({how})", "results CSV", "results", nothing, twice(how),
               expect="ok", same_as=ref_fit, check=warned)
    return out


# --- lab state and the sweep's out directory ----------------------------------------------------------------------

class LabTemplate:
    """A lab submitted once (``lab submit``, the local scheduler), copied into each case."""

    def __init__(self, fx: bi.Fixtures, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fx.files["lab"], root / "lab.toml")
        o = run_inproc(["lab", "submit", "lab.toml", "--wait"], root, {}, 120)
        if o.code != 0:
            o = run_inproc(["lab", "status", "lab.toml", "--wait"], root, {}, 120)
        rec = root / "lab-results" / "n1" / "task.json"
        self.ok = rec.exists() and '"done"' in rec.read_text() and (rec.parent / "results.csv").exists()
        self.why = o.stderr.strip()[-300:]

    def copy(self, d: Path) -> Path:
        for p in self.root.iterdir():
            if p.is_dir():
                shutil.copytree(p, d / p.name, symlinks=True)
            else:
                shutil.copyfile(p, d / p.name)
        return d / "lab.toml"


def lab_situations(fx: bi.Fixtures, lab: Callable[[], LabTemplate]) -> list[Situation]:
    out: list[Situation] = []
    state = "lab-results/.lab/lab/submissions.json"
    record = "lab-results/n1/task.json"

    def case(sid: str, rel: str | None, fn: Callable[[Any], Any] | None, cmd: list[str], expect: str,
             codes: frozenset[int] | None = frozenset({2}), outputs: tuple[str, ...] = (),
             new_only: tuple[str, ...] = (), check: Callable[[Prep, bi.Outcome], list[str]] | None = None,
             raw: Callable[[Path], None] | None = None) -> None:
        def prep(d: Path) -> Prep:
            tpl = lab()
            assert tpl.ok, f"the lab template was not submitted: {tpl.why}"
            toml = tpl.copy(d)
            if rel is not None and fn is not None:
                _mutate_json(d / rel, fn)
            if raw is not None:
                raw(d)
            return Prep([*cmd[:2], os.fspath(toml), *cmd[2:]], d, outputs=[d / o for o in outputs],
                        new_only=[d / o for o in new_only])
        out.append(Situation(sid, "lab/bench", prep, expect=expect, codes=codes, check=check, timeout_s=30))

    def newer_sub(d: Any) -> None:
        d["format_version"] = 9
        for m in d["machines"].values():
            m["array_index"] = 3
            m["partition"] = {"name": "gpu"}

    def newer_rec(d: Any) -> None:
        d.update(format_version=9, gpu_serials=["x"], energy_budget_j=1e6)

    status = ["lab", "status", "--format", "json"]
    collect = ["lab", "collect", "--out", "collected"]
    case("lab status :: submissions.json from a newer version (extra fields)", state, newer_sub, status, "ok",
         check=_status_done)
    case("lab status :: task.json from a newer version (extra fields)", record, newer_rec, status, "ok",
         check=_status_done)
    case("lab collect :: task.json from a newer version (extra fields)", record, newer_rec, collect, "ok",
         outputs=("collected",))
    case("lab status :: submissions.json with wrong types", state,
         lambda d: d["machines"]["n1"].update(job_id=["a"], submitted_at=5), status, "fail")
    case("lab status :: task.json with wrong types", record,
         lambda d: d.update(state=5, point_ids="all", written="many"), status, "fail")
    case("lab status :: submissions.json whose machines is a list", state, lambda d: d.update(machines=[1, 2]),
         status, "fail")

    def escaped_rows(d: Path) -> None:
        f = d / "lab-results" / "n1" / "results.csv"
        header, rows = _rows(f)
        kp, kh = header.index("platform"), header.index("host")
        for r in rows:
            r[kp], r[kh] = "../../escaped", "../../../host"
        _write_rows(f, header, rows)

    case("lab collect :: rows with platform and host ../../escaped", None, None, collect, "any",
         codes=frozenset({2, 3}), outputs=("collected",), raw=escaped_rows)
    case("lab collect :: --out the lab's own results directory", None, None,
         ["lab", "collect", "--out", "lab-results"], "any", codes=frozenset({2, 7}), new_only=("lab-results",))
    return out


def _status_done(prep: Prep, o: bi.Outcome) -> list[str]:
    if o.code != 0:
        return []
    try:
        data = json.loads(o.stdout)
    except ValueError:
        return ["status --format json printed no JSON"]
    text = json.dumps(data)
    return [] if '"done"' in text else [f"the finished machine is not reported done: {text[:160]}"]


def sweep_situations(fx: bi.Fixtures) -> list[Situation]:
    def foreign(d: Path) -> Prep:
        cfg = _copy_fixture(fx, "sweep", d)
        (d / "sweep-out").mkdir()
        (d / "sweep-out" / "results.csv").write_text("a,b\n1,2\n")
        return Prep(["bench", "sweep", os.fspath(cfg)], d, new_only=[d / "sweep-out"])

    def check(prep: Prep, o: bi.Outcome) -> list[str]:
        return [] if (prep.cwd / "sweep-out" / "results.csv").read_text() == "a,b\n1,2\n" else [
            "the foreign results.csv was changed"]

    return [Situation("bench sweep :: out dir holds a results.csv with a foreign header (a,b)", "lab/bench", foreign,
                      expect="fail", codes=frozenset({2}), check=check, timeout_s=40)]


# --- issue 36: output names (empty, long, not UTF-8), long input names, meters that cannot open, refusals ---------

#: the gtx580 profile, from which the profiles of the meter cases are made
GTX580 = REPO / "formats" / "platforms" / "gtx580.toml"


def _long_name(t: Target, ext: str) -> str:
    """A name the file system takes (and the names made from it: ``.json``, ``.raw.bin.json``) whose hidden
    temporary name ``.NAME.PID.tmp`` would not fit in 255 bytes: the policy must shorten it, never refuse."""
    derived = 13 if t.path in (("meter", "record"), ("meter", "decode")) and ext == ".csv" else 5
    room = 255 - max(derived - len(ext) + 1, 5) - len(ext)
    return "n" * room + ext


def _profile(d: Path, name: str, meters: str, sub: tuple[str, str] | None = None) -> Path:
    """gtx580 renamed ``name``: its own [[meters]] replaced by ``meters`` (or one line substituted, ``sub``)."""
    text = re.sub(r'(?m)^name = "gtx580"', f'name = "{name}"', GTX580.read_text(), count=1)
    if sub is not None:
        assert sub[0] in text
        text = text.replace(sub[0], sub[1])
    else:
        text = text[:text.index("[[meters]]")] + meters
    p = d / f"{name}.toml"
    p.write_text(text)
    return p


def _plain_http(prep: Prep) -> str:
    """A plain-HTTP server on a free port for the case's life (a TLS client's handshake fails on it)."""
    import http.server

    srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    prep.cleanup.append(lambda: (srv.shutdown(), srv.server_close()))
    return f"https://127.0.0.1:{srv.server_address[1]}"


def _says(*words: str, never: tuple[str, ...] = ()) -> Callable[[Prep, bi.Outcome], list[str]]:
    """A check: the error line holds each of ``words`` and none of ``never``."""
    def check(prep: Prep, o: bi.Outcome) -> list[str]:
        last = next((ln for ln in reversed(o.stderr.splitlines()) if ln.strip()), "")
        bad = [f"the message lacks {w!r}" for w in words if w not in last]
        return bad + [f"the message says {w!r}" for w in never if w in last]
    return check


def _nothing_named(*names: str) -> Callable[[Prep, bi.Outcome], list[str]]:
    def check(prep: Prep, o: bi.Outcome) -> list[str]:
        return [f"{n} left behind" for n in names if os.path.lexists(prep.cwd / n)]
    return check


def issue36_situations(fx: bi.Fixtures) -> list[Situation]:
    """Issue 36's classes 'exit codes and messages', 'tracebacks' and 'files left behind', for every command with
    an output (``--out ''``, a long name, a non-UTF-8 ``.parquet``) or an input (a 300-character missing name),
    and the cases named in the issue (meters that cannot open, export-ert's refusals, an absurd emulated rate, a
    failed emulated run)."""
    out: list[Situation] = []
    for t in targets(fx):
        kinds = _input_kinds(t)
        area = area_of(t.path, kinds[0][1] if kinds else "")
        slow = t.path in SLOW_COMMANDS
        for pname, vidx in _output_params(t):
            ext = "" if pname in bi.OUTPUT_DIRS else "".join(Path(t.args[vidx]).suffixes)

            def empty(d: Path, t: Target = t, vidx: int = vidx) -> Prep:
                args, _ = materialize(t, fx, d)
                args[vidx] = ""
                return Prep(args, d)        # nothing may be written: the empty name is no output

            def long(d: Path, t: Target = t, vidx: int = vidx, ext: str = ext) -> Prep:
                args, _ = materialize(t, fx, d)
                args[vidx] = _long_name(t, ext)
                p = Prep(args, d, outputs=[d / args[vidx]], extra={"name": d / args[vidx]})
                p.outputs += [o for o in _default_outputs(t, d) if o.name != Path(t.args[vidx]).name]
                stem = args[vidx][:-len(".csv")] if args[vidx].endswith(".csv") else args[vidx]
                p.outputs += [d / (args[vidx] + ".json"), d / (stem + ".raw.bin"), d / (stem + ".raw.bin.json")]
                return p

            out.append(Situation(f"{t.name} :: {pname}='' (an unset variable)", area, empty, expect="fail",
                                 codes=frozenset({2}), slow=slow, timeout_s=40 if slow else 12))
            out.append(Situation(f"{t.name} :: {pname}=a legal name whose temp name passes NAME_MAX", area, long,
                                 expect="ok", check=None if pname == "port_file" else _name_exact,  # (gone at exit)
                                 slow=slow or ext in (".png", ".pdf", ".svg"), timeout_s=40 if slow else 12))
            if t.path in (("meter", "record"), ("meter", "decode")):
                def parquet(d: Path, t: Target = t, vidx: int = vidx) -> Prep:
                    args, _ = materialize(t, fx, d)
                    name = os.fsdecode(b"\xff.parquet")
                    args[vidx] = name
                    return Prep(args, d, outputs=[d / name, d / (name + ".json"), d / os.fsdecode(b"\xff.raw.bin"),
                                                  d / os.fsdecode(b"\xff.raw.bin.json")], extra={"name": d / name})
                out.append(Situation(f"{t.name} :: {pname}=a non-UTF-8 name ending in .parquet", area, parquet,
                                     expect="ok", check=_name_exact))
        for idx, kind in kinds:
            def missing(d: Path, t: Target = t, idx: int = idx) -> Prep:
                args, _ = materialize(t, fx, d)
                args[idx] = os.fspath(d / ("m" * 300 + ".csv"))
                return Prep(args, d, outputs=_default_outputs(t, d))
            out.append(Situation(f"{t.name} :: {kind} missing, with a 300-character name", area, missing,
                                 expect="fail", codes=frozenset({2}), slow=slow, timeout_s=40 if slow else 12))

    def case(sid: str, area: str, make: Callable[[Path, Prep], list[str]], codes: frozenset[int],
             check: Callable[[Prep, bi.Outcome], list[str]] | None = None, outputs: tuple[str, ...] = (),
             expect: str = "fail", timeout_s: float = 30) -> None:
        def prep(d: Path) -> Prep:
            p = Prep([], d, outputs=[d / o for o in outputs])
            p.args = make(d, p)
            return p
        out.append(Situation(sid, area, prep, expect=expect, codes=codes, check=check, timeout_s=timeout_s))

    four = frozenset({4})
    for kind, extra in (("amdsmi", "index = 0\n"), ("nvml", "index = 0\n"), ("hwmon", "")):
        meters = f'[[meters]]\nname = "only"\nkind = "{kind}"\n{extra}'
        case(f"measure :: a profile whose only meter is {kind} (cannot open here)", "samples/meter",
             lambda d, p, kind=kind, meters=meters: ["measure", "--platform", os.fspath(_profile(d, f"only{kind}",
                                                                                                  meters)), "--",
                                                     "true"], four, expect="any")
    case("measure :: --meter a redfish entry whose https URL is a plain-HTTP server", "samples/meter",
         lambda d, p: ["measure", "--platform", os.fspath(_profile(
             d, "tlsbmc", f'[[meters]]\nname = "bmc"\nkind = "redfish"\nurl = "{_plain_http(p)}"\n')),
             "--meter", "bmc", "--", "true"], four)

    def results(d: Path, rows: Callable[[list[str], list[list[str]]], list[list[str]]]) -> str:
        f = _copy_fixture(fx, "results", d)
        header, body = _rows(f)
        _write_rows(f, header, rows(header, body))
        return os.fspath(f)

    def zero_time(h: list[str], rows: list[list[str]]) -> list[list[str]]:
        rows[0][h.index("time_s")] = "0"
        return rows

    case("bench export-ert :: a results file with a header and no rows", "results CSV",
         lambda d, p: ["bench", "export-ert", results(d, lambda h, r: []), "--out", "r.json"], frozenset({2}),
         check=_nothing_named("r.json"), outputs=("r.json",))
    case("bench export-ert :: a row with time_s = 0", "results CSV",
         lambda d, p: ["bench", "export-ert", results(d, zero_time), "--out", "r.json"], frozenset({2}),
         check=_nothing_named("r.json"), outputs=("r.json",))
    case("bench run :: an emulated meter rate no emulator carries, even in real time", "lab/bench",
         lambda d, p: ["bench", "run", "--platform", os.fspath(_profile(d, "absurd", "", ("rate_hz = 250\n",
                                                                                           "rate_hz = 1000000\n"))),
                       "--emulate", "--meter", "ps3", "--quick", "--out", "r"], frozenset({2}),
         check=_says("rate_hz of meter 'ps3' to", never=("to 0 or less",)), outputs=("r",))
    case("bench run :: an emulated meter that never starts (disconnect=0) leaves no run directory", "lab/bench",
         lambda d, p: ["bench", "run", "--platform", os.fspath(_profile(
             d, "gone", "", ('port = "/dev/ttyUSB0"', 'port = "powermon://default?disconnect=0"'))),
             "--emulate", "--quick", "--kernel", "intensity", "--precision", "sp", "--out", "r"], four,
         check=_nothing_named("r"), outputs=("r",), timeout_s=60)

    def held(d: Path, p: Prep) -> list[str]:
        """A lab whose submit lock another ``lab submit`` holds (a lock on its own open file, as a process has)."""
        import fcntl

        shutil.copyfile(fx.files["lab"], d / "lab.toml")
        lock = d / "lab-results" / ".lab" / "lab" / "submit.lock"
        lock.parent.mkdir(parents=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"pid 1 since 2026-01-01T00:00:00Z\n")
        fcntl.flock(fd, fcntl.LOCK_EX)
        p.cleanup.append(lambda: os.close(fd))
        p.new_only.append(d / "lab-results")
        return ["lab", "submit", os.fspath(d / "lab.toml")]

    case("lab submit :: while another lab submit of the same lab runs", "lab/bench", held, frozenset({75}),
         check=_nothing_named("lab-results/n1/sweep.toml", "lab-results/.lab/lab/submissions.json"))
    return out


def all_situations(fx: bi.Fixtures, lab: Callable[[], LabTemplate]) -> list[Situation]:
    sits = (input_kind_situations(fx) + output_situations(fx) + content_situations(fx) + lab_situations(fx, lab)
            + sweep_situations(fx) + issue36_situations(fx))
    ids = [s.id for s in sits]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, dup
    return sits


# --- subprocesses: signals, a closed stdout, process substitution --------------------------------------------------

def archline_cmd() -> list[str]:
    return [sys.executable, "-m", "archline.cli"]


def _marked_processes(mark: str) -> list[int]:
    """Processes still alive whose environment carries ``mark`` (children and emulators a command left)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@dataclass
class Signalled:
    id: str
    args: list[str]
    cwd: Path
    code: int
    stderr: str
    signalled: bool
    delay_s: float
    problems: list[str]

    def line(self) -> str:
        last = next((ln for ln in reversed(self.stderr.splitlines()) if ln.strip()), "")
        return (f"[lab/bench] {self.id}\n    $ archline {_shell(self.args)}  (signal after {self.delay_s:.2f} s)\n"
                f"    exit {self.code}; stderr: {last[:200]!r}\n    problems: {'; '.join(self.problems)}")


def run_signalled(sid: str, args: list[str], cwd: Path, tmpdir: Path, sig: int | None, *, window_s: float,
                  rng: random.Random, limit_s: float = 60.0) -> Signalled:
    """Start ``archline *args``; once it has begun (stderr or a new file in ``cwd``), wait a random time in
    ``[0, window_s]`` and send ``sig`` (None: let it finish). Judges the invariants of an interruption."""
    mark = f"ARCHLINE_SITUATION_{os.getpid()}_{rng.randrange(1 << 30)}"
    env = {**os.environ, "TMPDIR": os.fspath(tmpdir), mark: "1"}
    cwd.mkdir(parents=True, exist_ok=True)
    before = snapshot(cwd)
    tmp_before = listing(tmpdir)
    err_path = cwd.parent / f".{cwd.name}.stderr"
    delay = rng.uniform(0.0, window_s)
    with open(err_path, "wb") as err:
        p = subprocess.Popen([*archline_cmd(), *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                             start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 and p.poll() is None:
            if err_path.stat().st_size or snapshot(cwd).keys() - before.keys():
                break
            time.sleep(0.05)
        time.sleep(delay)
        signalled = False
        if sig is not None and p.poll() is None:
            p.send_signal(sig)
            signalled = True
        try:
            code = p.wait(limit_s)
            hung = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            code, hung = p.wait(), True
    stderr = err_path.read_text(errors="replace")
    err_path.unlink()
    problems: list[str] = []
    if hung:
        problems.append(f"still running {limit_s:g} s after the signal")
    if code < 0:
        problems.append(f"killed by signal {-code} (exit {128 - code} in a shell)")
    elif code not in DOCUMENTED:
        problems.append(f"exit {code} is not a documented code")
    if sig is not None and signalled and code not in (130, 0) and code >= 0:
        problems.append(f"exit {code} after {signal.Signals(sig).name}, expected 130")
    if sig is None and code != 0:
        problems.append(f"exit {code}, expected success")
    problems += error_line_problems(code, stderr) if code >= 0 else []
    time.sleep(0.2)
    left = _marked_processes(mark)
    if left:
        problems.append(f"processes left running: {left}")
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    after = snapshot(cwd)
    for q, was in before.items():
        if after.get(q) != was and not q.endswith((".csv", ".log", ".lock", ".tmp")):   # a rerun may clear .tmp
            problems.append(f"changed: {_rel(q, cwd)}")
    for q in sorted(set(after) - set(before)):
        if q.endswith(".tmp"):
            problems.append(f"temp file left: {_rel(q, cwd)}")
    problems += complete_outputs(cwd, after)
    new_tmp = listing(tmpdir) - tmp_before
    if new_tmp:
        problems.append(f"left in the temp dir: {sorted(new_tmp)[:3]}")
    return Signalled(sid, args, cwd, code, stderr, signalled, delay, problems)


def complete_outputs(cwd: Path, snap: dict[str, tuple[str, ...]]) -> list[str]:
    """Every output kept is whole: a CSV ends with a newline and has as many fields in each row as in its header;
    a .gz decompresses; a JSON parses."""
    problems = []
    for q, what in snap.items():
        if what[0] != "file":
            continue
        name = os.path.basename(q)
        try:
            if name.endswith(".csv"):
                text = Path(q).read_text()
                rows = list(csv.reader(io.StringIO(text)))
                if text and (not text.endswith("\n") or any(len(r) != len(rows[0]) for r in rows)):
                    problems.append(f"incomplete CSV kept: {_rel(q, cwd)}")
            elif name.endswith(".gz"):
                with gzip.open(q) as g:
                    g.read()
            elif name.endswith(".json"):
                json.loads(Path(q).read_text())
        except (OSError, ValueError, EOFError, UnicodeDecodeError) as e:
            problems.append(f"incomplete output kept: {_rel(q, cwd)} ({type(e).__name__})")
    return problems


def run_closed_stdout(args: list[str], cwd: Path, tmpdir: Path) -> tuple[int, str]:
    """``archline *args | true``: stdout a pipe whose read end is already closed."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([*archline_cmd(), *args], cwd=cwd, stdout=w, stderr=subprocess.PIPE, timeout=60,
                           env={**os.environ, "TMPDIR": os.fspath(tmpdir)})
    finally:
        os.close(w)
    return p.returncode, p.stderr.decode(errors="replace")


# --- a report of every case, grouped by area (``PYTHONPATH=tests python3 -m support.situations [--slow] [WORD]``) --

def report(argv: list[str]) -> int:
    """Run every in-process and guarded case (``--slow``: the slow ones too) whose id holds WORD; print the failing
    ones grouped by area."""
    slow = "--slow" in argv
    word = next((a for a in argv if not a.startswith("--")), "")
    root = Path(tempfile.mkdtemp(prefix="situations-"))
    tmpd = root / "tmp"
    tmpd.mkdir()
    os.environ["TMPDIR"] = tempfile.tempdir = os.fspath(tmpd)
    fx = bi.Fixtures(root / "fx")
    box: list[LabTemplate] = []

    def lab() -> LabTemplate:
        if not box:
            box.append(LabTemplate(fx, root / "lab"))
        return box[0]

    sits = [s for s in all_situations(fx, lab) if word in s.id and (slow or not s.slow)]
    runner = Runner(root / "work", tmpd)
    by_id = {s.id: s for s in all_situations(fx, lab)}
    results = [runner.run(s, by_id) for s in sits if not s.guarded] + runner.run_guarded(
        [s for s in sits if s.guarded])
    bad = [r for r in results if r.problems]
    for area in AREAS:
        mine = [r for r in bad if r.sit.area == area]
        if mine:
            print(f"\n== {area}: {len(mine)} failing ==")
            for r in mine:
                print(r.line())
    print(f"\n{len(results)} cases, {len(bad)} failing")
    shutil.rmtree(root, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(report(sys.argv[1:]))
