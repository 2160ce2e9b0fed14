"""Configuration the runner reads: the bench sections of a platform profile, run options, sweep configs."""
