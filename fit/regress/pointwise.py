"""Per-row predictions and signed relative errors (model - measured)/measured of energy, time and power.

Energy is predicted at the row's measured time, as the regressions use it (eq.4/eq.32: E = dynamic + pi0*T).
Time is the model's own time (eq.3, eq.34). Power is the model's own: its energy at its own time over that
time, which is the power line (eq.7, eq.38) at the row's intensity. (Energy at the *measured* time divided
by the *modelled* time, as this module once did, is neither: it charges pi0 over the measured time and then
divides by a shorter one, overstating power by T_measured/T_model.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.configs import Columns, Grouped
from archline.fit.regress.result import Predictor, error_summary, relative_error

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def at_time(cfg: Columns, time_s: np.ndarray | float) -> Columns:
    c = Columns({k: cfg[k] for k in cfg.columns})
    c["time_s"] = np.broadcast_to(np.asarray(time_s, dtype=np.float64), (len(cfg),)).copy()
    return c


def affine(predictor: Predictor, cfg: Columns) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Per configuration: the model's time (or None), and energy = alpha + gamma*T at measured time T."""
    t_model, alpha = predictor(at_time(cfg, 0.0))
    _, e1 = predictor(at_time(cfg, 1.0))
    return t_model, alpha, e1 - alpha


@dataclass
class RowErrors:
    """Per-row predictions and errors; per-configuration model time and power."""

    energy_pred_j: np.ndarray
    energy_rel_err: np.ndarray
    time_model_s: np.ndarray | None = None      # per configuration
    power_model_w: np.ndarray | None = None     # per configuration
    time_rel_err: np.ndarray | None = None
    power_rel_err: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)   # per configuration, e.g. cap_binds

    def quality(self) -> dict[str, float]:
        out = dict(error_summary(self.energy_rel_err, "energy"))
        if self.time_rel_err is not None and np.isfinite(self.time_rel_err).any():
            out.update(error_summary(self.time_rel_err, "time"))
        if self.power_rel_err is not None and np.isfinite(self.power_rel_err).any():
            out.update(error_summary(self.power_rel_err, "power"))
        return out

    def frame(self, data: Grouped) -> pd.DataFrame:
        """The --points table: one line per row."""
        import pandas as pd

        cfg, g = data.cfg, data.g
        w, q = cfg.num("work_flop"), cfg.num("bytes_mem")
        intensity = np.divide(w, q, out=np.full(len(cfg), np.nan), where=q > 0)
        names = np.array([s.name for s in data.sources] or [""], dtype=object)
        d: dict[str, Any] = {
            "file": names[data.src] if data.sources else "", "line": data.pos,
            "kernel": cfg["kernel"][g], "precision": cfg["precision"][g], "intensity_flop_per_byte": intensity[g],
            "time_s": data.t, "energy_j": data.e, "power_w": data.e / data.t,
            "energy_pred_j": self.energy_pred_j, "energy_rel_err": self.energy_rel_err}
        if self.time_model_s is not None and self.power_model_w is not None:
            d["time_pred_s"] = self.time_model_s[g]
            d["time_rel_err"] = self.time_rel_err
            d["power_pred_w"] = self.power_model_w[g]
            d["power_rel_err"] = self.power_rel_err
        for k, v in self.extra.items():
            d[k] = v[g]
        return pd.DataFrame(d)


def row_errors(predictor: Predictor, data: Grouped) -> RowErrors:
    t_model, alpha, gamma = affine(predictor, data.cfg)
    g = data.g
    e_pred = alpha[g] + gamma[g] * data.t
    out = RowErrors(e_pred, relative_error(e_pred, data.e))
    if t_model is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            p_model = (alpha + gamma * t_model) / t_model
        out.time_model_s = t_model
        out.power_model_w = p_model
        out.time_rel_err = relative_error(t_model[g], data.t)
        out.power_rel_err = relative_error(p_model[g], data.e / data.t)
    return out
