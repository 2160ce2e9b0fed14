"""What every archline figure shares so that no label sits on data or on another label.

* Labels that used to be written beside lines and points (balance points, pi0, TDP) go into legends, and legends
  go outside the axes (``legend_outside``): they can never cover a data point.
* Log-2 intensity axes get at most a handful of ticks, labelled ``1/64``, ``1/2``, ``1``, ``64``, ``4K``
  (``log2_axis``): "0.015625" beside "0.0625" ran together.
* Titles are wrapped to the figure's width and carry the notes of any fallback (``title_with_notes``), which the
  command line also prints on stderr.
* ``save_figure`` writes through a temporary name and renames, so a crash never leaves a half-written figure;
  ``check_figure_format`` refuses a format that cannot be written here (``.pgf`` without TeX) before any drawing.
* ``overlaps`` lists what still collides (text with text, text or legend with a plotted point, text outside the
  canvas); the figure tests call it on every figure kind.

matplotlib is imported inside the functions.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FONT_PT = 11.0


def pow2_label(v: float) -> str:
    """2^k as people read it: 1/64, 1/2, 1, 64, 4K, 1M."""
    if v <= 0 or not math.isfinite(v):
        return ""
    if v < 1:
        inv = 1 / v
        return f"1/{inv:.0f}" if abs(inv - round(inv)) < 1e-6 * inv else f"{v:.2g}"
    for div, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if v >= div and (v / div).is_integer():
            return f"{v / div:.0f}{suffix}"
    return f"{v:g}"


def log2_axis(ax: Any, which: str = "x", max_ticks: int = 8) -> None:
    """Base-2 log scale on ``ax``'s x or y axis with at most ``max_ticks`` labelled powers of two (every 2nd,
    4th... when the range is wide), no minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{which}scale")("log", base=2)
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(LogLocator(base=2, numticks=max_ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: pow2_label(v)))
    axis.set_minor_formatter(NullFormatter())


def log10_axis(ax: Any, which: str = "x") -> None:
    """Decimal log scale labelled 1, 2, 5, 10, 20, 50... in plain numbers (no 6×10^2), no minor labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def legend_outside(ax: Any, *, ncol: int = 1, fontsize: float = 7.5, where: str = "below") -> Any:
    """The axes' legend below (or right of) the axes, never over the data; None when nothing is labelled."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    seen: dict[str, Any] = {}
    for h, lab in zip(handles, labels, strict=True):
        seen.setdefault(lab, h)
    if where == "right":
        return ax.legend(list(seen.values()), list(seen), loc="upper left", bbox_to_anchor=(1.02, 1.0),
                         fontsize=fontsize, frameon=False, borderaxespad=0.0)
    # anchor below whatever hangs under the axes (tick labels, rotated or not, and the x label), in inches so
    # that a later layout pass that resizes the axes keeps the gap
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    drop_in = (ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0) / fig.dpi + 0.06
    trans = ax.transAxes + ScaledTranslation(0, -drop_in, fig.dpi_scale_trans)
    return ax.legend(list(seen.values()), list(seen), loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=trans, ncol=ncol, fontsize=fontsize, frameon=False, borderaxespad=0.0)


def title_with_notes(fig: Any, title: str, notes: Sequence[str] = (), fontsize: float = FONT_PT) -> Any:
    """Suptitle wrapped to the figure's width, each note on its own wrapped line after it."""
    width_in = fig.get_size_inches()[0]
    chars = max(40, int(0.92 * width_in * 72 / (0.62 * fontsize)))
    lines = textwrap.wrap(title, chars) or [""]
    for n in notes:
        lines += textwrap.wrap(f"note: {n}", chars)
    return fig.suptitle("\n".join(lines), fontsize=fontsize)


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported here: heavy, and optional for the library)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_figure_format(out_path: str | Path) -> str:
    """The format matplotlib writes ``out_path`` in, or an ArchlineFitError (one line, before anything is drawn
    or written): a suffix it cannot write here, or ``.pgf`` without the TeX its pgf backend runs."""
    import shutil

    import matplotlib

    from archline.model.errors import ArchlineFitError

    p = Path(out_path)
    fmt = p.suffix.lstrip(".").lower() or "png"
    from matplotlib.backend_bases import FigureCanvasBase

    known = FigureCanvasBase.get_supported_filetypes()
    if fmt not in known:
        raise ArchlineFitError(f"cannot write figure {p}: matplotlib cannot write .{fmt} here "
                               f"(it writes {', '.join(sorted(known))})")
    if fmt == "pgf":
        tex = str(matplotlib.rcParams["pgf.texsystem"])
        if shutil.which(tex) is None:
            raise ArchlineFitError(f"cannot write figure {p}: a .pgf figure needs {tex} (TeX), which is not on "
                                   "PATH; install TeX or write .pdf or .svg")
    return fmt


