"""``meter record --meter KIND[:ADDRESS]`` of a kind that declares no ``record`` of its own: the kind opened as a
profile's ``[[meters]]`` entry would be (the registry, powermon/kinds.py, names it; powermon/spec.py opens it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.common.inputs import validate
from archline.powermon import kinds
from archline.powermon.errors import MeterError
from archline.powermon.spec import MeterSpec, open_meter


def default_record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
                   raw_path: Path | None) -> Any:
    """``meter record --meter KIND[:ADDRESS]`` of a kind that gives no ``record`` of its own: the entry
    ``{name = KIND, kind = KIND, url = ADDRESS}`` opened as a profile's would be. It has no channel numbers or rate
    of ours to set: --channels and --rate are refused, never ignored."""
    k = kinds.get(word)
    given = [o for o, v in (("--channels", channels), ("--rate", rate_hz)) if v is not None]
    if given:
        meter = k.title if k.title.lower().endswith("meter") else f"{k.title} meter"    # "a Toy meter meter": no
        raise MeterError(f"--meter {word}: a {meter} is recorded as its profile entry would be, so "
                         f"{' and '.join(given)} cannot apply; leave {'them' if len(given) > 1 else 'it'} out")
    spec = validate(MeterSpec, {"name": k.name, "kind": k.name, **({"url": arg} if arg else {})},
                    f"--meter {word}", error=MeterError)
    return open_meter(spec)
