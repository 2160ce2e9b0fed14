"""On-board sensors measured against a reference meter: ``meter probe`` (update period, averaging window, lag,
quantum; :mod:`.probe`, written as a sensor profile by :mod:`.profile`) and ``meter calibrate`` (gain, offset and
lag; :mod:`.calibration`), both run by :mod:`.run`; :mod:`.emulated` is an emulated sensor for tests and demos."""
