"""Cumulative energy counters: RAPL (powercap sysfs) and NVML, polled on a thread and read at window edges."""
