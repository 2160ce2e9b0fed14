"""PowerSensor3 (open hardware, ISPASS 2025): ``protocol`` (frames, config records, vectorised decoder),
``emulator`` (the device core), ``driver`` (pyserial), ``meter`` (the recorder meter, with in-band markers) and
``protocol_powersensor3`` (the ``powersensor3://`` pyserial URL handler)."""
