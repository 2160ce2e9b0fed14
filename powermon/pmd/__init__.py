"""ElmorLabs PMD-USB: ``protocol`` (commands, config struct with its CRC, raw words, the vectorised stream decoder
that keeps frame alignment with no sync word), ``emulator``, ``driver`` (pyserial), ``meter`` and ``protocol_pmd``
(the ``pmd://`` pyserial URL handler)."""
