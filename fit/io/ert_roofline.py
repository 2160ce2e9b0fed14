"""The Empirical Roofline Toolkit's roofline.json (format owner: writer and reader).

Layout, as ERT writes it (``ert_core.py``'s ``build_database``; real files in tests/data/real/ert/):
``{"empirical": {"metadata": {...}, "gflops": {"data": [[name, GFLOP/s], ...], "metadata": {...}},
"gbytes": {"data": [[level, GB/s], ...], "metadata": {...}}}, "spec": {"gflops": {"data": [...]},
"gbytes": {"data": [...]}}}``. ``spec`` holds the nominal peaks (ERT's ``ERT_SPEC_GFLOPS`` and
``ERT_SPEC_GBYTES_<LEVEL>``; empty lists when not known). Names: ERT 1.1.0 wrote "GFLOPs" (its kernel is double
precision), ERT with ``ERT_PRECISION`` writes "FP64 GFLOPs", "FP32 GFLOPs", "FP16 GFLOPs"; levels "L1", "L2",
"L3", "DRAM", fastest first. ERT's visualizers draw the names only, so an emulated export says so in each name
("FP64 GFLOPs (emulated)") as well as in the metadata."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.atomic import write_atomic
from archline.fit.errors import ArchlineFitError, ProfileFormatError

_PREC_NAMES = {"dp": "FP64 GFLOPs", "sp": "FP32 GFLOPs"}
#: ERT's level order (its summary lists the fastest level first): L1 -> L2 -> L3 -> DRAM
LEVEL_ORDER = ("L1", "L2", "L3", "DRAM")
#: what an emulated export adds to each name: the one place ERT's plots (the Java visualizer, roofline_python,
#: gnuplot labels) show anything of the file besides the numbers
EMULATED_TAG = " (emulated)"
#: above any device's rate (S4's GPUs peak near 10 TFLOP/s; today's largest near 100 TFLOP/s in fp64): a value
#: above is a unit slip or a corrupted time, refused as non-physical
MAX_GFLOP_PER_S = 1e7
#: above any level's bandwidth (a GPU's aggregate L1 is tens of TB/s)
MAX_GB_PER_S = 1e6


def figure_name(ert_name: str) -> str:
    """The run summary's name of an ERT entry (its metadata's ``figures`` key): "FP64 GFLOPs" -> "peak DP", a level
    ("DRAM", "L1") -> "bandwidth DRAM"."""
    prec = next((p for p, n in _PREC_NAMES.items() if n == ert_name), None)
    return f"peak {prec.upper()}" if prec else f"bandwidth {ert_name}"


class ErtFormatError(ProfileFormatError, ValueError):
    """A file that is not an ERT roofline.json, or one whose data entries are not [name, number] (exit 2)."""


@dataclass(frozen=True)
class ErtRoofline:
    gflops: dict[str, float]          # ERT name ("FP64 GFLOPs") -> GFLOP/s
    gbytes: dict[str, float]          # level ("DRAM", "L1") -> GB/s
    metadata: dict[str, Any] = field(default_factory=dict)
    spec_gflops: dict[str, float] = field(default_factory=dict)   # nominal peaks (ERT's "spec"); empty: not known
    spec_gbytes: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_summary(cls, peaks_gflop_per_s: Mapping[str, float], bandwidths_gb_per_s: Mapping[str, float],
                     metadata: Mapping[str, Any] | None = None,
                     spec_gflop_per_s: Mapping[str, float] | None = None,
                     spec_gb_per_s: Mapping[str, float] | None = None) -> ErtRoofline:
        """From the run summary's figures keyed by precision ("dp") and level ("DRAM"); ``spec_*`` likewise (the
        platform profile's nominal peaks)."""
        def names(peaks: Mapping[str, float]) -> dict[str, float]:
            return {_PREC_NAMES.get(p, f"{p.upper()} GFLOPs"): float(g) for p, g in peaks.items()}

        return cls(names(peaks_gflop_per_s), {lvl: float(b) for lvl, b in bandwidths_gb_per_s.items()},
                   dict(metadata or {}), names(spec_gflop_per_s or {}),
                   {lvl: float(b) for lvl, b in (spec_gb_per_s or {}).items()})

    @property
    def emulated(self) -> bool:
        return self.metadata.get("emulated") is True

    def to_json(self) -> dict[str, Any]:
        """ERT's keys in the order current ERT writes them (Python 3's ``build_database``): empirical (metadata,
        gflops, gbytes), then spec (gflops, gbytes); levels L1 -> DRAM; each measured name tagged when emulated."""
        tag = EMULATED_TAG if self.emulated else ""
        return {
            "empirical": {
                "metadata": self.metadata,
                "gflops": {"data": [[k + tag, v] for k, v in self.gflops.items()], "metadata": {}},
                "gbytes": {"data": [[k + tag, v] for k, v in ordered_levels(self.gbytes).items()], "metadata": {}}},
            "spec": {
                "gflops": {"data": [[k, v] for k, v in self.spec_gflops.items()]},
                "gbytes": {"data": [[k, v] for k, v in ordered_levels(self.spec_gbytes).items()]}}}

    @classmethod
    def from_doc(cls, doc: Any, where: str) -> ErtRoofline:
        """A parsed roofline.json (``where`` names it in errors): every [name, number] entry kept as ERT wrote it,
        a name tagged " (emulated)" untagged and the roofline marked emulated."""
        emp = doc.get("empirical") if isinstance(doc, dict) else None
        if not isinstance(emp, dict):
            raise ErtFormatError(f"{where}: not an ERT roofline.json (no 'empirical' object at the top); give the "
                                 "roofline.json ERT wrote in its Results directory")
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        tagged: list[bool] = []
        got = {f"{sec}.{kind}": _entries(part.get(kind), f"{where}: {sec}.{kind}", tagged)
               for sec, part in (("empirical", emp), ("spec", spec)) for kind in ("gflops", "gbytes")}
        if not got["empirical.gflops"] and not got["empirical.gbytes"]:
            raise ErtFormatError(f"{where}: the ERT roofline.json holds no measured ceiling (empirical gflops and "
                                 "gbytes are both empty)")
        meta = dict(emp["metadata"]) if isinstance(emp.get("metadata"), dict) else {}
        if any(tagged) and not meta.get("emulated"):
            meta["emulated"] = True
        return cls(got["empirical.gflops"], got["empirical.gbytes"], meta, got["spec.gflops"], got["spec.gbytes"])


