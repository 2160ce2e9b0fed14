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
from archline.model.errors import ArchlineFitError, ProfileFormatError

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
#: below any machine's rate (a MFLOP/s, a MB/s): a value below is a unit slip or a corrupted number, and its time
#: (1/rate) would overflow or mean nothing (5e-324 GFLOP/s is tau = inf)
MIN_RATE = 1e-3
#: how many names a warning lists before "and N more" (a file of 20,000 ceilings is one short line)
LIST_MAX = 10


def capped(items: list[str], most: int = LIST_MAX) -> str:
    """``items`` joined by "; ", the first ``most`` of them and "and N more" for the rest."""
    more = len(items) - most
    return "; ".join(items[:most]) + (f"; and {more:,} more" if more > 0 else "")


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
    #: one phrase per name given twice in a section (the highest kept: a peak is the highest of its ceilings)
    duplicates: tuple[str, ...] = ()

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
        dups: list[str] = []
        got = {f"{sec}.{kind}": _entries(part.get(kind), f"{where}: {sec}.{kind}", tagged, dups, f"{sec}.{kind}")
               for sec, part in (("empirical", emp), ("spec", spec)) for kind in ("gflops", "gbytes")}
        if not got["empirical.gflops"] and not got["empirical.gbytes"]:
            raise ErtFormatError(f"{where}: the ERT roofline.json holds no measured ceiling (empirical gflops and "
                                 "gbytes are both empty)")
        meta = dict(emp["metadata"]) if isinstance(emp.get("metadata"), dict) else {}
        if any(tagged) and not meta.get("emulated"):
            meta["emulated"] = True
        for key, value in _meta_lines(emp).items():     # HPCL's files keep ERT's META_DATA lines in gflops.metadata
            meta.setdefault(key, value)
        return cls(got["empirical.gflops"], got["empirical.gbytes"], meta, got["spec.gflops"], got["spec.gbytes"],
                   tuple(dups))


def _meta_lines(emp: dict[str, Any]) -> dict[str, str]:
    """HOSTNAME and ERT_VERSION from ERT's META_DATA text kept in a section's metadata (roofline_python's files:
    ``{"": ["META_DATA", "ERT_VERSION  1.1.0", "HOSTNAME  ('apollo...', [], [...])", ...]}``) or as its keys."""
    out: dict[str, str] = {}
    for kind in ("gflops", "gbytes"):
        part = emp.get(kind)
        md = part.get("metadata") if isinstance(part, dict) else None
        if not isinstance(md, dict):
            continue
        for key in ("HOSTNAME", "ERT_VERSION"):
            if isinstance(md.get(key), (str, list)):
                out.setdefault(key, md[key])
        lines = [v for vs in md.values() if isinstance(vs, list) for v in vs if isinstance(v, str)]
        for line in lines:
            key, _, value = line.strip().partition(" ")
            if key in ("HOSTNAME", "ERT_VERSION") and value.strip():
                host = re.match(r"\(\s*'([^']*)'", value.strip())     # Python's gethostbyaddr triple, as text
                out.setdefault(key, host.group(1) if host else value.strip())
    return out


def _rate(value: int | float) -> float:
    """A JSON number as a float: an integer literal too large for one (1e400 written out) is infinite, refused
    later as every non-finite rate is, never an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _entries(part: Any, where: str, tagged: list[bool], dups: list[str] | None = None,
             section: str = "") -> dict[str, float]:
    """``{"data": [[name, value], ...]}`` as a dict; a missing section is empty (ERT 1.1.0 files without spec). A
    name given twice keeps its highest value (a peak is the highest of its ceilings), said in ``dups``."""
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
        key, value = name.removesuffix(EMULATED_TAG), _rate(e[1])
        if key in out:
            if dups is not None:
                dups.append(f"{key!r} given twice in {section} ({out[key]:g} and {value:g}; the highest kept)")
            value = max(out[key], value) if not (math.isnan(value) or math.isnan(out[key])) else math.nan
        out[key] = value
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
        text = Path(path).read_text(encoding="utf-8-sig")      # a BOM (a Windows editor's) is no content
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise ErtFormatError(f"{show(path)}: cannot be read as an ERT roofline.json ({why})") from None
    return ErtRoofline.from_doc(parse_json(text, path, error=ErtFormatError), show(path))


def names_ert_roofline(head: bytes) -> bool:
    """Whether the first bytes of a JSON file are an ERT roofline.json's (a peek, for a reader choosing a format):
    ERT's top-level keys, ``"empirical"`` (Python 2's ERT put ``"spec"`` after it, 3's writes it first)."""
    return re.match(rb'(\xef\xbb\xbf)?\s*\{\s*"(empirical|spec)"\s*:', head) is not None


#: an ERT name -> the archline constant of its time (tau = 1/rate); see :func:`ceiling_key`
_LEVEL_KEYS = {"L1": "tau_l1", "L2": "tau_l2", "L3": "tau_l3", "DRAM": "tau_mem"}
_MEMORY_WORDS = re.compile(r"DRAM|HBM|DDR|MCDRAM|MEM", re.IGNORECASE)
#: on-chip memories that are no level of archline's model (a GPU's shared memory, AMD's LDS, a scratchpad)
_ONCHIP_WORDS = frozenset({"SHARED", "SMEM", "LDS", "LOCAL", "SCRATCH", "SCRATCHPAD", "TEXTURE", "CONSTANT"})
#: a unit in a name other than ERT's (its data are GFLOP/s and GB/s): read as written, it would be 1000x off
_OTHER_UNITS = re.compile(r"\b([KMTPE]FLOP/?S?|[KMTPE]I?B/S|[KMTPE]I?BYTES?/?S?|GIB/S|FLOP/S|B/S)\b",
                          re.IGNORECASE)


def ceiling_key(name: str, flops: bool) -> tuple[str | None, str]:
    """The archline constant an ERT ceiling gives (``tau_flop_dp``, ``tau_flop_sp``, ``tau_l1``..``tau_l3``,
    ``tau_mem``), or None and why not. ERT 1.1.0's "GFLOPs" is double precision (its kernel's type is
    ``double``); a name is read by its words ("FP64 Vector GFLOPs FMA", "Peak SP Scalar GFlops" are renamed
    ERT ceilings), a memory level by its word (DRAM, HBM, DDR, MCDRAM, Mem)."""
    words = set(re.split(r"[^A-Za-z0-9]+", name.upper()))
    unit = _OTHER_UNITS.search(name)
    if unit is not None:
        return None, (f"its name gives the unit {unit.group(0)}, and ERT's data are GFLOP/s and GB/s: give the "
                      "value in those, named as ERT names it (\"FP64 GFLOPs\", \"DRAM\")")
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
    if words & _ONCHIP_WORDS:
        return None, "an on-chip memory (shared, LDS, scratchpad), not a level archline models"
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
    if (why := rate_problem(rate, flops, bounds)) is not None:
        raise ErtFormatError(f"{where}: {name} = {rate!r} is not a rate a machine has ({why}); {fix}")


def rate_problem(rate: float, flops: bool,
                 bounds: tuple[float, float] = (MAX_GFLOP_PER_S, MAX_GB_PER_S)) -> str | None:
    """Why ``rate`` (GFLOP/s or GB/s) is no machine's, in words, or None: it must be finite and between
    :data:`MIN_RATE` and the bound."""
    bound, unit = (bounds[0], "GFLOP/s") if flops else (bounds[1], "GB/s")
    if math.isfinite(rate) and MIN_RATE <= rate < bound:
        return None
    return f"a finite {unit} from {MIN_RATE:g} to below {bound:g}"


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
