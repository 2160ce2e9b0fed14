"""The result of ``archline measure`` (format ``archline.measure/1``): one JSON document, written atomically as
``<out>/<run_id>/measure.json`` beside the trace and raw captures; this module is its only reader and writer, and
renders it as a table.

    {"format": "archline.measure/1", "command": [...], "platform": "gtx580", "platform_path": null, "emulated": true,
     "meter": "...", "reason": null, "exit_code": 0, "signal": null,
     "anchor": {"monotonic_s": ..., "unix_s": ..., "utc": "..."},     # host monotonic <-> wall clock
     "baseline": {window} | null,  "idle_power_w": ..., "idle_power_err_w": ..., "subtract_idle": false,
     "runs": [{window, "phases": [{window}, ...]}, ...],  "summary": {...}, "problems": [...], "warnings": [...],
     "files": {...}}

A window is :meth:`archline.powermon.record.windows.Measurement.as_dict` (units in every name), plus, where asked,
``energy_above_idle_j`` / ``energy_above_idle_err_j``, for an emulated device ``truth_energy_j`` (what
it drew; not on a busy/idle schedule, which has no truth beyond itself), and, for a window
widened to a profiled sensor's shortest, ``widened_from`` (the command's or phase's own ``t_start_s``, ``t_end_s``,
``time_s``; the window's fields are the widened window's). ``platform`` is the profile's name, ``platform_path``
the file given (null for a name); ``warnings``: what the meter choice left out. On a platform emulated by its
busy/idle schedule (bench/measure/schedule.py) the document and each window carry ``energy_source`` ("emulated:
schedule x measured time, not the program's energy"). With --costs, ``placement`` is the run's place on the
roofline (fit/analyses/placement.py ``Placement.as_dict``, or ``{"reason": ...}``), with ``phases`` for the
counts file's other rows.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from archline.common.atomic import write_atomic
from archline.model.errors import ArchlineFitError

FORMAT = "archline.measure/1"
FILE_NAME = "measure.json"



class MeasureResultError(ArchlineFitError):
    """A file that is not a readable ``archline.measure/1`` result (exit 2, as every bad input)."""


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the repetitions: mean and spread of time, energy and mean power (energy above idle where given), of
    the runs that completed (exit code 0, no signal) only; ``n_left_out`` counts the others (a failed or
    interrupted run is partial: its numbers would bias the mean)."""
    all_runs = runs
    runs = [r for r in runs if r.get("exit_code") == 0 and not r.get("signal") and not r.get("interrupted")]
    out: dict[str, Any] = {"n_runs": len(runs), "n_left_out": len(all_runs) - len(runs)}
    for key in ("time_s", "energy_j", "mean_power_w", "energy_above_idle_j"):
        vals = [r[key] for r in runs if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
        if not vals:
            continue
        out[f"{key}_mean"] = statistics.fmean(vals)
        out[f"{key}_min"] = min(vals)
        out[f"{key}_max"] = max(vals)
        if len(vals) > 1:
            out[f"{key}_stdev"] = statistics.stdev(vals)
    errs = [r["energy_err_j"] for r in runs if isinstance(r.get("energy_err_j"), (int, float))]
    if errs:
        out["energy_err_j_mean"] = statistics.fmean(errs)   # each run's own bound (not shrunk by averaging)
    return out


def write(doc: dict[str, Any], path: Path) -> Path:
    return write_atomic(path, json.dumps({"format": FORMAT, **doc}, indent=2, allow_nan=False) + "\n")


def read(path: str | Path) -> dict[str, Any]:
    from archline.common.files import read_json

    doc = read_json(Path(path), error=MeasureResultError, what="measure result")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise MeasureResultError(f"{path}: not an {FORMAT} file (no 'format': '{FORMAT}')")
    return doc


def warnings(doc: dict[str, Any]) -> list[str]:
    """Every warning the document carries, each once, in order: the meters' (``warnings``), each window's (the
    baseline, the runs and their phases: lost samples, a widened window, the sensor's share of the bound, a
    calibration), and the ``problems`` of the runs (a phase never ended, processes left running)."""
    out: list[str] = list(doc.get("warnings") or [])
    windows = ([doc["baseline"]] if doc.get("baseline") else []) + [
        w for r in doc.get("runs", []) for w in (r, *r.get("phases", []))]
    for w in windows:
        for text in w.get("warnings") or []:
            text = str(text)
            out.append(text if text.startswith(f"{w.get('name')}: ") else f"{w.get('name')}: {text}")
    out += [str(p) for p in doc.get("problems", [])]
    return list(dict.fromkeys(out))


def _num(x: Any, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


def table(doc: dict[str, Any]) -> str:
    """The result as text: one line per window (runs, their phases, the baseline), then the exit status."""
    # an emulated device's truth (what it drew); a schedule (energy_source) has none beyond itself
    truth = bool(doc.get("emulated")) and not doc.get("energy_source")
    rows: list[tuple[str, ...]] = [("window", "time_s", "energy_j", "+-err_j", "mean_power_w", "+-err_w",
                                    "above_idle_j", "lost", *(("truth_j",) if truth else ()))]

    def add(label: str, w: dict[str, Any]) -> None:
        rows.append((label, _num(w.get("time_s"), ".4f"), _num(w.get("energy_j"), ".4f"),
                     _num(w.get("energy_err_j"), ".4f"), _num(w.get("mean_power_w"), ".3f"),
                     _num(w.get("mean_power_err_w"), ".3f"), _num(w.get("energy_above_idle_j"), ".4f"),
                     str(w.get("lost_samples", 0)),
                     *((_num(w.get("truth_energy_j"), ".4f"),) if truth else ())))

    if doc.get("baseline"):
        add("baseline (idle)", doc["baseline"])
    for r in doc["runs"]:
        add(r["name"] + (" (widened)" if r.get("widened_from") else ""), r)
        for p in r.get("phases", []):
            add(f"  {p['name']}" + (" (widened)" if p.get("widened_from") else ""), p)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    head = [f"{'emulated ' if doc.get('emulated') else ''}{doc.get('platform')}: {doc.get('meter')}"]
    if doc.get("reason") and doc["reason"] not in str(doc.get("meter")):
        head.append(f"no energy: {doc['reason']}")
    tail = []
    s = doc.get("summary", {})
    if s.get("n_left_out"):
        tail.append(f"summary: {s['n_left_out']} run(s) left out (failed or interrupted)")
    if s.get("n_runs", 0) > 1 and "energy_j_mean" in s:
        tail.append(f"mean of {s['n_runs']} runs: {s['time_s_mean']:.4f} s, {s['energy_j_mean']:.4f} J "
                    f"(stdev {s.get('energy_j_stdev', 0.0):.4f} J), {s['mean_power_w_mean']:.3f} W")
    if doc.get("idle_power_w") is not None:
        tail.append(f"idle power {doc['idle_power_w']:.3f} +- {doc.get('idle_power_err_w') or 0.0:.3f} W"
                    + (" (subtracted: above_idle_j)" if doc.get("subtract_idle") else ""))
    status = f"killed by signal {doc['signal']}" if doc.get("signal") else f"exit code {doc.get('exit_code')}"
    tail.append(f"command {status}")
    if doc.get("files", {}).get("result"):
        tail.append(f"wrote {doc['files']['result']}")
    return "\n".join(head + lines + tail)
