"""A sweep config (``archline bench sweep CONFIG.toml``) as a run sees it: the file is read and validated by its
owner, :mod:`archline.formats.sweep_config` (its keys and their meaning are listed there); this module joins the
file's own keys with every ``bench run`` option (:class:`SweepTable`), turns the table into the run's
:class:`~archline.bench.config.options.RunOptions`, and hashes what decides the measurements (:func:`config_hash`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.config.options import RunOptions
from archline.formats.sweep_config import SweepConfigError, SweepConfigFile, SweepKeys

EXIT_CONFIG = SweepConfigError.exit_code

__all__ = ["EXIT_CONFIG", "SweepConfig", "SweepConfigError", "SweepTable", "config_hash", "load_config"]


class SweepTable(SweepKeys, RunOptions):
    """A ``[sweep]`` table: the sweep config's own keys and every ``bench run`` option (the keys of both)."""


@dataclass
class SweepConfig:
    path: Path
    name: str
    options: RunOptions
    out: Path
    max_points: int = 0
    raw: dict[str, Any] = field(default_factory=dict)
    host: str | None = None

    @property
    def platform(self) -> str:
        return self.options.platform


def load_config(path: Path) -> SweepConfig:
    f = SweepConfigFile.read(path, SweepTable)
    table = f.table
    opts = RunOptions(**{k: getattr(table, k) for k in RunOptions.model_fields if k != "platform"},
                      platform=f.platform)
    return SweepConfig(path=path, name=f.name, options=opts, out=f.out, max_points=table.max_points, raw=f.raw,
                       host=table.host)


def config_hash(cfg: SweepConfig, profile_raw: dict[str, Any]) -> str:
    """Hash of what decides the measurements: the [sweep] table (minus where things go, how many this run and
    the host label) and the profile's content."""
    keep = {k: v for k, v in cfg.raw.items() if k not in ("out", "max_points", "name", "host")}
    blob = json.dumps({"sweep": keep, "profile": profile_raw}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
