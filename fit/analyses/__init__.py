"""The papers' analyses beyond the basic fit, one sub-package per paper, so a reader sees which paper each serves:

* ``choi``: Choi et al. (S0, IPDPS 2013) and the thesis (S1): Keckler comparison, instruction-mix peak,
  iso-power, power-cap throttling, time-energy trade-offs, counter-recipe prediction, DVFS tuning, comparisons.
* ``elango``: Elango et al. (S2): operational-intensity upper bounds and the architecture design space.
* ``hongkim``: Hong & Kim (S3): the integrated power and performance (IPP) model, its files, timing, reports
  and figures, and the fit of its per-unit maximum powers.
* ``s4``: the power and energy-efficiency roofline for GPUs (S4).

``data/`` holds the shipped inputs of all of them (the papers' tables as CSV and TOML)."""