def _entries(part: Any, where: str, tagged: list[bool]) -> dict[str, float]:
    """``{"data": [[name, value], ...]}`` as a dict; a missing section is empty (ERT 1.1.0 files without spec)."""
    if part is None:
        return {}
    data = part.get("data") if isinstance(part, dict) else None
    if not isinstance(data, list):
        raise ErtFormatError(f"{where}: expected {{\"data\": [[name, value], ...]}}, got {type(part).__name__}")
    out: dict[str, float] = {}
    for i, e in enumerate(data):
        ok = (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
              and isinstance(e[1], (int, float)) and not isinstance(e[1], bool))
        if not ok:
            raise ErtFormatError(f"{where}.data[{i}]: expected [name, number], got {json.dumps(e)[:60]}")
        name = e[0]
        tagged.append(name.endswith(EMULATED_TAG))
        out[name.removesuffix(EMULATED_TAG)] = float(e[1])
    return out


def ordered_levels(gbytes: Mapping[str, float]) -> dict[str, float]:
    """Levels in ERT's order (L1, L2, L3, DRAM), any other name after them in its own order."""
    rank = {lvl: i for i, lvl in enumerate(LEVEL_ORDER)}
    return dict(sorted(gbytes.items(), key=lambda kv: rank.get(kv[0], len(rank))))


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
    """An ERT roofline.json (ERT's own, of any version, or archline's); one line naming the file otherwise. Read
    directly, not noted as a command's input: localhost's copy is read and then rewritten by the same run."""
    from archline.common.files import parse_json
    from archline.common.outputs import show

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise ErtFormatError(f"{show(path)}: cannot be read as an ERT roofline.json ({why})") from None
    return ErtRoofline.from_doc(parse_json(text, path, error=ErtFormatError), show(path))


def names_ert_roofline(head: bytes) -> bool:
    """Whether the first bytes of a JSON file are an ERT roofline.json's (a peek, for a reader choosing a format):
    ERT's top-level keys, ``"empirical"`` (Python 2's ERT put ``"spec"`` after it, 3's writes it first)."""
    return re.match(rb'\s*\{\s*"(empirical|spec)"\s*:', head) is not None


