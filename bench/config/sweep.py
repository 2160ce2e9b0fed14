"""A sweep config (``archline bench sweep CONFIG.toml``): one ``[sweep]`` table holding any ``bench run`` option
under its long name, plus where the results go and how many points one run may do. Validated on the one input
boundary; a misspelt key is an error that names it and the nearest known key::

    [sweep]
    name = "nightly-gtx580"          # default: the config file's stem
    platform = "gtx580"              # required: profile name or .toml path (relative to the config file)
    emulate = false                  # true: the emulated device and the emulated PowerMon 2 on a pty
    backend = "cuda"                 # default: the profile's [bench] backend (emulated with emulate = true)
    kernels = ["intensity"]          # default: the profile's [bench] kernels
    precisions = ["sp", "dp"]        # default: the profile's [bench] precisions
    quick = false
    reps = 100                       # fixed repetitions per region (default: sized by the meter and min_time_s)
    min_time_s = 0.1                 # shortest timed region
    isa = "avx2"                     # cpu_asm only;  store = "nt" | "none": cpu_asm intensity only
    working_set = "64M"              # real back ends only
    device = "0"                     # OpenCL / CUDA device
    power_caps_w = [150.0, 200.0]    # default: the profile's [bench] power_caps_w (empty: leave the cap alone)
    dvfs_settings = ["S1", "S4"]     # ids of the profile's [dvfs] settings
    out = "results/nightly"          # default: results/<name>, relative to the config file
    time_compression = 50.0          # emulate only: device seconds per host second
    seed = 0                         # emulate only: the emulator's noise
    meter = "powermon"               # which of the profile's meters (default: the first)
    max_lost = 0.01                  # share of a region's meter samples that may be lost before the point fails
    max_points = 0                   # stop after this many points this run (0: all); the next run resumes
    host = "node03"                  # the rows' host column (default: this machine's hostname); `archline lab`
                                     # sets it to the machine's name for an emulated machine
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field

from archline.bench.config.options import RunOptions
from archline.bench.errors import BenchError
from archline.common.files import read_toml
from archline.common.inputs import unknown_key_hint, validate

EXIT_CONFIG = 2


class SweepConfigError(BenchError):
    exit_code = EXIT_CONFIG


class SweepTable(RunOptions):
    platform: str
    name: str | None = None
    out: str | None = None
    max_points: int = Field(default=0, ge=0)
    host: str | None = Field(default=None, min_length=1)
    working_set_bytes: int | None = Field(default=None, ge=1, validation_alias=AliasChoices("working_set"))


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
    data = read_toml(path, error=SweepConfigError, what="sweep config")
    extra = [k for k in data if k != "sweep"]
    if extra:
        raise SweepConfigError(f"{path}: unknown top-level key '{extra[0]}' (the config is one [sweep] table)")
    t = data.get("sweep")
    if not isinstance(t, dict):
        raise SweepConfigError(f"{path}: missing the [sweep] table")
    known = [k for k in SweepTable.model_fields if k != "working_set_bytes"] + ["working_set"]
    for k in t:
        if k not in known:
            raise SweepConfigError(f"{path}: [sweep]: unknown key '{k}'" + unknown_key_hint(k, known))
    table = validate(SweepTable, t, f"{path}: [sweep]", error=SweepConfigError)
    base = path.parent
    plat = table.platform
    if plat.endswith(".toml") and not Path(plat).is_absolute():
        plat = str((base / plat).resolve())
    name = table.name or path.stem
    out = Path(table.out or f"results/{name}")
    opts = RunOptions(**{k: getattr(table, k) for k in RunOptions.model_fields if k != "platform"}, platform=plat)
    return SweepConfig(path=path, name=name, options=opts, out=out if out.is_absolute() else base / out,
                       max_points=table.max_points, raw=dict(t), host=table.host)


def config_hash(cfg: SweepConfig, profile_raw: dict[str, Any]) -> str:
    """Hash of what decides the measurements: the [sweep] table (minus where things go, how many this run and
    the host label) and the profile's content."""
    keep = {k: v for k, v in cfg.raw.items() if k not in ("out", "max_points", "name", "host")}
    blob = json.dumps({"sweep": keep, "profile": profile_raw}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
