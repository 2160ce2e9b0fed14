"""Whether a process another run left its files under is gone (a killed run's temporary files and FIFOs are
removed by the next one only then)."""

from __future__ import annotations

import os


def process_gone(pid: int) -> bool:
    """True when no process ``pid`` exists; False while one does (another user's too: not ours to clean up) or when
    that cannot be known."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
