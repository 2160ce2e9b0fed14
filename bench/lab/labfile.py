"""The lab file (``archline lab submit|status|collect LAB.toml``): a shared results directory and the machines,
each with its sweep (any ``[sweep]`` key of :mod:`archline.bench.config.sweep`) and its Slurm placement. Validated
on the one input boundary (:mod:`archline.common.inputs`): a misspelt key is an error naming it::

    [lab]
    results = "/shared/archline"    # a directory every node can write (relative: to the lab file)
    scheduler = "slurm"             # or "local": every machine's sweep on this machine, one after another
    name = "fleet"                  # default: the lab file's stem; names the Slurm jobs archline-<name>
    parallel = 0                    # at most this many tasks of one job array at once (0: no limit)
    python = "/opt/archline/bin/python"    # the Python on the nodes (default: the one running archline)
    setup = ["module load python/3.11"]    # shell lines run before each task

    [[machine]]
    name = "node12"                 # the task's directory under results (and its host label if emulated)
    platform = "gtx580"             # a profile name or .toml path (relative: to the lab file)
    kernels = ["intensity", "cache"]
    precisions = ["sp", "dp"]
    emulate = false                 # true: the emulated device and meter, as in a sweep config
    slurm = { partition = "gpu", nodelist = "node12", exclusive = true, time = "02:00:00", gres = "gpu:1" }

A machine's other keys are those of a ``[sweep]`` table except ``out`` and ``name`` (the lab sets them):
``power_caps_w``, ``quick``, ``reps``, ``min_time_s``, ``time_compression``, ``seed``, ``meter``, ``host`` ...

Values that reach the scheduler's shell script (DECISION, after reading submitit 1.5's Slurm executor: it writes
each option as ``#SBATCH --key=<shlex.quote(value)>``, and a newline inside quotes on a comment line starts a new
script line, so ``partition = "debug\ntouch X #"`` ran ``touch X``): no string anywhere in a lab file may hold a
control character (newline, CR, NUL, ESC ...); the ``slurm`` options are further limited to the characters
Slurm's own syntax uses (letters, digits and ``_ . , : = + @ [ ] * & | ( ) ! / -``); ``python`` is quoted as one
path (:func:`python_command`); the job name comes from ``name``, limited to ``[A-Za-z0-9._-]`` (a lab file
whose stem is not is named by a cleaned stem plus a hash). ``setup`` lines are shell by design, run as written:
one line each, no control characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from archline.bench.config.sweep import SweepTable
from archline.bench.errors import BenchError
from archline.common.files import read_toml
from archline.common.inputs import Strict, validate
from archline.common.outputs import safe_component, show

#: Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_SLURM_TIME = re.compile(r"^(\d+-\d{1,2}(:\d{1,2}){0,2}|\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: what a Slurm option value may hold: node lists ``n[01-04]``, features ``a&b|c``, gres ``gpu:a100:2``, ``16G``
_SLURM_VALUE = re.compile(r"^[A-Za-z0-9_.,:=+@\[\]*&|()!/-]+$")
#: characters no lab-file string may hold: C0 and C1 controls, DEL, and the Unicode line and paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class LabFileError(BenchError):
    exit_code = 2


class SlurmPlacement(Strict):
    """Where a machine's task runs: the ``sbatch`` options it gets."""

    partition: str | None = None
    nodelist: str | None = None
    constraint: str | None = None
    exclude: str | None = None
    exclusive: bool = False
    time: str | None = None
    gres: str | None = None
    cpus_per_task: int | None = Field(default=None, ge=1)
    mem: str | None = None
    account: str | None = None
    qos: str | None = None

    @field_validator("partition", "nodelist", "constraint", "exclude", "gres", "mem", "account", "qos")
    @classmethod
    def _slurm_value(cls, v: str | None) -> str | None:
        if v is not None and not _SLURM_VALUE.match(v):
            bad = sorted({c for c in v if not _SLURM_VALUE.match(c)})
            raise ValueError(f"{v!r} holds {', '.join(repr(c) for c in bad) or 'nothing'}: a Slurm option value may "
                             "hold only letters, digits and _ . , : = + @ [ ] * & | ( ) ! / -")
        return v

    @field_validator("time")
    @classmethod
    def _time(cls, v: str | None) -> str | None:
        if v is not None and not _SLURM_TIME.match(v):
            raise ValueError(f"must be a Slurm time limit (MM, HH:MM:SS or D-HH:MM:SS), got {v!r}")
        return v

    def sbatch(self) -> dict[str, Any]:
        """The non-default options, under submitit's names."""
        return {k: v for k, v in self.model_dump().items() if v not in (None, False)}


