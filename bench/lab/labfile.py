"""The lab file as the lab reads it: its owner is :mod:`archline.formats.lab_file` (the keys, the checks, the
:class:`~archline.formats.lab_file.Lab` it gives); this module joins a ``[[machine]]``'s own keys with its sweep's
table (every ``bench run`` option: bench's model), which the owner validates each machine as."""

from __future__ import annotations

from pathlib import Path

from archline.bench.config.sweep import SweepTable
from archline.formats.lab_file import Lab, LabFileError, MachineKeys

__all__ = ["Lab", "LabFileError", "MachineEntry", "load_lab"]


class MachineEntry(MachineKeys, SweepTable):
    """One ``[[machine]]``: a sweep plus a name and a Slurm placement."""


def load_lab(path: Path) -> Lab:
    return Lab.read(path, MachineEntry)
