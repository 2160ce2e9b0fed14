"""Fitting S3 Table 2's per-unit maximum powers from microbenchmark rows, and the power validation of S3 Figs. 7
and 12 (Hong & Kim, ISCA 2010, §3.4, §6.1, §6.3).

S3 §3.4: "The optimum set of MaxPower_comp values in Equation (9) that minimize the error between the measured
power and the outcome of the equation is searched." GPU power (eq.5-16) is linear in the MaxPower values once
the access rates are known: P - idle = log10(alpha*active + beta) * (Num_SMs * sum_on-chip MaxPower_u g_u(AR_u)
+ sum_memory MaxPower_u g_u(AR_u)), g_u the access rate or its Spec.Linear conversion, Const_SM's g = 1. So the
fit is a non-negative linear least squares on columns computed by the model itself (``power_from_rates`` with one
unit at 1 W and the rest at 0), and a unit no row accesses keeps the GPU file's value.

Rows file (this module is its only reader): CSV with a header; ``name`` and ``gpu_power_w`` (measured, W)
required, ``active_sms`` optional (default: all SMs), and ``rate_<unit>`` (access rate 0..1, eq.10) for any of
the GPU's units (fp, reg, alu, sfu, int, fds, shared, texture, const_cache, global_mem, local_mem). A missing
rate is 0. ``emulated`` (true/false) marks rows that did not come from hardware.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.analyses.hongkim.ipp import GpuParams, IppInputError, Unit, power_from_rates
from archline.formats.costs_units import PLAUSIBLE_MAX_SI, implausible

RATE_PREFIX = "rate_"


@dataclass(frozen=True)
class MicroRow:
    name: str
    rates: dict[str, float]
    active_sms: int | None
    gpu_power_w: float
    emulated: bool = False


def _strict_records(text: str, path: str | Path) -> list[tuple[int, list[str]]]:
    """Every non-blank CSV record with the line it starts on; a column named twice or a row with more or fewer
    fields than the header is an error naming the file and the line."""
    out: list[tuple[int, list[str]]] = []
    reader = csv.reader(io.StringIO(text))
    start = 1
    try:
        for rec in reader:
            line, start = start, reader.line_num + 1
            if not rec or (len(rec) == 1 and not rec[0].strip()):
                continue
            out.append((line, [f.strip() if not out else f for f in rec]))
    except csv.Error as e:
        raise IppInputError(f"{path}, line {reader.line_num}: not valid CSV ({e})") from None
    if not out:
        return out
    header_line, header = out[0]
    seen: set[str] = set()
    for c in header:
        if c in seen:
            raise IppInputError(f"{path}, line {header_line}: column '{c}' is named twice in the header")
        seen.add(c)
    for line, rec in out[1:]:
        if len(rec) != len(header):
            raise IppInputError(f"{path}, line {line}: {len(rec)} fields, the header has {len(header)} "
                                f"({'more' if len(rec) > len(header) else 'fewer'} than the header)")
    return out


def read_rows(path: str | Path, gpu: GpuParams) -> list[MicroRow]:
    """The rows of a microbenchmark file; every problem is one line naming the file, the row and the column."""
    from archline.common.files import read_text

    text = read_text(path, error=IppInputError, what="microbenchmark rows", lines=True)
    records = _strict_records(text, path)
    cols = records[0][1] if records else []
    for need in ("name", "gpu_power_w"):
        if need not in cols:
            raise IppInputError(f"{path}: no '{need}' column (has: {', '.join(cols) or 'none'})")
    known = {f"{RATE_PREFIX}{u}" for u in gpu.units if u != "const_sm"} | {"name", "gpu_power_w", "active_sms",
                                                                           "emulated"}
    extra = [c for c in cols if c not in known]
    if extra:
        raise IppInputError(f"{path}: unknown column '{extra[0]}' (known: name, gpu_power_w, active_sms, emulated, "
                            + ", ".join(sorted(k for k in known if k.startswith(RATE_PREFIX))) + ")")
    rows: list[MicroRow] = []
    for n, fields in records[1:]:
        where = f"{path}, line {n}"
        r: dict[str, Any] = dict(zip(cols, fields, strict=True))

        def num(col: str, *, positive: bool = False, where: str = where, r: dict[str, Any] = r) -> float | None:
            v = (r.get(col) or "").strip()
            if not v:
                return None
            try:
                x = float(v)
            except ValueError:
                raise IppInputError(f"{where}: {col} '{v}' is not a number") from None
            if not math.isfinite(x) or x < 0 or (positive and x == 0):
                raise IppInputError(f"{where}: {col} must be a {'positive' if positive else 'non-negative'} "
                                    f"finite number, got '{v}'")
            return x

        name = (r.get("name") or "").strip()
        if not name:
            raise IppInputError(f"{where}: empty name")
        power = num("gpu_power_w", positive=True)
        if power is None:
            raise IppInputError(f"{where}: no gpu_power_w")
        if implausible(power, "W"):
            raise IppInputError(f"{where}: gpu_power_w {power:g} W is not a real machine's (at most "
                                f"{PLAUSIBLE_MAX_SI['W']:g} W; give watts)")
        act = num("active_sms", positive=True)
        if act is not None and (not act.is_integer() or act > gpu.num_sms):
            raise IppInputError(f"{where}: active_sms must be a whole number 1..{gpu.num_sms}, got {act:g}")
        rates = {c.removeprefix(RATE_PREFIX): v for c in cols if c.startswith(RATE_PREFIX)
                 and (v := num(c)) is not None}
        emu = (r.get("emulated") or "").strip().lower()
        if emu not in ("", "true", "false"):
            raise IppInputError(f"{where}: emulated must be true or false, got '{emu}'")
        rows.append(MicroRow(name, rates, None if act is None else int(act), power, emu == "true"))
    if not rows:
        raise IppInputError(f"{path}: no rows")
    return rows


def _with_powers(gpu: GpuParams, powers: dict[str, float]) -> GpuParams:
    units = {k: Unit(k, powers.get(k, u.max_power_w), u.on_chip, u.spec_linear) for k, u in gpu.units.items()}
    return replace(gpu, units=units)


def predict_w(rows: Sequence[MicroRow], gpu: GpuParams) -> np.ndarray:
    """eq.5: GPU power of each row from its access rates."""
    return np.array([power_from_rates(r.rates, gpu, r.active_sms).gpu_power_w for r in rows])


def geomean_error(measured: np.ndarray, predicted: np.ndarray) -> float:
    """S3 §6.1's accuracy figure: the geometric mean of |predicted - measured| / measured."""
    err = np.abs(predicted - measured) / measured
    return float(np.exp(np.mean(np.log(np.maximum(err, 1e-12)))))


