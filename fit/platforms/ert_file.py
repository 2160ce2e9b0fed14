"""An ERT roofline.json as a platform: an Empirical Roofline Toolkit user's measured ceilings, read by the format's
owner (:mod:`archline.fit.io.ert_roofline`), as the time constants ``model`` and ``plot`` draw (tau = 1/rate,
model.md §1.1, §3). No meter stands behind a roofline.json: its energy constants are absent, said once."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from archline.common.outputs import show
from archline.fit.io.ert_roofline import ErtFormatError, ErtRoofline, ceiling_constants, check_rate, read_ert
from archline.fit.platforms.profiles import Constant, Platform, _check_value

#: the energy constants a roofline.json cannot give (it holds rates only)
ENERGY_KEYS = ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0")
_FIX = "it is not a roofline a machine has; give the roofline.json ERT wrote, unedited"


def ert_platform(path: str | Path, roof: ErtRoofline | None = None) -> Platform:
    """The platform of the ERT roofline.json at ``path`` (``roof``: already read from it), named by the file's
    stem; every ceiling left out (a lower ceiling of a precision, half precision, a level archline does not model)
    is one warning line naming it and why. A file with no ceiling archline models is refused in one line."""
    where = show(path)
    roof = roof if roof is not None else read_ert(path)
    chosen, left = ceiling_constants(roof)
    if not chosen:
        raise ErtFormatError(f"{where}: no ceiling archline models (left out: {'; '.join(left)})")
    label = "emulated" if roof.emulated else "measured"
    meta = roof.metadata
    host = _hostname(meta.get("HOSTNAME") or meta.get("hostname"))
    version = meta.get("ERT_VERSION")
    by = f"ERT {version}" if version else "ERT"
    constants: dict[str, Constant] = {}
    for key, (name, rate) in chosen.items():
        flops = key.startswith("tau_flop")
        check_rate(where, name, rate, flops, _FIX)
        unit = "GFLOP/s" if flops else "GB/s"
        constants[key] = Constant(_check_value(key, 1.0 / (rate * 1e9), f"{where}: {name}"),
                                  f"{label} by {by}: 1/{name!r} = 1/({rate:g} {unit}), {where}")
    no_meter = (f"no meter: {where} is an ERT roofline.json, which holds rates only; fit a metered run's rows "
                "(`archline fit`) and give the cost table for energy")
    for key in ENERGY_KEYS:
        constants[key] = Constant(None, no_meter)
    spec = [f"{n} {v:g} GFLOP/s" for n, v in roof.spec_gflops.items()] + [
        f"{n} {v:g} GB/s" for n, v in roof.spec_gbytes.items()]
    cautions = [f"{where}: left out: {'; '.join(left)}"] if left else []
    for line in cautions:
        logging.getLogger("archline.fit").warning(f"archline: warning: {line}")
    stem = _name(Path(path))
    gpu = str((meta.get("CONFIG") or {}).get("ERT_GPU", [""])[:1]).lower() if isinstance(meta.get("CONFIG"),
                                                                                              dict) else ""
    return Platform(name=stem, title=f"{host or 'unnamed host'}, {label} by {by} ({where})", constants=constants,
                    origin=str(path), kind="measured", emulated=roof.emulated,
                    device_kind="gpu" if "true" in gpu else "cpu",
                    notes=f"{label} by {by}; nominal (ERT spec): {', '.join(spec) or 'none given'}",
                    raw={"name": stem}, cautions=cautions)


def _hostname(value: Any) -> str:
    """ERT's HOSTNAME: a string, or Python's ``socket.gethostbyaddr`` triple ``[name, aliases, addresses]``."""
    if isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) else ""


def _name(path: Path) -> str:
    """The platform's name: the file's stem, or for ERT's own ``Results.<name>/roofline.json`` the ``<name>``."""
    stem = path.name.removesuffix(".json") or "ert"
    parent = path.resolve().parent.name if stem == "roofline" else ""
    return parent.removeprefix("Results.") if parent.startswith("Results.") and len(parent) > 8 else stem