def draw_to(fig: Any, path: str | Path, fmt: str, dpi: int = 130) -> None:
    """Draw ``fig`` into ``path`` (a temporary file or a stream) in ``fmt`` and close it; matplotlib's refusal of
    the format is an ArchlineFitError."""
    import io

    from archline.common.outputs import is_stream
    from archline.model.errors import ArchlineFitError

    plt = pyplot()
    try:
        if is_stream(path):   # a pipe or FIFO cannot seek, which some formats need: draw in memory, then write
            buf = io.BytesIO()
            fig.savefig(buf, dpi=dpi, format=fmt)
            with open(path, "ab") as f:
                f.write(buf.getvalue())
        else:
            fig.savefig(path, dpi=dpi, format=fmt)
    except ValueError as e:   # matplotlib: unknown format
        raise ArchlineFitError(f"cannot write figure {path}: {e}") from None
    finally:                  # an OSError (full disk, unwritable path) reaches the CLI as one line, exit 7
        plt.close(fig)


def save_figure(fig: Any, out_path: str | Path, dpi: int = 130) -> Path:
    """Save atomically (temporary name in the same directory, then rename) and close the figure. An unknown
    extension, or .pgf without TeX, is an ArchlineFitError before anything is written; an unwritable path or a
    full disk an OSError naming ``out_path`` (exit 7); nothing is left under either name."""
    from archline.common.atomic import atomic_path

    out_path = Path(out_path)
    try:
        fmt = check_figure_format(out_path)
    except Exception:
        pyplot().close(fig)
        raise
    with atomic_path(out_path) as tmp:
        draw_to(fig, tmp, fmt, dpi)
    return out_path


# --- the check ---------------------------------------------------------------------------------------------------

def _texts(fig: Any) -> list[tuple[str, Any]]:
    """(description, Text) of every visible, non-empty text the figure draws."""
    out: list[tuple[str, Any]] = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle))
    out += [("figure text", t) for t in fig.texts]
    for i, ax in enumerate(fig.axes):
        out += [(f"axes {i} title", t) for t in (ax.title, ax._left_title, ax._right_title)]
        out += [(f"axes {i} {a} label", getattr(ax, f"{a}axis").label) for a in "xy"]
        out += [(f"axes {i} text", t) for t in ax.texts]
        for a in "xy":
            axis = getattr(ax, f"{a}axis")
            lo, hi = sorted(axis.get_view_interval())
            ticks = axis.get_major_ticks() + axis.get_minor_ticks()
            for tick in ticks:
                loc = tick.get_loc()
                if loc is None or not lo - 1e-9 * abs(hi - lo) <= loc <= hi + 1e-9 * abs(hi - lo):
                    continue
                out += [(f"axes {i} {a} tick", t) for t in (tick.label1, tick.label2) if t.get_visible()]
        leg = ax.get_legend()
        if leg is not None:
            out += [(f"axes {i} legend", t) for t in leg.get_texts()]
    for leg in fig.legends:
        out += [("figure legend", t) for t in leg.get_texts()]
    seen: set[int] = set()
    uniq = []
    for d, t in out:    # the suptitle is also one of fig.texts
        if id(t) not in seen and t.get_visible() and t.get_text().strip():
            seen.add(id(t))
            uniq.append((d, t))
    return uniq


