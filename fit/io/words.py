"""The text values ``archline.results/1`` defines (docs/formats.md, :mod:`archline.formats.schema`), checked by the
results reader once per distinct value of a batch: another precision or level is refused (a row would be counted
as if it meant something), another kernel is warned of once (the counts, not the name, enter the model)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from archline.fit.io.batches import rows_with
from archline.fit.io.configs import Source
from archline.formats import schema

#: column -> (its known values, whether another value is refused rather than warned of)
WORDS: dict[str, tuple[tuple[str, ...], bool]] = {"precision": (schema.PRECISIONS, True),
                                                  "level": (schema.LEVELS, True),
                                                  "kernel": (schema.KERNELS, False)}


def check_words(codes: dict[str, tuple[np.ndarray, list[str | None]]], src: Source, pos: np.ndarray,
                warned: set[tuple[str, str]] | None, warn: Callable[[str], None], error: type[Exception]) -> None:
    """Refuse (``error``, naming the first row) an unknown precision or level; warn through ``warn`` of an unknown
    kernel, once per value (``warned`` remembers them over a read; None: no warning)."""
    for c, (known, refuse) in WORDS.items():
        if c not in codes:
            continue
        cc, cv = codes[c]
        odd = [v for v in cv if v is not None and v.strip().lower() not in known]
        if not odd:
            continue
        allowed = ", ".join(known) + (" or empty" if c != "kernel" else "")
        if refuse:
            bad = rows_with(cc, cv, lambda v, o=odd: v in o)      # type: ignore[misc]
            i = int(np.argmax(bad))
            raise error(f"{src.where(int(pos[i] if bad.size > 1 else pos[0]))}: {c} {odd[0].strip()!r} is not an "
                        f"{schema.SCHEMA} {c} (known: {allowed}); fix or drop the row")
        for v in odd:
            if warned is not None and (c, v.strip()) not in warned:
                warned.add((c, v.strip()))
                warn(f"{src.name}: {c} {v.strip()!r} is not one archline knows ({allowed}); its rows are fitted by "
                     f"their counts like any other")
