"""Cross-validation with folds by configuration (the default) against row-wise folds, on emulated GTX 580 data.

Two synthetic GTX 580 sets (emulated; archline.fit.regress.synthetic, 1% noise on time and energy):

* ``per-row``: the fit tests' set, each configuration repeated 100 times, each row at its own efficiency
  u ~ U(0.7, 1) of the peak rates;
* ``per-configuration``: each configuration at one efficiency, repeated 20 times with 1% noise, as a kernel
  configuration behaves from run to run.

For each model it prints the in-sample energy and time MAPE and the 10-fold CV figures of both splits. A
row-wise split that comes out lower than the grouped one is optimistic: the held-out rows' own repeats were
in the training folds.

    python benchmarks/fit_cv_split.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from archline.fit.regress.api import FitOptions, fit_frame, prepare_frame
from archline.fit.regress.synthetic import GTX580, synthetic_results


def per_configuration(reps: int = 20, seed: int = 3) -> pd.DataFrame:
    base = synthetic_results(GTX580, seed=seed, noise=0.0)
    rng = np.random.default_rng(0)
    f = base.loc[base.index.repeat(reps)].reset_index(drop=True)
    f["time_s"] *= 1 + 0.01 * rng.standard_normal(len(f))
    f["energy_j"] *= 1 + 0.01 * rng.standard_normal(len(f))
    return f


def main() -> None:
    sets = {"per-row": synthetic_results(GTX580, noise=0.01, seed=7, n_repeats=100),
            "per-configuration": per_configuration()}
    print(f"{'data':<18} {'model':<7} {'split':<14} {'rows':>6} {'configs':>7} {'E MAPE':>7} {'CV E':>7} "
          f"{'CV E max':>8} {'T MAPE':>7} {'CV T':>7}")
    for label, raw in sets.items():
        frame = prepare_frame(raw)
        for model in ("basic", "cache", "capped"):
            for cv in ("grouped", "rowwise"):
                r = fit_frame(frame, FitOptions(model=model, cv=cv, folds=10, n_boot=20), platform="gtx580",
                              emulated=True)
                q = r.quality

                def f(k: str, q: dict[str, float] = q) -> str:
                    return f"{q[k]:.3f}" if k in q else "-"

                print(f"{label:<18} {model:<7} {q['cv_split']:<14} {r.n_points:>6} {q['n_configurations']:>7} "
                      f"{f('energy_mape_pct'):>7} {f('cv_mape_pct'):>7} {f('cv_max_pct'):>8} "
                      f"{f('time_mape_pct'):>7} {f('cv_time_mape_pct'):>7}")


if __name__ == "__main__":
    main()
