"""The lab file (``archline lab submit|status|collect LAB.toml``), one owner: its reader. A shared results
directory and the machines, each with its sweep (any ``[sweep]`` key of :mod:`archline.formats.sweep_config`) and
its Slurm placement. Validated on the one input boundary (:mod:`archline.common.inputs`): a misspelt key is an error
naming it::

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
path (``archline.bench.lab.submit``); the job name comes from ``name``, limited to ``[A-Za-z0-9._-]`` (a lab file
whose stem is not is named by a cleaned stem plus a hash). ``setup`` lines are shell by design, run as written:
one line each, no control characters.

A machine's sweep keys include every ``bench run`` option, whose model (and the back-end names it checks) is
bench's: :meth:`Lab.read` takes the machine's model (:class:`MachineKeys` joined with the sweep's table;
``archline.bench.lab.labfile.MachineEntry``). The lab file is written by people, never by archline: this module
reads it only. Version: :data:`LAB_FILE_VERSION`, the only one; the file spells none (a later major version adds a
key, which this reader, refusing unknown keys, refuses rather than misreads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import Field, field_validator

from archline.common.exits import EXIT_INPUT
from archline.common.files import read_toml
from archline.common.inputs import Strict, validate
from archline.common.outputs import safe_component, show
from archline.model.errors import ArchlineFitError

LAB_FILE_VERSION = 1

#: Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_SLURM_TIME = re.compile(r"^(\d+-\d{1,2}(:\d{1,2}){0,2}|\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: what a Slurm option value may hold: node lists ``n[01-04]``, features ``a&b|c``, gres ``gpu:a100:2``, ``16G``
_SLURM_VALUE = re.compile(r"^[A-Za-z0-9_.,:=+@\[\]*&|()!/-]+$")
#: characters no lab-file string may hold: C0 and C1 controls, DEL, and the Unicode line and paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class LabFileError(ArchlineFitError):
    """A lab file that cannot be used: the message names the file and the key (exit 2)."""

    exit_code = EXIT_INPUT


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


class MachineKeys(Strict):
    """A ``[[machine]]``'s own keys: its name and Slurm placement (the rest are its sweep's, whose ``out`` the lab
    sets)."""

    name: str = Field(pattern=_NAME.pattern)
    slurm: SlurmPlacement = SlurmPlacement()

    @field_validator("out", check_fields=False)     # the sweep's key, in the joined model
    @classmethod
    def _no_out(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError("the lab sets each machine's out (<results>/<name>); remove it")
        return v


M = TypeVar("M", bound=MachineKeys)


class LabModel(Strict, Generic[M]):
    lab: LabTable
    machine: tuple[M, ...] = Field(min_length=1)


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

    @classmethod
    def read(cls, path: Path, machine: type[M]) -> Lab:
        """The lab file ``path``, each ``[[machine]]`` validated as ``machine``; every problem is one
        :class:`LabFileError` line naming the file and the key."""
        data = read_toml(path, error=LabFileError, what="lab file")
        _no_control(data, "", path)
        try:
            model = validate(LabModel[machine], data, f"{path}:", error=LabFileError)  # type: ignore[valid-type]
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
            emulate = raw.get("emulate", False) is True      # a bool: validated above
            if emulate and "host" not in sweep:
                sweep["host"] = entry.name
            machines.append(Machine(entry.name, sweep, entry.slurm, emulate))
        results = Path(model.lab.results)
        results = results if results.is_absolute() else base / results
        return cls(path=path, name=model.lab.name or lab_name(path), results=results,
               scheduler=model.lab.scheduler, parallel=model.lab.parallel, python=model.lab.python,
               setup=model.lab.setup, machines=tuple(machines))



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
