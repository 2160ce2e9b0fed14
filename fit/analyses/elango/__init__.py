"""Elango et al. (S2, TACO 2015): operational-intensity upper bounds and the architecture design space."""
