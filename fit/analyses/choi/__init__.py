"""Choi et al. (S0, IPDPS 2013) and Choi's thesis (S1): analyses beyond the basic fit."""
