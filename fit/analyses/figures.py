"""Writing a matplotlib figure the way every analysis figure is written: Agg backend, atomic rename.

The plots under ``fit/plots`` write the same way inline; analyses share this one function instead of copying it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archline.fit.errors import ArchlineFitError


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported here: heavy, and optional for the library)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_path: str | Path, dpi: int = 120) -> Path:
    """Save to a temporary name beside ``out_path`` and rename: never a half-written figure under the final name."""
    plt = pyplot()
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{out.suffix}")
    try:
        fig.savefig(tmp, dpi=dpi)
        tmp.replace(out)
    except ValueError as e:   # an unknown extension: a user mistake
        raise ArchlineFitError(f"cannot write figure {out}: {e}") from None
    except OSError as e:
        raise ArchlineFitError(f"cannot write figure {out}: {e.strerror}") from None
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return out