@dataclass
class UnitFit:
    gpu: GpuParams                                  # the GPU file with the fitted powers in
    fitted: dict[str, float]                        # unit -> MaxPower (W), the units the rows determine
    stderr: dict[str, float | None]
    prior: dict[str, float]                         # the GPU file's values (S3 Table 2 for gtx280)
    kept: list[str]                                 # units no row accesses: the GPU file's value kept
    measured_w: np.ndarray
    predicted_w: np.ndarray
    names: list[str]
    emulated: bool
    notes: list[str] = field(default_factory=list)

    @property
    def geomean_error(self) -> float:
        return geomean_error(self.measured_w, self.predicted_w)

    @property
    def rms_w(self) -> float:
        return float(np.sqrt(np.mean((self.predicted_w - self.measured_w) ** 2)))

    def as_dict(self) -> dict[str, Any]:
        return {"units": [{"unit": u, "max_power_w": self.fitted.get(u, self.prior[u]), "stderr_w": self.stderr.get(u),
                           "gpu_file_w": self.prior[u], "fitted": u in self.fitted} for u in self.prior],
                "rows": [{"name": n, "measured_w": float(m), "predicted_w": float(p)}
                         for n, m, p in zip(self.names, self.measured_w, self.predicted_w, strict=True)],
                "geomean_error": self.geomean_error, "rms_w": self.rms_w, "emulated": self.emulated,
                "notes": self.notes}


