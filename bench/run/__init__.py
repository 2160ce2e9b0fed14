"""The one measurement path: options -> session -> runner (powermon windows) -> rows -> results file; sweeps."""
