"""``archline measure -- CMD``: a command run under a platform's meters (``run``), and its result file
``archline.measure/1`` (``result``, the format's one reader and writer)."""
