"""What the byte-stream meters after the PowerMon 2 share (PowerSensor3, PMD-USB): an emulator core with byte
faults served on the emulator's pty, a pyserial URL handler base, a reader-thread driver and the recorder meter."""
