"""The sweep config (``archline bench sweep CONFIG.toml``), one owner: its reader and its writer. The file is one
``[sweep]`` table holding any ``bench run`` option under its long name, plus where the results go and how many
points one run may do. Validated on the one input boundary; a misspelt key is an error that names it and the nearest
known key::

    [sweep]
    name = "nightly-gtx580"          # default: the config file's stem
    platform = "gtx580"              # required: profile name or .toml path (relative to the config file)
    emulate = false                  # true: the emulated device and the emulated PowerMon 2 on a pty
    backend = "..."                  # a registered back end (bench list; default: the profile's [bench] backend,
                                     # the emulated one with emulate = true)
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

The keys of this file are :class:`SweepKeys` plus every ``bench run`` option; the options' model (and the back-end
names it checks) is bench's (``archline.bench.config.sweep.SweepTable`` joins the two), so the reader takes the
joined model as an argument. Version: :data:`SWEEP_CONFIG_VERSION`, the only one; the file spells no version
(a later major version adds a key, which this reader, refusing unknown keys, refuses rather than misreads).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import AliasChoices, Field

from archline.common.atomic import write_atomic
from archline.common.exits import EXIT_INPUT
from archline.common.files import read_toml
from archline.common.inputs import Strict, unknown_key_hint, validate
from archline.model.errors import ArchlineFitError

SWEEP_CONFIG_VERSION = 1


class SweepConfigError(ArchlineFitError):
    """A sweep config that cannot be used: the message names the file and the key (exit 2)."""

    exit_code = EXIT_INPUT


class SweepKeys(Strict):
    """The sweep config's own keys (beside the ``bench run`` options)."""

    platform: str
    name: str | None = None
    out: str | None = None
    max_points: int = Field(default=0, ge=0)
    host: str | None = Field(default=None, min_length=1)
    #: the option ``working_set_bytes``, spelled ``working_set`` in the file
    working_set_bytes: int | None = Field(default=None, ge=1, validation_alias=AliasChoices("working_set"))


T = TypeVar("T", bound=SweepKeys)


@dataclass(frozen=True)
class SweepConfigFile(Generic[T]):
    """A sweep config as read: the validated table, the table as written, and its paths resolved."""

    path: Path
    table: T
    raw: dict[str, Any]
    name: str           #: ``name``, else the file's stem
    platform: str       #: a profile name, or a .toml path made absolute (relative: to the config file)
    out: Path           #: ``out`` (default ``results/<name>``), relative: to the config file

    @classmethod
    def read(cls, path: Path, table: type[T]) -> SweepConfigFile[T]:
        """``path``'s ``[sweep]`` table validated as ``table`` (:class:`SweepKeys` and the run options); every
        problem is one :class:`SweepConfigError` line naming the file and the key."""
        data = read_toml(path, error=SweepConfigError, what="sweep config")
        extra = [k for k in data if k != "sweep"]
        if extra:
            raise SweepConfigError(f"{path}: unknown top-level key '{extra[0]}' (the config is one [sweep] table)")
        t = data.get("sweep")
        if not isinstance(t, dict):
            raise SweepConfigError(f"{path}: missing the [sweep] table")
        known = file_keys(table)
        for k in t:
            if k not in known:
                raise SweepConfigError(f"{path}: [sweep]: unknown key '{k}'" + unknown_key_hint(k, known))
        valid = validate(table, t, f"{path}: [sweep]", error=SweepConfigError)
        base = path.parent
        plat = valid.platform
        if plat.endswith(".toml") and not Path(plat).is_absolute():
            plat = str((base / plat).resolve())
        name = valid.name or path.stem
        out = Path(valid.out or f"results/{name}")
        return cls(path=path, table=valid, raw=dict(t), name=name, platform=plat,
                   out=out if out.is_absolute() else base / out)

    @staticmethod
    def write(path: Path, table: Mapping[str, Any], *, comment: str = "") -> None:
        """Write ``table`` as the sweep config ``path`` (atomically), unless the file already holds exactly that:
        its mtime then stays. An ``OSError`` (unwritable, full disk) is the caller's to word."""
        text = sweep_config_text(table, comment=comment)
        if not path.exists() or path.read_text() != text:
            write_atomic(path, text)


def file_keys(model: type[Strict]) -> list[str]:
    """The keys a table of ``model`` takes, as the file spells them (a field's alias where it has one)."""
    plain = [k for k, f in model.model_fields.items() if not isinstance(f.validation_alias, AliasChoices)]
    aliased = [str(a) for f in model.model_fields.values() if isinstance(f.validation_alias, AliasChoices)
               for a in f.validation_alias.choices]
    return plain + aliased


def toml_table(name: str, table: Mapping[str, Any]) -> str:
    """A flat TOML table of strings, booleans, numbers and lists of them (what a [sweep] table holds). Written
    here in a few lines: the standard library reads TOML but does not write it."""

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


def sweep_config_text(table: Mapping[str, Any], *, comment: str = "") -> str:
    """A sweep config holding ``table`` as its ``[sweep]`` table, after a ``# comment`` line when one is given."""
    return (f"# {comment}\n" if comment else "") + toml_table("sweep", table)
