"""The Empirical Roofline Toolkit's roofline.json (format owner: writer and reader).

Layout, as ERT writes it: {"empirical": {"gflops": {"data": [[name, GFLOP/s], ...], "metadata": {...}},
"gbytes": {"data": [[level, GB/s], ...], "metadata": {...}}, "metadata": {...}}}; names "FP64 GFLOPs",
"FP32 GFLOPs", levels "DRAM", "L1", "L2", "L3"."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.atomic import write_atomic
from archline.fit.errors import ArchlineFitError

_PREC_NAMES = {"dp": "FP64 GFLOPs", "sp": "FP32 GFLOPs"}


def figure_name(ert_name: str) -> str:
    """The run summary's name of an ERT entry (its metadata's ``figures`` key): "FP64 GFLOPs" -> "peak DP", a level
    ("DRAM", "L1") -> "bandwidth DRAM"."""
    prec = next((p for p, n in _PREC_NAMES.items() if n == ert_name), None)
    return f"peak {prec.upper()}" if prec else f"bandwidth {ert_name}"


@dataclass(frozen=True)
class ErtRoofline:
    gflops: dict[str, float]          # ERT name ("FP64 GFLOPs") -> GFLOP/s
    gbytes: dict[str, float]          # level ("DRAM", "L1") -> GB/s
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_summary(cls, peaks_gflop_per_s: Mapping[str, float], bandwidths_gb_per_s: Mapping[str, float],
                     metadata: Mapping[str, Any] | None = None) -> ErtRoofline:
        return cls({_PREC_NAMES.get(p, f"{p.upper()} GFLOPs"): float(g) for p, g in peaks_gflop_per_s.items()},
                   {lvl: float(b) for lvl, b in bandwidths_gb_per_s.items()}, dict(metadata or {}))

    def to_json(self) -> dict[str, Any]:
        return {"empirical": {
            "metadata": self.metadata,
            "gflops": {"data": [[k, v] for k, v in self.gflops.items()], "metadata": {}},
            "gbytes": {"data": [[k, v] for k, v in self.gbytes.items()], "metadata": {}}}}


class ErtPathError(ArchlineFitError):
    """An ERT export named with a suffix other than .json (exit 2)."""


def check_ert_path(path: str | Path) -> None:
    """An ERT export is JSON: a name ending otherwise (``e9.png``) is refused before anything is read or written;
    a device or pipe (``/dev/stdout``) is a stream and is written as it is."""
    from archline.common.outputs import is_stream, show

    if Path(path).suffix.lower() != ".json" and not is_stream(path):
        raise ErtPathError(f"--out {show(path)}: an ERT roofline.json is JSON; name the file with the .json suffix")


def write_ert(path: str | Path, roof: ErtRoofline) -> Path:
    """Atomic; the caller refuses a path that is one of its inputs (and checks its suffix, :func:`check_ert_path`)."""
    check_ert_path(path)
    return write_atomic(path, json.dumps(roof.to_json(), indent=2) + "\n")


def read_ert(path: str | Path) -> ErtRoofline:
    doc = json.loads(Path(path).read_text())
    emp = doc["empirical"]
    return ErtRoofline({str(k): float(v) for k, v in emp["gflops"]["data"]},
                       {str(k): float(v) for k, v in emp["gbytes"]["data"]}, dict(emp.get("metadata", {})))


def host_roofline_path() -> Path:
    """Where the last measured (not emulated) ``bench run --platform localhost`` keeps a copy of its roofline.json,
    so that ``localhost`` is a platform for fit, model, plot and predict: ``$XDG_STATE_HOME/archline/
    localhost.roofline.json`` (``~/.local/state/...`` when the variable is unset or empty)."""
    import os

    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "archline" / "localhost.roofline.json"


def cpu_model() -> str:
    """This machine's CPU model as /proc/cpuinfo names it (else what Python's platform module says): the
    ``cpu_model`` of localhost's copy, and what reading it compares."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "Hardware")) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