#: an ERT name -> the archline constant of its time (tau = 1/rate); see :func:`ceiling_key`
_LEVEL_KEYS = {"L1": "tau_l1", "L2": "tau_l2", "L3": "tau_l3", "DRAM": "tau_mem"}
_MEMORY_WORDS = re.compile(r"DRAM|HBM|DDR|MCDRAM|MEM", re.IGNORECASE)


def ceiling_key(name: str, flops: bool) -> tuple[str | None, str]:
    """The archline constant an ERT ceiling gives (``tau_flop_dp``, ``tau_flop_sp``, ``tau_l1``..``tau_l3``,
    ``tau_mem``), or None and why not. ERT 1.1.0's "GFLOPs" is double precision (its kernel's type is
    ``double``); a name is read by its words ("FP64 Vector GFLOPs FMA", "Peak SP Scalar GFlops" are renamed
    ERT ceilings), a memory level by its word (DRAM, HBM, DDR, MCDRAM, Mem)."""
    words = set(re.split(r"[^A-Za-z0-9]+", name.upper()))
    if flops:
        if name.strip() == "GFLOPs" or words & {"FP64", "DP", "DOUBLE"}:
            return "tau_flop_dp", "double precision"
        if words & {"FP32", "SP", "SINGLE"}:
            return "tau_flop_sp", "single precision"
        if words & {"FP16", "HP", "HALF", "BF16"}:
            return None, "half precision: archline's model has no half-precision flop constant"
        return None, "the name says no precision (FP64/FP32, DP/SP)"
    key = _LEVEL_KEYS.get(name.strip().upper())
    if key is not None:
        return key, name.strip().upper()
    if _MEMORY_WORDS.search(name):
        return "tau_mem", "main memory"
    return None, "not a level archline models (L1, L2, L3, DRAM or a memory: HBM, DDR, MCDRAM)"


def ceiling_constants(roof: ErtRoofline) -> tuple[dict[str, tuple[str, float]], list[str]]:
    """Each archline time constant the roofline gives, as (the ERT name it came from, its rate in GFLOP/s or GB/s),
    and one phrase per ceiling left out, saying why. Several ceilings of one precision (vector/scalar, with and
    without FMA): the highest is the peak, the others are lower ceilings; several memories: "DRAM" where named,
    else the slowest (main memory is the last level)."""
    chosen: dict[str, tuple[str, float]] = {}
    left: list[str] = []
    for flops, entries in ((True, roof.gflops), (False, ordered_levels(roof.gbytes))):
        for name, rate in entries.items():
            key, why = ceiling_key(name, flops)
            if key is None:
                left.append(f"{name!r} ({why})")
                continue
            have = chosen.get(key)
            if have is None:
                chosen[key] = (name, rate)
                continue
            if flops:
                keep, drop = (have, (name, rate)) if have[1] >= rate else ((name, rate), have)
                why_drop = f"a lower {why} ceiling than {keep[0]!r}"
            else:
                named = [c for c in (have, (name, rate)) if c[0].strip().upper() == "DRAM"]
                keep = named[0] if named else min(have, (name, rate), key=lambda c: c[1])
                drop = (name, rate) if keep is have else have
                why_drop = f"another memory than {keep[0]!r}"
            chosen[key] = keep
            left.append(f"{drop[0]!r} ({why_drop})")
    return chosen, left


def check_rate(where: str, name: str, rate: float, flops: bool, fix: str,
               bounds: tuple[float, float] = (MAX_GFLOP_PER_S, MAX_GB_PER_S)) -> None:
    """A rate that is not positive, not finite or above ``bounds`` (GFLOP/s, GB/s): one line naming the file, the
    key and the value and what to do (``fix``), never a figure silently dropped or believed."""
    bound, unit = (bounds[0], "GFLOP/s") if flops else (bounds[1], "GB/s")
    if not (math.isfinite(rate) and 0 < rate < bound):
        raise ErtFormatError(f"{where}: {name} = {rate!r} is not a rate a machine has (a positive finite {unit} "
                             f"below {bound:g}); {fix}")


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