def _points(fig: Any) -> list[tuple[float, float, float]]:
    """(x, y, radius) in display pixels of every drawn marker inside its axes."""
    import numpy as np
    from matplotlib.collections import PathCollection

    pts: list[tuple[float, float, float]] = []
    for ax in fig.axes:
        box = ax.get_window_extent()
        for line in ax.get_lines():
            if not line.get_visible() or line.get_marker() in (None, "", "None", " ", "none"):
                continue
            xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
            r = line.get_markersize() * fig.dpi / 72 / 2
            pts += [(x, y, r) for x, y in xy if box.contains(x, y)]
        for coll in ax.collections:
            if not isinstance(coll, PathCollection) or not coll.get_visible():
                continue
            xy = coll.get_offset_transform().transform(coll.get_offsets())
            sizes = coll.get_sizes()
            r = math.sqrt(float(sizes.max()) if len(sizes) else 36.0) * fig.dpi / 72 / 2
            pts += [(x, y, r) for x, y in xy if np.isfinite(x) and np.isfinite(y) and box.contains(x, y)]
    return pts


def _rect(t: Any, renderer: Any) -> tuple[Any, Any]:
    """(window bbox, 4 corners of the text's own rotated rectangle) in pixels: a rotated tick label's axis-aligned
    box is much larger than its glyphs."""
    import numpy as np

    box = t.get_window_extent(renderer)
    angle = t.get_rotation()
    if angle % 180 == 0:
        return box, np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    t.set_rotation(0)
    flat = t.get_window_extent(renderer)
    t.set_rotation(angle)
    w, h, a = flat.width / 2, flat.height / 2, np.radians(angle)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ rot.T
    return box, corners + np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])


def _separated(p: Any, q: Any, gap: float) -> bool:
    """Separating-axis test of two convex quadrilaterals, ``gap`` pixels apart counting as touching."""
    import numpy as np

    for poly in (p, q):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]])
            norm = float(np.hypot(*n))
            if norm == 0:
                continue
            n = n / norm
            a, b = p @ n, q @ n
            if a.max() + gap <= b.min() or b.max() + gap <= a.min():
                return True
    return False


def overlaps(fig: Any, pad_px: float = 1.0, gap_px: float = 2.0) -> list[str]:
    """Every collision in a drawn figure: two texts closer than ``gap_px`` (so tick labels that touch count; a
    rotated text is its rotated rectangle), a text or legend box over a plotted point, a text running off the
    canvas. Empty when the figure is clean."""
    import numpy as np

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [(d, t, *_rect(t, renderer)) for d, t in _texts(fig)]
    found: list[str] = []
    canvas = fig.bbox
    for d, t, b, _ in texts:
        if b.x0 < canvas.x0 - pad_px or b.y0 < canvas.y0 - pad_px or b.x1 > canvas.x1 + pad_px \
                or b.y1 > canvas.y1 + pad_px:
            found.append(f"{d} {t.get_text()!r} runs off the figure")
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            (d1, t1, b1, c1), (d2, t2, b2, c2) = texts[i], texts[j]
            if b1.padded(gap_px / 2).overlaps(b2.padded(gap_px / 2)) and not _separated(c1, c2, gap_px):
                found.append(f"{d1} {t1.get_text()!r} overlaps {d2} {t2.get_text()!r}")
    boxes = [(d, t.get_text(), c) for d, t, _, c in texts]
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None:
            b = leg.get_window_extent(renderer)
            boxes.append(("legend", "", np.array([[b.x0, b.y0], [b.x1, b.y0], [b.x1, b.y1], [b.x0, b.y1]])))
    for x, y, r in _points(fig):
        dot = np.array([[x - r, y - r], [x + r, y - r], [x + r, y + r], [x - r, y + r]])
        for d, txt, c in boxes:
            if not _separated(c, dot, 0.0):
                found.append(f"{d} {txt!r} covers a plotted point at ({x:.0f}, {y:.0f}) px")
    return found
