"""Fitting S3 Table 2's per-unit maximum powers from microbenchmark rows, and the power validation of S3 Figs. 7
and 12 (Hong & Kim, ISCA 2010, §3.4, §6.1, §6.3).

S3 §3.4: "The optimum set of MaxPower_comp values in Equation (9) that minimize the error between the measured
power and the outcome of the equation is searched." GPU power (eq.5-16) is linear in the MaxPower values once
the access rates are known: P - idle = log10(alpha*active + beta) * (Num_SMs * sum_on-chip MaxPower_u g_u(AR_u)
+ sum_memory MaxPower_u g_u(AR_u)), g_u the access rate or its Spec.Linear conversion, Const_SM's g = 1. So the
fit is a non-negative linear least squares on columns computed by the model itself (``power_from_rates`` with one
unit at 1 W and the rest at 0), and a unit no row accesses keeps the GPU file's value.

The rows file (``name``, ``gpu_power_w``, ``active_sms``, ``emulated``, ``rate_<unit>``) is read and written by its
owner, :mod:`archline.formats.hongkim_rows`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.analyses.hongkim.ipp import GpuParams, IppInputError, Unit, power_from_rates
from archline.formats import hongkim_rows
from archline.formats.hongkim_rows import MicroRow


def read_rows(path: str | Path, gpu: GpuParams) -> list[MicroRow]:
    """The rows of a microbenchmark file for ``gpu``'s units (their owner,
    :func:`archline.formats.hongkim_rows.read_rows`); every problem is one line naming the file, the row and the
    column."""
    return hongkim_rows.read_rows(path, [u for u in gpu.units if u != "const_sm"], gpu.num_sms, error=IppInputError)


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
    """Rows in the file format ``read_rows`` reads (its owner, :func:`archline.formats.hongkim_rows.rows_csv`)."""
    return hongkim_rows.rows_csv(rows, [u for u in gpu.units if u != "const_sm"])
