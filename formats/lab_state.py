"""The lab's state files, one owner: each task's record ``<results>/<machine>/task.json`` and the lab's submission
record ``<results>/.lab/<lab>/submissions.json``. Both are versioned pydantic models: a ``schema`` key
(``archline.lab-task/1``, ``archline.lab-submissions/1``; a file without one was written before it existed and is
read as version 1), types checked, keys a newer archline added tolerated (ignored), and a newer *major* version
refused rather than misread. Every problem is one line naming the file (:class:`LabStateError`).

Every command that reads one stops on that line (exit 2): ``lab status`` does not guess a state from a damaged
file, and ``lab submit`` on top of a state it cannot read could start a second task beside a running one or
overwrite a newer archline's record with an older format.

The files are the command's own state (read, then rewritten), not inputs: they are read here directly, not
through :mod:`archline.common.files`, whose inputs may never be outputs of the same command. Writes are atomic
(:mod:`archline.common.atomic`).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archline.common.atomic import write_atomic
from archline.common.exits import EXIT_INPUT
from archline.common.inputs import describe
from archline.common.outputs import show
from archline.model.errors import ArchlineFitError

TASK_SCHEMA = "archline.lab-task/1"
SUBMISSIONS_SCHEMA = "archline.lab-submissions/1"
#: a state file is a few kilobytes; anything this large is not one
MAX_STATE_BYTES = 16 << 20


class LabStateError(ArchlineFitError):
    """A lab state file that cannot be read: damaged, wrong types, or from a newer archline. A user error as the
    other formats' (the CLI prints it as one line, exit 2; bench's lab code catches it with bench's own)."""

    exit_code = EXIT_INPUT


class StateModel(BaseModel):
    """Base of the state files: types checked (no coercion: ``"pid": "abc"`` is an error), unknown keys ignored
    (a newer minor version may add some), and a ``schema`` key written first."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)
    SCHEMA: ClassVar[str] = ""

    def dump_json(self) -> str:
        body = {"schema": type(self).SCHEMA, **self.model_dump(mode="json")}
        return json.dumps(body, indent=1) + "\n"


class TaskRecord(StateModel):
    """One task's record, written only by the task that holds its sweep's lock."""

    SCHEMA = TASK_SCHEMA
    machine: str
    state: Literal["running", "done", "failed"]
    job_id: str = ""
    node: str = ""
    pid: int = Field(default=0, ge=0)
    started_at: str = ""
    ended_at: str = ""
    config_hash: str = ""
    point_ids: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    message: str = ""
    written: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    interrupted: bool = False           #: stopped by SIGTERM/SIGINT (exit 130), not by its own failure

    def write(self, path: Path) -> None:
        write_atomic(path, self.dump_json())

    @classmethod
    def read(cls, path: Path) -> TaskRecord | None:
        """A task's record, None when it has none yet; a damaged or newer record is a :class:`LabStateError`."""
        data = _read_raw(path, "task record")
        if data is None:
            return None
        check_schema(data, path, TASK_SCHEMA, "task record")
        rec: TaskRecord = _validate(cls, data, path, "task record")
        return rec


class Submission(StateModel):
    """How one machine's task was last submitted."""

    job_id: str
    scheduler: Literal["slurm", "local"]
    submitted_at: str
    stdout: str = ""
    stderr: str = ""


class Submissions(StateModel):
    SCHEMA = SUBMISSIONS_SCHEMA
    lab: str
    machines: dict[str, Submission] = Field(default_factory=dict)

    def write(self, path: Path) -> Path:
        return write_atomic(path, self.dump_json())

    @classmethod
    def read(cls, path: Path, lab: str) -> Submissions:
        """The lab's submission record (empty when there is none yet); problems are a :class:`LabStateError`."""
        data = _read_raw(path, "lab submission record")
        if data is None:
            return cls(lab=lab)
        check_schema(data, path, SUBMISSIONS_SCHEMA, "lab submission record")
        subs: Submissions = _validate(cls, data, path, "lab submission record")
        return subs


def _read_raw(path: Path, what: str) -> Any:
    """The parsed JSON of a state file, or None when it does not exist; else one line naming it."""
    try:
        f = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):     # no record (yet), or no results directory at all
        return None
    except OSError as e:
        raise LabStateError(f"cannot read the {what} {show(path)}: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise LabStateError(f"the {what} {show(path)} is not a regular file")
        data = f.read(MAX_STATE_BYTES + 1)
    except OSError as e:
        raise LabStateError(f"cannot read the {what} {show(path)}: {e.strerror or e}") from None
    finally:
        f.close()
    if len(data) > MAX_STATE_BYTES:
        raise LabStateError(f"the {what} {show(path)} is larger than {MAX_STATE_BYTES} bytes: not a state file")
    if not data.strip():
        raise LabStateError(f"the {what} {show(path)} is empty (cut off while written by something other than "
                            "archline?); remove it")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise LabStateError(f"the {what} {show(path)} is not UTF-8 text: damaged; remove it") from None
    except json.JSONDecodeError as e:
        cut = " (cut off)" if e.pos >= len(e.doc.rstrip()) or e.msg.startswith("Unterminated") else ""
        raise LabStateError(f"the {what} {show(path)} is not valid JSON{cut}: {e.msg} at line {e.lineno}; "
                            "damaged, remove it") from None
    except RecursionError:
        raise LabStateError(f"the {what} {show(path)} is not valid JSON: nested too deeply") from None


def check_schema(data: Any, path: Path, schema: str, what: str) -> None:
    """A dict whose ``schema`` (absent: version 1) names this format at a major version this archline reads."""
    if not isinstance(data, dict):
        raise LabStateError(f"the {what} {show(path)} is not a JSON object: damaged, remove it")
    got = data.get("schema", schema)
    name, _, major = schema.partition("/")
    if not isinstance(got, str) or got.partition("/")[0] != name:
        raise LabStateError(f"the {what} {show(path)} has schema {got!r}, expected {schema!r}: not a {what}")
    ver = got.partition("/")[2].split(".")[0]
    if not ver.isdigit():
        raise LabStateError(f"the {what} {show(path)} has schema {got!r}: no version number")
    if int(ver) > int(major):
        raise LabStateError(f"the {what} {show(path)} is {got}, written by a newer archline (this one reads "
                            f"{schema}); upgrade archline on this machine")


def _validate(model: type[StateModel], data: dict[str, Any], path: Path, what: str) -> Any:
    try:
        return model.model_validate({k: v for k, v in data.items() if k != "schema"})
    except ValidationError as e:
        said = describe(e, model)       # " key: what", or ": what" for a key at the top (never "task.json::")
        raise LabStateError(f"the {what} {show(path)}:{said.removeprefix(':')}") from None

