"""A ``[[meters]]`` channel's shunt where its entry names none, and the sense range its full scale is counted from
(powermon/spec.py's ``ChannelSpec``): the PowerMon 2 board's stock shunt and its ADC's sense range, which its
protocol reads from here (one number each, no kind spelled by the schema)."""

SENSE_FULL_SCALE_V = 0.10584        #: shunt volts per 4096 codes
DEFAULT_R_SENSE_OHM = 0.00422       #: stock board shunt (full scale about 25.1 A)
