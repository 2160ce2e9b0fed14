"""Figures: rooflines, arch lines, power lines, the fit report, and turning CLI inputs into them."""
