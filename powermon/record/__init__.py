"""Recording: the window API (Recorder, Meter, NullMeter), samples, the clock map, integration and traces."""
