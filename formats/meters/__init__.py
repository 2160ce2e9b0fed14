"""The files of power meters: samples files and their sidecars, raw byte captures and theirs (powermon reads and
writes them only through these owners; nothing here imports powermon: a meter's decoding is passed in)."""
