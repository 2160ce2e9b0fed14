"""The bad-input matrix: every ``archline`` command (enumerated from the click tree, so a new command is covered
without touching this file) run with bad files (binary, empty, truncated, a directory, missing), unwritable output
paths and bad values, in-process, each case in a fresh working directory.

A case passes when the command

* raises no exception out of ``main`` and prints no traceback,
* on failure prints exactly one line on stderr, ``archline: error: ...``, and exits non-zero,
* fails at all when the case is ``must_fail`` (a bad file, an unwritable path, NaN, a negative number ...),
* leaves no new file behind when it fails (in its working directory, beside its inputs, or in the temp dir).

Used by ``tests/package/test_bad_inputs.py`` (the must-fail cases, in the default run) and by
``benchmarks/bad_inputs.py`` (every case, plus the issue's own list, with counts).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from archline.common.exits import EXIT_SAMPLES_LOST

REPO = Path(__file__).resolve().parents[2]

#: parameters that name an output (a file or a directory the command writes)
OUTPUT_PARAMS = {"out", "out_dir", "figure", "points", "plot_path", "port_file"}
#: parameters that are directories the command writes into
OUTPUT_DIRS = {"out_dir"}
#: text parameters that accept a file (a profile, cost table, kernel file, ...) as well as a name
FILEISH_TEXT = {"name_or_costs", "name_or_profile", "files_or_costs", "costs", "kernels", "gpu_name", "big", "small",
                "platform", "name"}
#: what kind of file a parameter reads (for a truncated copy of a valid one)
FILE_KIND = {"files": "results", "config": "sweep", "raw": "raw", "samples": "samples", "script": "script",
             "counts": "counts", "machine_file": "machine", "measured": "measured", "ptx_file": "ptx",
             "name_or_costs": "costs", "name_or_profile": "profile", "files_or_costs": "costs", "costs": "costs",
             "kernels": "kernels", "gpu_name": "gpu", "big": "costs", "small": "costs", "platform": "profile",
             "name": "profile", "lab_toml": "lab", "inputs": "results"}
#: outputs that may be an existing directory (fit --out with several platforms writes one file each into it)
OUTPUT_DIR_OK = {("fit", "out")}
#: options whose garbage text is not an error (free text, or parsed leniently on purpose)
LENIENT_TEXT = {("meter", "record", "channels"), ("meter", "decode", "channels")}


@dataclass
class Case:
    name: str
    args: list[str]
    must_fail: bool = True
    env: dict[str, str] = field(default_factory=dict)
    needle: str = ""          #: a word the error line must contain (optional)
    expect_code: int | None = None
    expect_ok: bool = False   #: a valid baseline: it must succeed


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    exception: str = ""       #: an exception that escaped main (a crash)
    new_files: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return (bool(self.exception) and not self.hang) or "Traceback (most recent call last)" in self.stderr

    @property
    def hang(self) -> bool:
        return self.exception.startswith("hang:")


def judge(case: Case, out: Outcome) -> list[str]:
    """What is wrong with this outcome (empty: the case passed)."""
    problems: list[str] = []
    if out.hang:
        return [out.exception]
    if out.traceback:
        problems.append("traceback: " + (out.exception.strip().splitlines()[-1] if out.exception else "in stderr"))
        return problems
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    if case.expect_ok and out.code != 0:
        return [f"the valid baseline failed: {(lines or ['?'])[-1][:200]}"]
    if out.code == 0:
        if case.must_fail:
            problems.append("exit 0")
        elif case.needle and case.needle not in out.stderr:
            problems.append(f"exit 0 without {case.needle!r} on stderr")
        return problems
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr")
    elif not lines[0].startswith("archline: "):
        problems.append(f"error line does not start with 'archline: ': {lines[0][:80]!r}")
    if any(s in out.stderr for s in ("np.float", "np.int", "array(")):
        problems.append("numpy repr in the message")
    if case.needle and case.needle not in out.stderr:
        problems.append(f"message lacks {case.needle!r}")
    if case.expect_code is not None and out.code != case.expect_code:
        problems.append(f"exit {out.code}, expected {case.expect_code}")
    if out.new_files and out.code != EXIT_SAMPLES_LOST:   # a lossy recording keeps what arrived, whole
        problems.append(f"new files: {out.new_files[:3]}")
    return problems


# --- the click tree ---------------------------------------------------------------------------------------------

def commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command of ``archline``, with its path (("meter", "record"), ...)."""
    from archline.cli.main import cli

    out: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        ctx = click.Context(cmd, info_name=path[-1] if path else "archline", parent=parent)
        if isinstance(cmd, click.Group):
            for n in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, n)
                if sub is not None:
                    walk(sub, (*path, n), ctx)
        else:
            out.append((path, cmd))

    walk(cli, (), None)
    return out


def _flag(p: click.Parameter) -> str | None:
    if isinstance(p, click.Option):
        longs = [o for o in p.opts if o.startswith("--")]
        return longs[0] if longs else p.opts[0]
    return None


def _is_numeric(p: click.Parameter) -> bool:
    return isinstance(p.type, (click.types.FloatParamType, click.types.IntParamType))


def _is_path(p: click.Parameter) -> bool:
    return isinstance(p.type, (click.Path, click.File))


# --- valid inputs ------------------------------------------------------------------------------------------------

