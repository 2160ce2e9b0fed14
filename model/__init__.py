"""The energy-roofline model itself: time, energy, power, caps, DVFS, hierarchy (pure functions)."""