class LabTable(Strict):
    results: str
    scheduler: Literal["slurm", "local"] = "local"
    name: str | None = Field(default=None, pattern=_NAME.pattern)
    parallel: int = Field(default=0, ge=0)
    python: str | None = None
    setup: tuple[str, ...] = ()


class MachineEntry(SweepTable):
    """One ``[[machine]]``: a sweep plus a name and a Slurm placement."""

    name: str = Field(pattern=_NAME.pattern)  # type: ignore[assignment]
    slurm: SlurmPlacement = SlurmPlacement()

    @field_validator("out")
    @classmethod
    def _no_out(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError("the lab sets each machine's out (<results>/<name>); remove it")
        return v


class LabModel(Strict):
    lab: LabTable
    machine: tuple[MachineEntry, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Machine:
    name: str
    sweep: dict[str, Any]           #: the [sweep] table the lab writes for it
    slurm: SlurmPlacement
    emulate: bool


@dataclass(frozen=True)
class Lab:
    path: Path
    name: str
    results: Path
    scheduler: str
    parallel: int
    python: str | None
    setup: tuple[str, ...]
    machines: tuple[Machine, ...]

    def machine(self, name: str) -> Machine:
        for m in self.machines:
            if m.name == name:
                return m
        raise LabFileError(f"{self.path}: no machine named '{name}' (machines: "
                           f"{', '.join(m.name for m in self.machines)})")

    @property
    def state_dir(self) -> Path:
        """The lab's own files (submissions, task logs) under the results directory."""
        return self.results / ".lab" / self.name


def _no_control(value: Any, where: str, path: Path) -> None:
    """Refuse a control character in any string of the lab file (keys included), naming the key."""
    if isinstance(value, str):
        m = _CONTROL.search(value)
        if m:
            raise LabFileError(f"{show(path)}: {where}: holds the control character {m.group(0)!r} in "
                               f"{value!r}; lab-file values reach the scheduler's shell script and may not")
    elif isinstance(value, dict):
        for k, v in value.items():
            _no_control(k, where or "(top level)", path)
            _no_control(v, f"{where}.{k}" if where else str(k), path)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _no_control(v, f"{where}[{i}]", path)


def lab_name(path: Path) -> str:
    """The default lab name: the lab file's stem when it is a plain name, else a cleaned stem and a hash."""
    stem = path.stem
    if _NAME.match(stem):
        return stem
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", safe_component(stem)).lstrip("._-") or "lab"
    return clean


def python_command(lab: Lab) -> str | None:
    """``[lab] python`` as the job script's command word: quoted as one path (``shlex.quote``)."""
    import shlex

    return None if lab.python is None else shlex.quote(lab.python)


def load_lab(path: Path) -> Lab:
    data = read_toml(path, error=LabFileError, what="lab file")
    _no_control(data, "", path)
    try:
        model = validate(LabModel, data, f"{path}:", error=LabFileError)
    except LabFileError as e:       # "lab.toml:: missing 'machine'" at the top level
        raise LabFileError(str(e).replace(f"{path}::", f"{path}:")) from None
    base = path.parent
    seen: set[str] = set()
    machines = []
    for i, raw in enumerate(data["machine"]):
        entry = model.machine[i]
        if entry.name in seen:
            raise LabFileError(f"{path}: machine[{i}].name: '{entry.name}' is used by another machine")
        seen.add(entry.name)
        sweep = {k: v for k, v in raw.items() if k not in ("slurm", "name")}
        plat = str(sweep["platform"])
        if plat.endswith(".toml") and not Path(plat).is_absolute():
            sweep["platform"] = str((base / plat).resolve())
        sweep["name"] = entry.name
        if entry.emulate and "host" not in sweep:
            sweep["host"] = entry.name
        machines.append(Machine(entry.name, sweep, entry.slurm, entry.emulate))
    results = Path(model.lab.results)
    results = results if results.is_absolute() else base / results
    return Lab(path=path, name=model.lab.name or lab_name(path), results=results,
               scheduler=model.lab.scheduler, parallel=model.lab.parallel, python=model.lab.python,
               setup=model.lab.setup, machines=tuple(machines))


def toml_table(name: str, table: dict[str, Any]) -> str:
    """A flat TOML table of strings, booleans, numbers and lists of them (what a [sweep] table holds). Written
    here in a few lines: the standard library reads TOML but does not write it."""
    import json
    import math

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                return "inf" if v > 0 else "-inf" if v < 0 else "nan"
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)         # a JSON string is a TOML basic string
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"cannot write {type(v).__name__} to TOML")

    return f"[{name}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in table.items())
