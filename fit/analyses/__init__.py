"""The other papers' analyses: Elango bounds and design space, Hong & Kim IPP, iso-power,
application prediction, DVFS tuning, S4 power rooflines."""