class Fixtures:
    """Valid input files of every kind, in ``root`` (built once; cases never write here)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.files: dict[str, Path] = {}
        self._build()

    def _put(self, kind: str, name: str, data: bytes | str) -> Path:
        p = self.root / name
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        self.files[kind] = p
        return p

    def _build(self) -> None:
        import numpy as np

        from archline.model.dvfs import costs_at
        from archline.powermon.emulator.power import DEFAULT_SCRIPT
        from archline.powermon.powermon2.protocol import (
            code_from_amps,
            code_from_volts,
            encode_done,
            encode_samples,
            encode_time,
        )

        sample = REPO / "results" / "sample"
        csv = next(p for p in sorted(sample.glob("*.csv")))
        self._put("results", "results.csv", csv.read_bytes())
        self._put("measured", "measured.csv", self._measured())
        self._put("costs", "costs.json", (sample / "gtx580.costs.json").read_bytes())
        self._put("ipprows", "ipp-rows.csv",
                  (REPO / "fit" / "analyses" / "data" / "ipp-microbench-emulated.csv").read_bytes())
        self._put("profile", "profile.toml", (REPO / "formats" / "platforms" / "gtx580.toml").read_bytes())
        coeffs = {"c0_core_single": 28e-12, "delta_c0_core_double": 160e-12, "c0_mem": 220e-12,
                  "c0_core_integer": 22e-12, "c0_core_sm": 9e-12, "c0_core_l2": 35e-12, "c1_core": 2.2,
                  "c1_mem": 0.8, "pi_misc": 1.4}
        settings = [{"core_mhz": fc, "mem_mhz": fm, "core_v": cv, "mem_v": mv,
                     **costs_at(coeffs, cv, mv).as_dict()}
                    for fc, fm, cv, mv in ((852, 924, 1.1, 1.35), (396, 528, 0.9, 1.25))]
        self._put("dvfs", "dvfs.json", json.dumps({"schema": "archline.costs/1", "platform": "tk1-fixture",
                                                   "model": "dvfs", "emulated": True,
                                                   "coefficients": {k: {"value": v} for k, v in coeffs.items()},
                                                   "settings": settings}))
        self._put("sweep", "sweep.toml", '[sweep]\nplatform = "gtx580"\nemulate = true\nquick = true\n'
                  'kernels = ["intensity"]\nprecisions = ["sp"]\nout = "sweep-out"\n')
        self._put("lab", "lab.toml", '[lab]\nresults = "lab-results"\nscheduler = "local"\n\n[[machine]]\n'
                  'name = "n1"\nplatform = "gtx580"\nemulate = true\nquick = true\nkernels = ["intensity"]\n'
                  'precisions = ["sp"]\n')
        # a raw PowerMon 2 capture: 3 s of 3 channels at 128 Hz, time records once a second, a done record
        chans, period = [0, 1, 2], 8
        parts = []
        for ev in range(3 * 128):
            if ev and ev % 128 == 0:
                parts.append(encode_time(ev // 128))
            v, a = DEFAULT_SCRIPT.sample(np.array([ev / 128]), chans)
            parts.append(encode_samples(chans, code_from_volts(v[0]), code_from_amps(a[0])))
        parts.append(encode_done())
        raw = self._put("raw", "capture.raw.bin", b"".join(parts))
        (self.root / "capture.raw.bin.json").write_text(json.dumps(
            {"format": "archline.powermon2.raw/1", "channels": chans, "period_ticks": period, "time_set_s": 0,
             "emulated": True, "meter": "fixture"}))
        from archline.powermon.offline import decode_file

        decode_file(raw, self.root / "samples.csv")
        self.files["samples"] = self.root / "samples.csv"
        self._put("script", "script.json", json.dumps({"steps": [{"t_s": 0, "channels": {"0": [12.0, 2.0]}}]}))
        self._put("counts", "counts.csv", "name,time_s,flops_sp,bytes_mem\nk1,0.5,1e9,4e9\nk2,0.2,4e9,1e9\n")
        self._put("machine", "machine.toml", 'name = "fixture"\ncores_max = 8\n')
        self._put("ptx", "kernel.ptx", "    ld.global.f32 %f1, [%rd2];\n    fma.rn.f32 %f2, %f1, %f1, %f1;\n"
                  "    ret;\n")
        from archline.cli.main import main

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["ipp", "example"])
        self._put("kernels", "kernels.toml", buf.getvalue())
        self._put("gpu", "gpu.toml", (REPO / "fit" / "analyses" / "data" / "ipp-gtx280.toml").read_bytes())
        # bad files
        self._put("binary", "binary.dat", bytes(range(256)) * 8 + b"\xff\xfe\x00\x80" * 64)
        self._put("empty", "empty.dat", b"")
        d = self.root / "a-directory"
        d.mkdir(exist_ok=True)
        self.files["directory"] = d
        self.files["missing"] = self.root / "no-such-file.csv"
        self._put("plain", "plain.txt", "just text\n")

    def _measured(self) -> str:
        rows = ["kernel,precision,level,core_mhz,mem_mhz,core_v,mem_v,time_s,energy_j,flops_sp,bytes_mem"]
        for fc, fm, cv, mv in ((852, 924, 1.1, 1.35), (396, 528, 0.9, 1.25)):
            for i in (0.5, 2.0, 8.0):
                rows.append(f"intensity,sp,mem,{fc},{fm},{cv},{mv},{1.0 / fc},{3.0 / fc + i},{i * 1e9},1e9")
        return "\n".join(rows) + "\n"

    def truncated(self, kind: str) -> Path:
        """A copy of the valid ``kind`` file cut short: mid-record for a capture, mid-value for TOML (inside a quoted
        string or an inline table, where a cut cannot leave valid TOML), mid-field for CSV and the rest."""
        src = self.files.get(kind, self.files["results"])
        data = src.read_bytes()
        cut = max(1, int(len(data) * 0.6))
        if kind == "raw":
            cut -= cut % 4
            cut += 2
        elif src.suffix == ".toml":
            lines = data.splitlines(keepends=True)
            pos = 0
            for ln in lines:
                if pos >= cut and (b'= "' in ln or b"= {" in ln or b"= [" in ln):
                    k = ln.index(b"= ") + 3
                    cut = pos + k + 1
                    break
                pos += len(ln)
        else:
            while cut < len(data) - 1 and data[cut:cut + 1] in (b"\n", b",", b" ", b'"'):
                cut += 1
        p = self.root / f"truncated-{kind}{''.join(src.suffixes)}"
        if not p.exists():
            p.write_bytes(data[:cut])
            side = src.with_name(src.name + ".json")
            if side.exists() and kind in ("raw",):
                p.with_name(p.name + ".json").write_bytes(side.read_bytes())
        return p


# --- cases ---------------------------------------------------------------------------------------------------------

def baseline(path: tuple[str, ...], fx: Fixtures) -> list[str] | None:
    """A valid, cheap invocation of the command (None: not known; the generic cases still run)."""
    f = {k: str(v) for k, v in fx.files.items()}
    table: dict[tuple[str, ...], list[str]] = {
        ("bench", "list"): [],
        ("bench", "run"): ["--platform", "gtx580", "--emulate", "--quick", "--kernel", "intensity", "--precision",
                           "sp", "--out", "run-out"],
        ("bench", "sweep"): [f["sweep"]],
        ("bound",): ["fft", "--fast-memory", "512KiB"],
        ("compare",): [f["results"], "--by", "host"],
        ("lab", "collect"): [f["lab"], "--out", "collected"],
        ("lab", "status"): [f["lab"]],
        ("lab", "submit"): [f["lab"]],
        ("design-space",): ["cg"],
        ("codesign",): ["energy-cores-freq", "-a", "cg", "--llc", "4K"],
        ("fit",): [f["results"]],
        ("ipp", "example"): [],
        ("ipp", "fit"): [f["ipprows"]],
        ("ipp", "validate"): [f["ipprows"]],
        ("ipp", "microbench"): ["--noise", "0.01"],
        ("ipp", "gpu"): ["gtx280"],
        ("ipp", "optimal"): ["table4"],
        ("ipp", "power"): [],
        ("ipp", "ptx"): [f["ptx"]],
        ("ipp", "savings"): ["table4"],
        ("ipp", "sweep"): ["table4", "-k", "Dotp"],
        ("ipp", "temperature"): [f["kernels"]],
        ("ipp", "timing"): ["table4"],
        ("iso-power",): ["titan", "jetson-tk1", "--n", "22", "--set-b", "pi0=2"],
        ("throttle",): ["gtx580", "--delta-pi-w", "150", "-i", "0.5,4"],
        ("power-bound",): [],
        ("powers",): ["gtx580", "i7-950", "--set", "gtx580:delta_pi=150", "-i", "0.5,4"],
        ("tradeoff",): ["fermi-sample", "--f", "1,2", "--m", "1,4"],
        ("meter", "decode"): [f["raw"], "--out", "samples-out.csv"],
        ("meter", "emulate"): ["--duration", "0.2"],
        ("meter", "integrate"): [f["samples"]],
        ("meter", "list"): [],
        ("meter", "record"): ["--meter", "emulated:4", "--channels", "0,1", "--duration", "0.3", "--out",
                              "rec.csv"],
        ("model", "keckler"): ["gtx580"],
        ("model", "peak"): ["gtx580", "--mix", "fmmu"],
        ("model", "plot"): ["gtx580", "--out", "m.png"],
        ("model", "predict"): ["gtx580", "--intensity", "0.5,4"],
        ("model", "show"): ["gtx580"],
        ("platforms", "list"): [],
        ("platforms", "show"): ["gtx580"],
        ("plot",): ["gtx580", "--out", "p.png"],
        ("predict",): [f["counts"], "--costs", "gtx580"],
        ("tune",): ["--costs", f["dvfs"], "--intensity", "2", "--flops-per-cycle", "384", "--bytes-per-cycle",
                    "16"],
    }
    return table.get(path)


def _set(args: list[str], p: click.Parameter, values: Sequence[str], cmd: click.Command) -> list[str]:
    """``args`` with parameter ``p`` set to ``values`` (replacing any value it had)."""
    flag = _flag(p)
    if flag is not None:
        out: list[str] = []
        skip = 0
        names = set(p.opts) | set(getattr(p, "secondary_opts", []))
        for a in args:
            if skip:
                skip -= 1
                continue
            if a in names:
                skip = 0 if getattr(p, "is_flag", False) else 1
                continue
            out.append(a)
        for v in values:
            out += [flag, v]
        return out
    # an argument: its position among the arguments of the command
    positional = [q for q in cmd.params if isinstance(q, click.Argument)]
    k = positional.index(p)  # type: ignore[arg-type]
    pos_vals, opts = _split_positional(args, cmd)
    while len(pos_vals) <= k:
        pos_vals.append([])
    pos_vals[k] = list(values)
    return [v for vals in pos_vals for v in vals] + opts


def _split_positional(args: list[str], cmd: click.Command) -> tuple[list[list[str]], list[str]]:
    """Positional values (grouped per argument) and the options of a baseline."""
    option_takes = {}
    for q in cmd.params:
        if isinstance(q, click.Option):
            for o in (*q.opts, *q.secondary_opts):
                option_takes[o] = 0 if q.is_flag or q.count else 1
    pos: list[str] = []
    opts: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in option_takes:
            n = option_takes[a]
            opts += args[i:i + 1 + n]
            i += 1 + n
            continue
        pos.append(a)
        i += 1
    arguments = [q for q in cmd.params if isinstance(q, click.Argument)]
    grouped: list[list[str]] = []
    rest = list(pos)
    for q in arguments:
        if q.nargs == -1:
            grouped.append(rest)
            rest = []
        else:
            grouped.append(rest[:1])
            rest = rest[1:]
    return grouped, opts


def _fill_required(cmd: click.Command, fx: Fixtures) -> list[str]:
    """For a command with no known baseline: every required parameter gets a plain text file."""
    args: list[str] = []
    for p in cmd.params:
        if p.required:
            args = _set(args, p, [str(fx.files["plain"])], cmd)
    return args


def cases(fx: Fixtures, *, include_may_pass: bool = True) -> list[tuple[tuple[str, ...], Case]]:
    """The generic matrix over every command."""
    out: list[tuple[tuple[str, ...], Case]] = []
    for path, cmd in commands():
        out.extend((path, Case(c.name, [*path, *c.args], c.must_fail, c.env, c.needle, c.expect_code))
                   for c in _command_cases(path, cmd, fx, include_may_pass))
    return out


def _command_cases(path: tuple[str, ...], cmd: click.Command, fx: Fixtures, include_may_pass: bool) -> list[Case]:
    out: list[Case] = []
    if True:
        base = baseline(path, fx)
        known = base is not None
        base = list(base) if base is not None else _fill_required(cmd, fx)
        label = " ".join(path)
        out.append(Case(f"{label}: unknown option", [*base, "--no-such-option"]))
        if not any(isinstance(q, click.Argument) and q.nargs == -1 for q in cmd.params):
            out.append(Case(f"{label}: extra argument", [*base, "extra-argument"]))
        if not known:
            out.append(Case(f"{label}: no baseline, required params given a plain text file", ["--help"]
                                   if not any(p.required for p in cmd.params) else base, must_fail=any(
                                       p.required for p in cmd.params)))
        for p in cmd.params:
            if p.name is None or p.name in ("help",):
                continue
            name = p.name
            is_choice = isinstance(p.type, click.Choice)
            if name in OUTPUT_PARAMS:
                is_dir = name in OUTPUT_DIRS or (isinstance(p.type, click.Path) and not p.type.file_okay)
                dir_ok = (*path, name) in OUTPUT_DIR_OK or (isinstance(p.type, click.Path) and p.type.dir_okay)
                for kind, target in _unwritable(fx, is_dir, dir_ok):
                    out.append(Case(f"{label} {name}={kind}", _set(base, p, [target], cmd)))
                if name in ("figure", "plot_path") or (name == "out" and path in (("plot",), ("model", "plot"))):
                    out.append(Case(f"{label} {name}=unknown-suffix", _set(base, p, ["fig.xyz"], cmd)))
                if name == "out" and path in (("meter", "record"), ("meter", "decode")):
                    out.append(Case(f"{label} {name}=unknown-suffix", _set(base, p, ["trace.xyz"], cmd)))
                continue
            if _is_path(p) or name in FILEISH_TEXT:
                kind = FILE_KIND.get(name, "results")
                for bad in ("binary", "empty", "directory", "missing"):
                    out.append(Case(f"{label} {name}={bad}", _set(base, p, [str(fx.files[bad])], cmd)))
                out.append(Case(f"{label} {name}=truncated-{kind}",
                                       _set(base, p, [str(fx.truncated(kind))], cmd)))
                continue
            if _is_numeric(p):
                is_int = isinstance(p.type, click.types.IntParamType)
                for v in ("nan", "inf", "-inf", "-1", "abc", "1e400"):
                    if is_int and v in ("nan", "inf", "-inf", "1e400"):
                        continue
                    if name == "seed" and v == "-1":
                        out.append(Case(f"{label} {name}={v}", _set(base, p, [v], cmd), must_fail=False))
                        continue
                    out.append(Case(f"{label} {name}={v}", _set(base, p, [v], cmd)))
                if include_may_pass:
                    for v in ("0", "1e300" if not is_int else str(2**62)):
                        out.append(Case(f"{label} {name}={v}", _set(base, p, [v], cmd), must_fail=False))
                continue
            if is_choice or getattr(p, "is_flag", False) or isinstance(p.type, click.types.BoolParamType):
                continue
            if (*path, name) in LENIENT_TEXT:
                out.append(Case(f"{label} {name}=garbage", _set(base, p, ["x,y"], cmd)))
                continue
            out.append(Case(f"{label} {name}=no-such-thing", _set(base, p, ["no-such-thing-xyz"], cmd)))
            if include_may_pass:
                out.append(Case(f"{label} {name}=empty-string", _set(base, p, [""], cmd), must_fail=False))
    return out


def _unwritable(fx: Fixtures, is_dir: bool, dir_ok: bool = False) -> list[tuple[str, str]]:
    under_file = str(fx.files["plain"] / Path("sub") / ("out" if is_dir else "out.png"))
    kinds = [("under-a-file", under_file), ("in-proc", "/proc/archline-no/out.png")]
    if not is_dir and not dir_ok:
        kinds.append(("is-a-directory", str(fx.files["directory"])))
    return kinds


# --- running --------------------------------------------------------------------------------------------------------

def _snapshot(*dirs: Path) -> set[str]:
    seen: set[str] = set()
    for d in dirs:
        if not d.exists():
            continue
        if d == Path(tempfile.gettempdir()):
            seen |= {str(d / n) for n in os.listdir(d)}
            continue
        for root, subdirs, files in os.walk(d):
            for n in files + subdirs:
                seen.add(os.path.join(root, n))
    return seen


@contextlib.contextmanager
def _env(env: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class CaseTimeout(BaseException):
    """A case ran past its time limit (a hang, or work a bad value should have stopped)."""


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def run_inproc(args: Sequence[str], cwd: Path, env: dict[str, str] | None, timeout_s: float = 30.0) -> Outcome:
    """``archline *args`` in this process, in ``cwd``, with ``env`` set: what it printed, and the exception that
    escaped ``main`` (a crash). A run still going after ``timeout_s`` is stopped (SIGALRM) and reported as a hang.
    The 'archline' logger is put back as it was."""
    import logging
    import signal

    from archline.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    log = logging.getLogger("archline")
    handlers, level, propagate = list(log.handlers), log.level, log.propagate
    code, exc = 0, ""
    try:
        os.chdir(cwd)
        with _env(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            try:
                code = main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except CaseTimeout:
                exc = f"hang: still running after {timeout_s:g} s"
                code = -1
            except BaseException:  # a crash: what the user would have seen as a traceback
                exc = traceback.format_exc()
                code = 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
    finally:
        os.chdir(old_cwd)
        log.handlers[:] = handlers
        log.setLevel(level)
        log.propagate = propagate
    return Outcome(code, out.getvalue(), err.getvalue(), exc)


def run_case(case: Case, work: Path, fx: Fixtures, watch_tmp: bool = True, timeout_s: float = 30.0) -> Outcome:
    """Run ``archline *case.args`` in-process in a fresh directory ``work``; what it printed and left behind.
    A case still running after ``timeout_s`` is stopped (SIGALRM) and reported as a hang."""
    work.mkdir(parents=True, exist_ok=True)
    watched = [work, fx.root] + ([Path(tempfile.gettempdir())] if watch_tmp else [])
    before = _snapshot(*watched)
    out = run_inproc(case.args, work, case.env, timeout_s)
    out.new_files = sorted(_snapshot(*watched) - before)
    return out


def clean(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)


def summarize(results: Sequence[tuple[tuple[str, ...], Case, Outcome, list[str]]]) -> dict[str, Any]:
    tracebacks = [c.name for _, c, o, _ in results if o.traceback]
    wrong_ok = [c.name for _, c, o, _ in results if c.must_fail and o.code == 0 and not o.traceback]
    failed = [(c.name, p) for _, c, _, p in results if p]
    hangs = [c.name for _, c, o, _ in results if o.hang]
    return {"cases": len(results), "tracebacks": len(tracebacks), "wrong_exit_0": len(wrong_ok), "hangs": len(hangs),
            "clean_errors": sum(1 for _, _, o, p in results if o.code != 0 and not p),
            "passed_ok": sum(1 for _, c, o, p in results if o.code == 0 and not p),
            "problems": len(failed), "failed": failed}


# --- bad content: files that parse but hold the wrong thing -----------------------------------------------------

def _mutate_csv(text: str, column: str, value: str, row: int = 1) -> str:
    import csv as _csv
    import io as _io

    rows = list(_csv.reader(_io.StringIO(text)))
    k = rows[0].index(column)
    rows[row][k] = value
    buf = _io.StringIO()
    _csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _mutate_json(text: str, path: Sequence[str], value: Any) -> str:
    d = json.loads(text)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return json.dumps(d)


def bad_contents(fx: Fixtures) -> dict[str, list[tuple[str, str | bytes]]]:
    """File kind -> (name, content) of files that are well-formed text but bad input."""
    results = fx.files["results"].read_text()
    header = results.splitlines()[0] + "\n"
    costs = fx.files["costs"].read_text()
    profile = fx.files["profile"].read_text()
    samples = fx.files["samples"].read_text()
    dvfs = fx.files["dvfs"].read_text()
    measured = fx.files["measured"].read_text()
    out: dict[str, list[tuple[str, str | bytes]]] = {
        "results": [
            ("header-only", header),
            ("negative-energy", _mutate_csv(results, "energy_j", "-1")),
            ("nan-energy", _mutate_csv(results, "energy_j", "nan")),
            ("zero-time", _mutate_csv(results, "time_s", "0")),
            ("text-in-count", _mutate_csv(results, "bytes_mem", "lots")),
            ("negative-count", _mutate_csv(results, "flops_sp", "-5")),
            ("wrong-schema", _mutate_csv(results, "schema", "archline.results/9")),
            ("empty-platform", _mutate_csv(results, "platform", "")),
            ("not-results", "a,b,c\n1,2,3\n"),
            ("one-row", results.splitlines()[0] + "\n" + results.splitlines()[1] + "\n"),
            ("singular", header + "".join(results.splitlines()[1] + "\n" for _ in range(12))),
            ("all-checksum-false", "".join(ln + "\n" for ln in [results.splitlines()[0]] + [
                ln.replace(",true,", ",false,") for ln in results.splitlines()[1:]])),
            ("extra-field", results.splitlines()[0] + "\n" + results.splitlines()[1] + ",extra,more\n"),
            ("latin1", "schema,platform\n\xe9\n".encode("latin-1")),
        ],
        "costs": [
            ("list", "[]"), ("object", "{}"), ("number", "42"),
            ("wrong-schema", _mutate_json(costs, ["schema"], "archline.costs/9")),
            ("negative-eps-mem", _mutate_json(costs, ["coefficients", "eps_mem", "value"], -1)),
            ("text-eps-mem", _mutate_json(costs, ["coefficients", "eps_mem", "value"], "abc")),
            ("null-eps-mem", _mutate_json(costs, ["coefficients", "eps_mem"], None)),
            ("zero-tau-mem", _mutate_json(costs, ["tau", "tau_mem"], {"value": 0.0, "unit": "s/byte"})),
            ("nan-pi0", _mutate_json(costs, ["coefficients", "pi0", "value"], "NaN").replace('"NaN"', "NaN")),
            ("deep", "[" * 5000 + "]" * 5000),
            ("duplicate-object", '{"schema": "archline.costs/1", "schema": 3}'),
        ],
        "profile": [
            ("wrong-schema", profile.replace('schema = "archline.platform/1"', 'schema = "archline.platform/9"')),
            ("unknown-key", "bogus_key = 1\n" + profile),
            ("negative-constant", profile.replace("[constants]", "[constants]\neps_l3 = { value = -1.0, source = "
                                                  '"test" }', 1)),
            ("zero-tau-mem", _retau(profile)),
            ("not-toml", "this is not = = toml\n"),
            ("array-root", "x = [1, 2,\n"),
        ],
        "sweep": [
            ("unknown-key", '[sweep]\nplatform = "gtx580"\nprecisons = ["sp"]\n'),
            ("bad-precision", '[sweep]\nplatform = "gtx580"\nprecisions = ["qp"]\n'),
            ("zero-reps", '[sweep]\nplatform = "gtx580"\nemulate = true\nreps = 0\n'),
            ("negative-max-points", '[sweep]\nplatform = "gtx580"\nmax_points = -1\n'),
            ("zero-compression", '[sweep]\nplatform = "gtx580"\nemulate = true\ntime_compression = 0.0\n'),
            ("nan-min-time", '[sweep]\nplatform = "gtx580"\nemulate = true\nmin_time_s = nan\n'),
            ("no-table", 'platform = "gtx580"\n'),
            ("unknown-platform", '[sweep]\nplatform = "gtx9999"\n'),
            ("out-under-a-file", f'[sweep]\nplatform = "gtx580"\nemulate = true\nout = "{fx.files["plain"]}/x"\n'),
            ("out-in-proc", '[sweep]\nplatform = "gtx580"\nemulate = true\nout = "/proc/archline-no/x"\n'),
            ("big-max-lost", '[sweep]\nplatform = "gtx580"\nemulate = true\nmax_lost = 2.0\n'),
        ],
        "samples": [
            ("nan-power", _mutate_csv(samples, "power_w", "nan", 5)),
            ("negative-power", _mutate_csv(samples, "power_w", "-488", 5)),
            ("inf-time", _mutate_csv(samples, "t_s", "inf", 5)),
            ("header-only", samples.splitlines()[0] + "\n"),
            ("wrong-columns", "a,b\n1,2\n"),
            ("text-power", _mutate_csv(samples, "power_w", "high", 5)),
            ("negative-channel", _mutate_csv(samples, "channel", "-1", 5)),
            ("one-sample", samples.splitlines()[0] + "\n" + samples.splitlines()[1] + "\n"),
        ],
        "counts": [
            ("negative-count", "name,flops_sp,bytes_mem\nk,-1e9,1e9\n"),
            ("nan-count", "name,flops_sp,bytes_mem\nk,nan,1e9\n"),
            ("unknown-column", "name,flopz\nk,1\n"),
            ("header-only", "name,flops_sp\n"),
            ("text-count", "name,flops_sp\nk,many\n"),
        ],
        "measured": [
            ("text-clock", _mutate_csv(measured, "core_mhz", "fast")),
            ("negative-time", _mutate_csv(measured, "time_s", "-1")),
            ("nan-energy", _mutate_csv(measured, "energy_j", "nan")),
            ("header-only", measured.splitlines()[0] + "\n"),
            ("missing-columns", "kernel,time_s\nintensity,1\n"),
            ("short-row", measured.splitlines()[0] + "\nintensity,sp\n"),
        ],
        "dvfs": [
            ("no-settings", _mutate_json(dvfs, ["settings"], [])),
            ("text-clock", json.dumps({**json.loads(dvfs), "settings": [
                {**json.loads(dvfs)["settings"][0], "core_mhz": "fast"}]})),
            ("negative-eps", json.dumps({**json.loads(dvfs), "settings": [
                {**s, "eps_mem": -1.0} for s in json.loads(dvfs)["settings"]]})),
        ],
        "script": [
            ("channel-99", json.dumps({"steps": [{"t_s": 0, "channels": {"99": [12.0, 1.0]}}]})),
            ("negative-time", json.dumps({"steps": [{"t_s": -1, "channels": {"0": [12.0, 1.0]}}]})),
            ("no-steps", json.dumps({"steps": []})),
            ("nan-volts", json.dumps({"steps": [{"t_s": 0, "channels": {"0": ["nan", 1.0]}}]})),
            ("negative-amps", json.dumps({"steps": [{"t_s": 0, "channels": {"0": [12.0, -1.0]}}]})),
            ("malformed", '{"steps": [{"t_s": 0, "channels": {"0": [12.0'),
            ("list", "[]"),
        ],
        "machine": [
            ("negative-cores", 'cores_max = -8\n'),
            ("unknown-key", 'corez = 8\n'),
            ("text-value", 'cores_max = "eight"\n'),
        ],
        "kernels": [
            ("unknown-key", 'schema = "archline.ipp-kernels/1"\n[[kernel]]\nname = "k"\nbogus = 1\n'),
            ("negative", 'schema = "archline.ipp-kernels/1"\n[[kernel]]\nname = "k"\nn_warps = -4\n'),
            ("no-kernels", 'schema = "archline.ipp-kernels/1"\n'),
        ],
        "gpu": [
            ("wrong-schema", 'schema = "nope"\n'),
            ("negative-sms", fx.files["gpu"].read_text().replace("num_sms = 30", "num_sms = -30")),
        ],
        "raw": [
            ("garbage", bytes([0xFF]) * 4000),
            ("zeros", bytes(4000)),
            ("tiny", b"\x00\x01"),
            ("doubled", fx.files["raw"].read_bytes() * 2),
        ],
        "ptx": [
            ("no-instructions", "// just a comment\n"),
        ],
        "lab": [
            ("no-machines", '[lab]\nresults = "r"\n'),
            ("unknown-key", '[lab]\nresults = "r"\nbogus = 1\n[[machine]]\nname = "n"\nplatform = "gtx580"\n'),
            ("bad-machine-key", '[lab]\nresults = "r"\n[[machine]]\nname = "n"\nplatform = "gtx580"\nreps = -1\n'),
            ("results-under-a-file", f'[lab]\nresults = "{fx.files["plain"]}/r"\n[[machine]]\nname = "n"\n'
                                     'platform = "gtx580"\nemulate = true\n'),
            ("bad-time", '[lab]\nresults = "r"\n[[machine]]\nname = "n"\nplatform = "gtx580"\n'
                         'slurm = { time = "soon" }\n'),
        ],
    }
    return out


def _retau(profile: str) -> str:
    lines = [ln for ln in profile.splitlines() if not ln.startswith(("tau_mem", "peak_byte_per_s"))]
    text = "\n".join(lines) + "\n"
    return text.replace("[constants]", '[constants]\ntau_mem = { value = 0.0, source = "test" }', 1)


def content_cases(fx: Fixtures) -> list[tuple[tuple[str, ...], Case]]:
    """Every file parameter of every command given each bad content of its kind (must fail)."""
    contents = bad_contents(fx)
    d = fx.root / "content"
    d.mkdir(exist_ok=True)
    out: list[tuple[tuple[str, ...], Case]] = []
    for path, cmd in commands():
        base = baseline(path, fx)
        if base is None:
            continue
        label = " ".join(path)
        for p in cmd.params:
            if p.name is None or not (_is_path(p) or p.name in FILEISH_TEXT) or p.name in OUTPUT_PARAMS:
                continue
            kind = FILE_KIND.get(p.name, "results")
            if path == ("tune",) and p.name == "costs":
                kind = "dvfs"
            for name, data in contents.get(kind, []):
                src = fx.files.get(kind)
                suffix = "".join(src.suffixes) if src is not None else ".dat"
                f = d / f"{kind}-{name}{suffix}"
                if not f.exists():
                    f.write_bytes(data.encode() if isinstance(data, str) else data)
                    side = src.with_name(src.name + ".json") if src is not None else None
                    if kind == "raw" and side is not None and side.exists():
                        f.with_name(f.name + ".json").write_bytes(side.read_bytes())
                args = [*path, *_set(base, p, [str(f)], cmd)]
                out.append((path, Case(f"{label} {p.name}=content:{kind}-{name}", args,
                                       must_fail=(kind, name) not in MAY_PASS_CONTENT)))
    return out


#: bad-looking content that a command may accept (it is valid for it)
MAY_PASS_CONTENT = {("results", "one-row"), ("results", "extra-field"), ("raw", "doubled"),
                    ("costs", "duplicate-object")}


# --- the issue's own list (issue 15) -------------------------------------------------------------------------------

def issue_cases(fx: Fixtures) -> list[tuple[tuple[str, ...], Case]]:
    """The cases issue 15 lists, each with what it must do now."""
    d = fx.root / "issue"
    d.mkdir(exist_ok=True)
    f = {k: str(v) for k, v in fx.files.items()}
    samples = fx.files["samples"]
    ok_side = samples.with_name(samples.name + ".json")

    def samples_with(name: str, column: str, value: str) -> str:
        p = d / f"{name}.csv"
        p.write_text(_mutate_csv(samples.read_text(), column, value, 7))
        p.with_name(p.name + ".json").write_bytes(ok_side.read_bytes())
        return str(p)

    costs = d / "eps-mem-negative.json"
    costs.write_text(_mutate_json(fx.files["costs"].read_text(), ["coefficients", "eps_mem", "value"], -1))
    tau0 = d / "tau-mem-zero.toml"
    tau0.write_text(_retau(fx.files["profile"].read_text()))
    script99 = d / "script-99.json"
    script99.write_text(json.dumps({"steps": [{"t_s": 0, "channels": {"99": [12.0, 1.0]}}]}))
    bad_script = d / "script-bad.toml"
    bad_script.write_text("[[steps]\nt_s = 0\n")
    clock = d / "measured-text-clock.csv"
    clock.write_text(_mutate_csv(fx.files["measured"].read_text(), "core_mhz", "fast"))
    cut = d / "cut-row.csv"
    text = fx.files["results"].read_text()
    cut.write_text(text[: text.rstrip("\n").rfind(",") + 2])      # the last bytes_mem-like field cut to one char
    singular = d / "singular.csv"
    rows = text.splitlines()
    singular.write_text(rows[0] + "\n" + "".join(rows[1] + "\n" for _ in range(12)))
    sweep_unwritable = d / "sweep-unwritable.toml"
    sweep_unwritable.write_text(f'[sweep]\nplatform = "gtx580"\nemulate = true\nout = "{f["plain"]}/out"\n')
    badpath = d / "platform-path"
    badpath.mkdir(exist_ok=True)
    (badpath / "broken.toml").write_text("name = [\n")
    ppath = {"ARCHLINE_PLATFORM_PATH": str(badpath)}
    missing = {"ARCHLINE_PLATFORM_PATH": str(d / "no-such-dir")}
    rec = ["meter", "record", "--channels", "0,1,2"]
    c: list[Case] = [
        Case("1 record: disconnect mid-recording", [*rec, "--meter", "powermon2:powermon://default?disconnect=0.5",
                                                     "--duration", "2", "--out", "d.csv"], expect_code=6,
             needle="lost"),
        Case("1 record: stall through the whole recording", [*rec, "--meter",
                                                               "powermon2:powermon://default?stall=0:30",
                                                               "--duration", "1", "--out", "s.csv"]),
        Case("1 record: stall inside the recording", [*rec, "--meter", "powermon2:powermon://default?stall=0.5:0.5",
                                                      "--duration", "2", "--out", "s.csv"], expect_code=6,
             needle="lost 192"),
        Case("2 integrate: window far outside a trace", ["meter", "integrate", f["samples"], "--start", "0", "--end",
                                                         "100000"], needle="outside"),
        Case("2 integrate: window with no samples", ["meter", "integrate", f["samples"], "--start", "5000", "--end",
                                                     "5001"]),
        Case("2 integrate: NaN power", ["meter", "integrate", samples_with("nan-power", "power_w", "nan")],
             needle="power_w"),
        Case("2 integrate: negative power", ["meter", "integrate", samples_with("neg-power", "power_w", "-488")],
             needle="negative"),
        Case("4 unwritable out of a sweep", ["bench", "sweep", str(sweep_unwritable)], expect_code=7),
        Case("4 unknown figure suffix", ["model", "plot", "gtx580", "--out", "fig.xyz"]),
        Case("4 singular design matrix in fit", ["fit", str(singular)]),
        Case("4 zero rate", [*rec, "--meter", "emulated", "--rate", "0", "--duration", "1", "--out", "z.csv"]),
        Case("4 tau_mem = 0", ["model", "show", str(tau0)], must_fail=False),
        Case("4 tau_mem = 0 predict", ["model", "predict", str(tau0), "-i", "1"]),
        Case("4 zero speed", ["meter", "emulate", "--speed", "0", "--duration", "0.1"]),
        Case("4 negative speed", ["meter", "emulate", "--speed", "-2", "--duration", "0.1"]),
        Case("4 emulated:0", [*rec, "--meter", "emulated:0", "--duration", "1", "--out", "e.csv"]),
        Case("4 emulated:abc", [*rec, "--meter", "emulated:abc", "--duration", "1", "--out", "e.csv"]),
        Case("4 duration -1", [*rec, "--meter", "emulated", "--duration", "-1", "--out", "e.csv"]),
        Case("4 bootstrap -5", ["fit", f["results"], "--bootstrap", "-5"]),
        Case("4 non-numeric clock in tune input", ["tune", "--costs", f["dvfs"], "--measured", str(clock)]),
        Case("4 emulator script with channel 99", ["meter", "emulate", "--script", str(script99), "--duration",
                                                   "0.1"]),
        Case("4 malformed emulator script", ["meter", "emulate", "--script", str(bad_script), "--duration", "0.1"]),
        Case("5 row cut off mid-field", ["fit", str(cut)], needle="cut off"),
        Case("5 cost table with eps_mem = -1", ["model", "predict", str(costs), "-i", "1"]),
        Case("5 cost table with eps_mem = -1 (show)", ["model", "show", str(costs)]),
        Case("5 decode --r-sense 0", ["meter", "decode", f["raw"], "--out", "x.csv", "--r-sense", "0"]),
        Case("5 --flops-per-cycle -3", ["tune", "--costs", f["dvfs"], "--intensity", "2", "--flops-per-cycle", "-3",
                                        "--bytes-per-cycle", "16"]),
        Case("5 missing ARCHLINE_PLATFORM_PATH directory", ["platforms", "list"], env=missing, must_fail=False,
             needle="warning"),
        Case("5 one bad TOML on ARCHLINE_PLATFORM_PATH (list)", ["platforms", "list"], env=ppath, must_fail=False,
             needle="warning"),
        Case("5 one bad TOML on ARCHLINE_PLATFORM_PATH (show another)", ["platforms", "show", "gtx580"], env=ppath,
             must_fail=False),
        Case("5 numpy repr: negative cap divisor", ["model", "predict", "gtx580", "-i", "1", "--cap-divisor", "-1"]),
        Case("6 truncated capture", ["meter", "decode", str(fx.truncated("raw")), "--out", "t.csv"],
             needle="cut short"),
    ]
    return [(tuple(x for x in case.args[:2] if not x.startswith("-")), case) for case in c]


#: commands whose baseline succeeds only after `lab submit` ran (their bad-input cases fail before that matters)
NEEDS_A_SUBMITTED_LAB = {("lab", "status"), ("lab", "collect")}


def baseline_cases(fx: Fixtures) -> list[tuple[tuple[str, ...], Case]]:
    """Each command's valid baseline, which must succeed (else the matrix would test nothing)."""
    out = []
    for path, _ in commands():
        base = baseline(path, fx)
        if base is not None and path not in NEEDS_A_SUBMITTED_LAB:
            out.append((path, Case(f"{' '.join(path)}: valid baseline", [*path, *base], must_fail=False,
                                   expect_ok=True)))
    return out