def fit_unit_powers(rows: Sequence[MicroRow], gpu: GpuParams) -> UnitFit:
    """Non-negative least squares for every unit's MaxPower (S3 §3.4) with the GPU's idle power, beta and SM
    count held; units no row accesses keep the GPU file's value. Standard errors from the linearised fit."""
    from scipy.optimize import nnls

    prior = {k: u.max_power_w for k, u in gpu.units.items()}
    cols: dict[str, np.ndarray] = {}
    for u in gpu.units:
        one = _with_powers(gpu, {k: (1.0 if k == u else 0.0) for k in gpu.units})
        cols[u] = np.array([power_from_rates(r.rates, one, r.active_sms).runtime_power_w for r in rows])
    free = [u for u in gpu.units if np.any(cols[u] > 0)]
    kept = [u for u in gpu.units if u not in free]
    y = np.array([r.gpu_power_w for r in rows]) - gpu.idle_power_w
    for u in kept:
        y = y - prior[u] * cols[u]
    x = np.column_stack([cols[u] for u in free])
    if len(rows) < len(free):
        raise IppInputError(f"{len(rows)} rows cannot determine {len(free)} unit powers ({', '.join(free)}): "
                            "give at least one row per unit")
    if np.linalg.matrix_rank(x) < len(free):
        raise IppInputError("the rows do not tell the units apart (their access rates are linearly dependent): "
                            "add microbenchmarks that stress each unit on its own (S3 §3.4, Fig. 8)")
    # scale columns so that W-sized and 50 W-sized units weigh alike in the solver
    scale = np.linalg.norm(x, axis=0)
    beta, _ = nnls(x / scale, y)
    beta = beta / scale
    fitted = dict(zip(free, (float(b) for b in beta), strict=True))
    resid = y - x @ beta
    dof = len(rows) - len(free)
    stderr: dict[str, float | None] = {u: None for u in free}
    if dof > 0:
        s2 = float(resid @ resid) / dof
        cov = s2 * np.linalg.inv(x.T @ x)
        stderr = {u: float(math.sqrt(max(cov[i, i], 0.0))) for i, u in enumerate(free)}
    out_gpu = _with_powers(gpu, fitted)
    notes = []
    if kept:
        notes.append(f"no row accesses {', '.join(kept)}: the GPU file's value kept")
    if dof == 0:
        notes.append("as many rows as unit powers: an exact solve, no standard errors")
    return UnitFit(out_gpu, fitted, stderr, prior, kept, np.array([r.gpu_power_w for r in rows]),
                   predict_w(rows, out_gpu), [r.name for r in rows], any(r.emulated for r in rows), notes)


def plot_validation(names: Sequence[str], measured_w: np.ndarray, predicted_w: np.ndarray, out_path: Path,
                    title: str) -> Path:
    """S3 Figs. 7 and 12: measured and predicted GPU power side by side, one pair of bars per row."""
    from archline.fit.figure_layout import pyplot, save_figure

    plt = pyplot()
    n = len(names)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * n + 2.5), 4.6))
    x = np.arange(n)
    ax.bar(x - 0.2, measured_w, 0.4, color="0.3", label="measured")
    ax.bar(x + 0.2, predicted_w, 0.4, color="0.75", edgecolor="0.3", label="predicted")
    ax.set_xticks(x, list(names), rotation=45 if n > 8 else 0, ha="right" if n > 8 else "center", fontsize=8)
    ax.set_ylabel("GPU power (W)")
    ax.set_ylim(0, 1.1 * float(max(measured_w.max(), predicted_w.max())))
    ax.grid(True, axis="y", alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, borderaxespad=0.0)
    err = geomean_error(measured_w, predicted_w)
    fig.suptitle(f"{title}\ngeometric-mean error {100 * err:.2f}%", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_path)


