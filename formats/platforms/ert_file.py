"""An ERT roofline.json as a platform: an Empirical Roofline Toolkit user's measured ceilings, read by the format's
owner (:mod:`archline.formats.ert_roofline`), as the time constants ``model`` and ``plot`` draw (tau = 1/rate,
model.md §1.1, §3). No meter stands behind a roofline.json: its energy constants are absent, said once."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from archline.common.outputs import show
from archline.formats.ert_roofline import (
    ErtFormatError,
    ErtRoofline,
    capped,
    ceiling_constants,
    check_rate,
    rate_problem,
    read_ert,
)
from archline.formats.platforms.platform import Constant, Platform, check_value

#: the energy constants a roofline.json cannot give (it holds rates only)
ENERGY_KEYS = ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0")
_FIX = "it is not a roofline a machine has; give the roofline.json ERT wrote, unedited"


def ert_platform(path: str | Path, roof: ErtRoofline | None = None) -> Platform:
    """The platform of the ERT roofline.json at ``path`` (``roof``: already read from it), named by where ERT puts
    it (:func:`_name`); every ceiling left out (a lower ceiling of a precision, half precision, a level archline
    does not model, a name with another unit), a name given twice, a cache level slower than a level outside it, a
    figure archline's export marked NOT TRUSTED and a nominal (spec) peak no machine has is one warning line. A file
    with no ceiling archline models is refused in one line."""
    where = show(path)
    roof = roof if roof is not None else read_ert(path)
    chosen, left = ceiling_constants(roof)
    if not chosen:
        raise ErtFormatError(f"{where}: no ceiling archline models (left out: {capped(left)})")
    label = "emulated" if roof.emulated else "measured"
    meta = roof.metadata
    host = _text(_hostname(meta.get("HOSTNAME") or meta.get("hostname")))
    version = meta.get("ERT_VERSION")
    version = _text(str(version)) if isinstance(version, (str, int, float)) and not isinstance(version, bool) else ""
    # archline's own export (bench export-ert, bench run) names its results and figures; ERT's names neither
    ours = isinstance(meta.get("figures"), dict) and "results" in meta
    by = "archline" if ours else (f"ERT {version}" if version else "ERT")
    constants: dict[str, Constant] = {}
    for key, (name, rate) in chosen.items():
        flops = key.startswith("tau_flop")
        check_rate(where, name, rate, flops, _FIX)
        unit = "GFLOP/s" if flops else "GB/s"
        constants[key] = Constant(check_value(key, 1.0 / (rate * 1e9), f"{where}: {name}"),
                                  f"{label} by {by}: 1/{name!r} = 1/({rate:g} {unit}), {where}")
    for prec, other, ert in (("sp", "dp", "FP32"), ("dp", "sp", "FP64")):    # a precision the file lacks: why
        if f"tau_flop_{prec}" not in chosen:
            use = f"give --precision {other}" if f"tau_flop_{other}" in chosen else "it holds no flop ceiling"
            constants[f"tau_flop_{prec}"] = Constant(None, f"{where} holds no {ert} GFLOPs ceiling; {use}")
    no_meter = (f"no meter: {where} is an ERT roofline.json, which holds rates only; fit a metered run's rows "
                "(`archline fit`) and give the cost table for energy")
    for key in ENERGY_KEYS:
        constants[key] = Constant(None, no_meter)
    spec, bad_spec = _spec(roof)
    cautions = [f"{where}: left out: {capped(left)}"] if left else []
    if roof.duplicates:
        cautions.append(f"{where}: {capped(list(roof.duplicates))}")
    cautions += [f"{where}: {line}" for line in _hierarchy(chosen)]
    not_trusted = _not_trusted(meta)
    if not_trusted:
        cautions.append(f"{where}: NOT TRUSTED (too noisy, too few points or non-physical): "
                        f"{capped(not_trusted)}; its figures are as archline's export marked them")
    if bad_spec:
        cautions.append(f"{where}: spec (nominal peaks) left out, no machine's: {capped(bad_spec)}")
    for line in cautions:
        logging.getLogger("archline.fit").warning(f"archline: warning: {line}")
    stem = _name(Path(path), host)
    gpu = str((meta.get("CONFIG") or {}).get("ERT_GPU", [""])[:1]).lower() if isinstance(meta.get("CONFIG"),
                                                                                              dict) else ""
    return Platform(name=stem, title=f"{host or 'unnamed host'}, {label} by {by} ({_text(where)})",
                    constants=constants, origin=str(path), kind="measured", emulated=roof.emulated,
                    device_kind="gpu" if "true" in gpu else "cpu",
                    notes=f"{label} by {by}; nominal (ERT spec): {', '.join(spec) or 'none given'}",
                    raw={"name": stem}, not_trusted=not_trusted, cautions=cautions)


def _spec(roof: ErtRoofline) -> tuple[list[str], list[str]]:
    """The nominal peaks as text, and those no machine has (NaN, negative, zero, above any machine's), left out."""
    good: list[str] = []
    bad: list[str] = []
    for entries, flops, unit in ((roof.spec_gflops, True, "GFLOP/s"), (roof.spec_gbytes, False, "GB/s")):
        for n, v in entries.items():
            (good if rate_problem(v, flops) is None else bad).append(f"{n} {v:g} {unit}")
    return good, bad


def _hierarchy(chosen: dict[str, tuple[str, float]]) -> list[str]:
    """One line per cache level slower than a level outside it (L1 < L2, L2 < DRAM): no cache is, so the file's
    figures are suspect (a noisy run, swapped names)."""
    order = [k for k in ("tau_l1", "tau_l2", "tau_l3", "tau_mem") if k in chosen]
    out = []
    for i, inner in enumerate(order[:-1]):
        slower = [chosen[o] for o in order[i + 1:] if chosen[o][1] > chosen[inner][1]]
        if slower:
            name, rate = chosen[inner]
            outs = ", ".join(f"{n} {r:g} GB/s" for n, r in slower)
            out.append(f"{name} ({rate:g} GB/s) is slower than {outs}, which no cache is: non-physical (a noisy run "
                       "or swapped names); its time constants are suspect")
    return out


def _not_trusted(meta: dict[str, Any]) -> list[str]:
    """The figures archline's export marked NOT TRUSTED, with their reasons (``metadata.figures``)."""
    figs = meta.get("figures")
    if not isinstance(figs, dict):
        return []
    out = []
    for name, fig in figs.items():
        if isinstance(fig, dict) and fig.get("trusted") is False:
            out.append(f"{_text(str(name))} ({_text(str(fig.get('why_not_trusted') or 'no reason given'))})")
    return out


def _text(value: str) -> str:
    """A name or title from a file, on one line: control characters (a newline in HOSTNAME) become spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in value).split())


def _hostname(value: Any) -> str:
    """ERT's HOSTNAME: a string, or Python's ``socket.gethostbyaddr`` triple ``[name, aliases, addresses]``."""
    if isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) else ""


def _name(path: Path, host: str = "") -> str:
    """The platform's name: the file's stem; for ERT's own ``Results.<name>/roofline.json`` the ``<name>``, and for
    ERT 1.1.0's ``Results.<name>/Run.NNN/roofline.json`` ``<name>/Run.NNN`` (two runs are two names). A pipe
    (``<(...)``: /dev/fd/63) is named by its host, not "63". A name a shipped or user profile has gets " (ERT)", so
    neither is taken for the other."""
    from archline.formats.platforms.platform import find_profile

    stem = path.name.removesuffix(".json") or "ert"
    parents = path.resolve().parents if stem == "roofline" else ()
    name = stem
    if len(parents) >= 1 and parents[0].name.startswith("Results.") and len(parents[0].name) > 8:
        name = parents[0].name.removeprefix("Results.")
    elif (len(parents) >= 2 and re.fullmatch(r"Run\.\d+", parents[0].name)
          and parents[1].name.startswith("Results.") and len(parents[1].name) > 8):
        name = f"{parents[1].name.removeprefix('Results.')}/{parents[0].name}"
    elif str(path).startswith(("/dev/", "/proc/")):
        name = f"ERT {host}" if host else "ERT roofline"
    name = _text(name) or "ert"
    return f"{name} (ERT)" if find_profile(name) is not None else name
