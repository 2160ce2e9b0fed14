"""Test support shared by the test packages (fakes of sysfs and NVML, emulator helpers); not installed."""