#: S3 Fig. 8's microbenchmarks (FP, MB4, MB8, MEM, INT, CONST, TEX, SHARED) and one per remaining unit, with
#: access rates in the spirit of Fig. 8 (the paper prints them only as bars), plus runs on fewer SMs (§3.5)
MICROBENCHMARKS: tuple[tuple[str, dict[str, float], int | None], ...] = (
    ("FP", {"fp": 0.9, "reg": 0.9, "fds": 0.95, "int": 0.05}, None),
    ("MB4", {"global_mem": 0.4, "reg": 0.3, "fds": 0.3, "int": 0.2, "fp": 0.1}, None),
    ("MB8", {"global_mem": 0.8, "reg": 0.4, "fds": 0.4, "int": 0.25, "fp": 0.1}, None),
    ("MEM", {"global_mem": 1.0, "reg": 0.2, "fds": 0.2, "int": 0.2}, None),
    ("INT", {"int": 0.9, "reg": 0.8, "fds": 0.9}, None),
    ("CONST", {"const_cache": 0.8, "reg": 0.5, "fds": 0.6, "fp": 0.3}, None),
    ("TEX", {"texture": 0.8, "reg": 0.5, "fds": 0.6, "fp": 0.3}, None),
    ("SHARED", {"shared": 0.7, "reg": 0.5, "fds": 0.6, "int": 0.3}, None),
    ("SFU", {"sfu": 0.6, "reg": 0.4, "fds": 0.5, "fp": 0.2}, None),
    ("ALU", {"alu": 0.7, "reg": 0.4, "fds": 0.6}, None),
    ("LOCAL", {"local_mem": 0.6, "reg": 0.3, "fds": 0.3, "int": 0.2}, None),
    ("BRA", {"fds": 0.9}, None),
    ("NOP", {}, None),
    ("FP-10SM", {"fp": 0.9, "reg": 0.9, "fds": 0.95, "int": 0.05}, 10),
    ("MEM-5SM", {"global_mem": 1.0, "reg": 0.2, "fds": 0.2, "int": 0.2}, 5),
)


def emulated_rows(gpu: GpuParams, rel_noise: float = 0.0, seed: int = 0) -> list[MicroRow]:
    """MICROBENCHMARKS' GPU power as the model gives it with ``gpu``'s unit powers (S3 Table 2 for gtx280),
    times (1 + a normal error of ``rel_noise``): rows with known unit powers, labelled emulated."""
    if not (math.isfinite(rel_noise) and 0 <= rel_noise < 0.5):
        raise IppInputError(f"noise must lie in [0, 0.5), got {rel_noise:g}")
    rng = np.random.default_rng(seed)
    out = []
    for name, rates, act in MICROBENCHMARKS:
        act = None if act is None else min(act, gpu.num_sms)
        p = power_from_rates(rates, gpu, act).gpu_power_w * (1.0 + rel_noise * float(rng.standard_normal()))
        out.append(MicroRow(name, dict(rates), act, p, True))
    return out


def rows_csv(rows: Sequence[MicroRow], gpu: GpuParams) -> str:
    """Rows in the file format ``read_rows`` reads."""
    units = [u for u in gpu.units if u != "const_sm"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["name", "gpu_power_w", "active_sms", "emulated", *(RATE_PREFIX + u for u in units)])
    for r in rows:
        w.writerow([r.name, f"{r.gpu_power_w:.12g}", "" if r.active_sms is None else r.active_sms,
                    "true" if r.emulated else "false", *(f"{r.rates[u]:g}" if u in r.rates else "" for u in units)])
    return buf.getvalue()
