"""Per-row predictions and signed relative errors (model - measured)/measured of energy, time and power.

Energy is predicted at the row's measured time, as the regressions use it (eq.4/eq.32: E = dynamic + pi0*T).
Time is the model's own time (eq.3, eq.34). Power is the model's own: its energy at its own time over that
time, which is the power line (eq.7, eq.38) at the row's intensity. (Energy at the *measured* time divided
by the *modelled* time, as this module once did, is neither: it charges pi0 over the measured time and then
divides by a shorter one, overstating power by T_measured/T_model.)

Every model's energy is affine in the measured time for a configuration, so a fit keeps per configuration
alpha, gamma (E = alpha + gamma*T), its time and its power; the per-row errors are summarised a slice of rows
at a time and rebuilt only when asked for (--points, the figure).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.config_stats import CHUNK_ROWS
from archline.fit.io.configs import Columns, Grouped

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


#: predictor(configurations) -> (predicted time_s or None, predicted energy_j at each entry's time_s). Every
#: model's energy is affine in the measured time, so evaluating it at time 0 and 1 gives the per-row prediction.
Predictor = Callable[["Columns"], tuple["np.ndarray | None", "np.ndarray"]]


def relative_error(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """(model - measured)/measured: signed, overprediction positive (model.md §6.3)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (pred - meas) / meas


def error_summary(err: np.ndarray, prefix: str, *, absolute: bool = False) -> dict[str, float]:
    """Mean |err|, median |err|, sd, min, max (in %) of a relative-error vector; NaNs ignored. One array of
    |err| and in-place selection for the median: these vectors have millions of rows. ``absolute``: ``err``
    already holds |err| and may be reordered."""
    a = err if absolute else np.abs(err)
    if not np.isfinite(a.sum()):
        a = a[np.isfinite(a)]
    n = a.size
    if n == 0:
        return {}
    mean = float(a.sum()) / n
    var = max(float(np.dot(a, a)) - n * mean * mean, 0.0) / (n - 1) if n > 1 else 0.0
    lo, hi = float(a.min()), float(a.max())
    k = n // 2
    a.partition([k - 1, k] if n % 2 == 0 else [k])
    med = float(a[k]) if n % 2 else 0.5 * float(a[k - 1] + a[k])
    return {f"{prefix}_mape_pct": 100 * mean, f"{prefix}_median_ape_pct": 100 * med,
            f"{prefix}_sd_pct": 100 * math.sqrt(var), f"{prefix}_min_pct": 100 * lo, f"{prefix}_max_pct": 100 * hi}


def at_time(cfg: Columns, time_s: np.ndarray | float) -> Columns:
    c = Columns({k: cfg[k] for k in cfg.columns})
    c["time_s"] = np.broadcast_to(np.asarray(time_s, dtype=np.float64), (len(cfg),)).copy()
    return c


def affine(predictor: Predictor, cfg: Columns) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Per configuration: the model's time (or None), and energy = alpha + gamma*T at measured time T."""
    t_model, alpha = predictor(at_time(cfg, 0.0))
    _, e1 = predictor(at_time(cfg, 1.0))
    return t_model, alpha, e1 - alpha


#: kind -> signed relative error of a slice: f(per-config arrays, g, t, e)
_ERRORS: dict[str, Callable[[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "energy": lambda c, g, t, e: (c["alpha"][g] + c["gamma"][g] * t - e) / e,
    "time": lambda c, g, t, e: (c["time"][g] - t) / t,
    "power": lambda c, g, t, e: (c["power"][g] - e / t) / (e / t),
}


def signed_errors(kind: str, per_cfg: dict[str, np.ndarray], data: Grouped) -> np.ndarray:
    """Signed relative error of every row, computed a slice at a time into one array."""
    out = np.empty(data.n_kept)
    f = _ERRORS[kind]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(0, data.n_kept, CHUNK_ROWS):
            sl = slice(i, i + CHUNK_ROWS)
            out[sl] = f(per_cfg, data.g[sl], data.t[sl], data.e[sl])
    return out


def summarise(kind: str, per_cfg: dict[str, np.ndarray], data: Grouped, prefix: str) -> dict[str, float]:
    err = signed_errors(kind, per_cfg, data)
    np.abs(err, out=err)
    return error_summary(err, prefix, absolute=True)


@dataclass
class RowErrors:
    """Per-configuration predictions and the summaries of the per-row errors."""

    alpha: np.ndarray
    gamma: np.ndarray
    time_model_s: np.ndarray | None = None      # per configuration
    power_model_w: np.ndarray | None = None     # per configuration
    summary: dict[str, float] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)   # per configuration, e.g. cap_binds

    def per_cfg(self) -> dict[str, np.ndarray]:
        d = {"alpha": self.alpha, "gamma": self.gamma}
        if self.time_model_s is not None and self.power_model_w is not None:
            d["time"], d["power"] = self.time_model_s, self.power_model_w
        return d

    def quality(self) -> dict[str, float]:
        return dict(self.summary)

    def signed(self, data: Grouped) -> dict[str, np.ndarray]:
        """Per-row predictions and signed errors (rebuilt on demand)."""
        c = self.per_cfg()
        out = {"energy_pred_j": self.alpha[data.g] + self.gamma[data.g] * data.t,
               "energy_rel_err": signed_errors("energy", c, data)}
        if "time" in c:
            out["time_rel_err"] = signed_errors("time", c, data)
            out["power_rel_err"] = signed_errors("power", c, data)
        return out

    def frame(self, data: Grouped) -> pd.DataFrame:
        """The --points table: one line per row."""
        import pandas as pd

        cfg, g = data.cfg, data.g
        w, q = cfg.num("work_flop"), cfg.num("bytes_mem")
        intensity = np.divide(w, q, out=np.full(len(cfg), np.nan), where=q > 0)
        names = np.array([s.name for s in data.sources] or [""], dtype=object)
        s = self.signed(data)
        d: dict[str, Any] = {
            "file": names[data.src] if data.sources else "", "line": data.pos,
            "kernel": cfg["kernel"][g], "precision": cfg["precision"][g], "intensity_flop_per_byte": intensity[g],
            "time_s": data.t, "energy_j": data.e, "power_w": data.e / data.t,
            "energy_pred_j": s["energy_pred_j"], "energy_rel_err": s["energy_rel_err"]}
        if self.time_model_s is not None and self.power_model_w is not None:
            d["time_pred_s"] = self.time_model_s[g]
            d["time_rel_err"] = s["time_rel_err"]
            d["power_pred_w"] = self.power_model_w[g]
            d["power_rel_err"] = s["power_rel_err"]
        for k, v in self.extra.items():
            d[k] = v[g]
        return pd.DataFrame(d)


def row_errors(predictor: Predictor, data: Grouped) -> RowErrors:
    t_model, alpha, gamma = affine(predictor, data.cfg)
    out = RowErrors(alpha, gamma)
    if t_model is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            out.time_model_s = t_model
            out.power_model_w = (alpha + gamma * t_model) / t_model
    c = out.per_cfg()
    out.summary = summarise("energy", c, data, "energy")
    if "time" in c:
        out.summary.update(summarise("time", c, data, "time"))
        out.summary.update(summarise("power", c, data, "power"))
    return out
