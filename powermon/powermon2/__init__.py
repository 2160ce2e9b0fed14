"""PowerMon 2: the serial protocol, the stream decoder, the driver and the recorder meter built on them."""
