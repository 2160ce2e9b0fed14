"""The controls' restore state (``restore.json``), one owner: what a run changed (a power cap, a clock) and must put
back, written before the change so that the next run can put it back after a crash::

    {"schema": "archline.restore/1",
     "entries": [{"kind": "<control>", "target": "<device, zone or file>", "state": {<what to write back>}}]}

``kind`` names the control (bench's :mod:`archline.bench.controls` spells the kinds), ``target`` the device and
``state`` the setting before the run, as that control reads it. The first state recorded for a (kind, target) is
the original and is never overwritten; an empty state is no file. A file without ``schema`` was written before it
existed and is read as version 1; a newer major version is refused (its entries may not mean what this archline
would write back). Every problem is one :class:`RestoreStateError` line: the settings stay as they are until someone
checks them, nothing is guessed. The file is the command's own state (read, then rewritten), not an input; writes
are atomic (:mod:`archline.common.atomic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archline.common.atomic import write_atomic
from archline.common.exits import EXIT_INPUT
from archline.model.errors import ArchlineFitError

RESTORE_SCHEMA = "archline.restore/1"


class RestoreStateError(ArchlineFitError):
    """A restore file that cannot be read: damaged, or from a newer archline (exit 2)."""

    exit_code = EXIT_INPUT


def _problem(data: Any) -> str | None:
    """What is wrong with a parsed restore file (None: nothing)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    got = data.get("schema", RESTORE_SCHEMA)
    name, _, major = RESTORE_SCHEMA.partition("/")
    if not isinstance(got, str) or got.partition("/")[0] != name:
        return f"schema {got!r}, expected {RESTORE_SCHEMA!r}"
    ver = got.partition("/")[2].split(".")[0]
    if not ver.isdigit():
        return f"schema {got!r} has no version number"
    if int(ver) > int(major):
        return f"{got}, written by a newer archline; this one reads {RESTORE_SCHEMA}"
    entries = data.get("entries", [])
    if not isinstance(entries, list):
        return "'entries' is not a list"
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("kind"), str) and isinstance(e.get("target"), str)
                and isinstance(e.get("state"), dict)):
            return f"entries[{i}] is not {{\"kind\": str, \"target\": str, \"state\": {{...}}}}"
    return None


class RestoreFile:
    """The restore file at ``path``: its entries, read fresh each time (another run may have written it)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        """The entries, [] when there is no file; a damaged or newer file is a :class:`RestoreStateError`."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise self._unreadable(str(e)) from None
        why = _problem(data)
        if why is not None:
            raise self._unreadable(why)
        return list(data.get("entries", []))

    def _unreadable(self, why: str) -> RestoreStateError:
        return RestoreStateError(f"restore file {self.path} is unreadable ({why}); fix or remove it after checking "
                                 "the device settings by hand")

    def _save(self, entries: list[dict[str, Any]]) -> None:
        if entries:
            write_atomic(self.path, json.dumps({"schema": RESTORE_SCHEMA, "entries": entries}, indent=1))
        elif self.path.exists():
            self.path.unlink()

    def record(self, kind: str, target: str, state: dict[str, Any]) -> None:
        """Keep ``state`` as (kind, target)'s original, unless one is kept already."""
        entries = self.entries()
        if not any(e["kind"] == kind and e["target"] == target for e in entries):
            entries.append({"kind": kind, "target": target, "state": state})
            self._save(entries)

    def done(self, kind: str, target: str) -> None:
        """(kind, target) is put back: drop its entry (the file goes with the last one)."""
        self._save([e for e in self.entries() if not (e["kind"] == kind and e["target"] == target)])
