"""``localhost`` as a platform: this host from the roofline.json its last measured ``bench run --platform
localhost`` kept (format owner: :mod:`archline.formats.ert_roofline`), its rates checked, its figures' runs and
trust named, and a copy from another machine said (docs/formats.md)."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from archline.common.outputs import show
from archline.formats.platforms.ert_file import ENERGY_KEYS as _ENERGY_KEYS  # what a roofline.json cannot give
from archline.formats.platforms.platform import LOCALHOST, Constant, Platform, check_value
from archline.model.errors import PlatformNotFoundError, ProfileFormatError


class HostRooflineMissingError(PlatformNotFoundError):
    """``localhost`` as a platform before any measured ``bench run --platform localhost`` on this host (exit 2)."""


def localhost_platform() -> Platform:
    """This host from the peaks its last measured ``bench run --platform localhost`` kept
    (:func:`archline.formats.ert_roofline.host_roofline_path`): tau_flop = 1/peak GFLOP/s per precision, tau_mem =
    1/DRAM bandwidth, tau_l1..l3 = 1/that level's bandwidth (model.md §1.1, §3); the run summary's figure of each
    (metadata ``figures``) gives the stderr (half its points' relative spread) and, when not trusted, says so in
    the source. Energy constants are absent: no meter
    stands behind a roofline.json. Labelled emulated when the file says so, and named by the run it came from."""
    from archline.formats.ert_roofline import (
        ErtFormatError,
        capped,
        ceiling_key,
        figure_name,
        host_roofline_path,
        read_ert,
    )

    path = host_roofline_path()
    if not path.is_file():
        raise HostRooflineMissingError(f"platform '{LOCALHOST}' has no measured peaks yet ({show(path)} does not "
                                       f"exist): run `archline bench run --platform localhost --quick` first")
    try:
        roof = read_ert(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = str(e) if isinstance(e, ErtFormatError) else f"{show(path)}: not a readable ERT roofline.json ({e})"
        raise ProfileFormatError(f"{why}; run `archline bench run --platform localhost --quick` again to rewrite "
                                 "it") from None
    meta = roof.metadata
    results = meta.get("results") if isinstance(meta.get("results"), list) else []
    run = str(meta.get("run_id") or "") or ", ".join(str(r) for r in results) or "unknown"
    when = str(meta.get("created_utc") or "")
    emulated = bool(meta.get("emulated"))
    label = "emulated" if emulated else "measured"
    figures = meta.get("figures") if isinstance(meta.get("figures"), dict) else {}
    where = f"{show(path)}" + (f" ({when})" if when else "")
    constants: dict[str, Constant] = {}
    runs: dict[str, list[str]] = {}         # run -> the figures it gave
    not_trusted: list[str] = []
    for name, rate in [*roof.gflops.items(), *roof.gbytes.items()]:
        key = ceiling_key(name, name in roof.gflops)[0]    # the owner's names -> the constant of their time
        if key is None:
            continue
        _check_rate(path, name, rate)
        tau = 1.0 / (rate * 1e9)
        fig_name = figure_name(name)
        fig = figures.get(fig_name)
        fig = fig if isinstance(fig, dict) else {}
        fig_run = str(fig.get("run_id") or run)
        runs.setdefault(fig_run, []).append(fig_name)
        rel = fig.get("spread_rel")      # (max - min)/median of the figure's points: half of it, about one s.d.
        se = tau * float(rel) / 2 if isinstance(rel, (int, float)) and math.isfinite(rel) and rel >= 0 else None
        why = f"; NOT TRUSTED: {fig['why_not_trusted']}" if fig.get("why_not_trusted") else ""
        if why:
            not_trusted.append(fig_name)
        constants[key] = Constant(check_value(key, tau, f"{show(path)}: {name}"),
                                  f"{label}: 1/peak of run {fig_run}, {where}{why}", se)
    if not constants:
        raise ProfileFormatError(f"{show(path)}: holds no peak rate (FP64/FP32 GFLOPs, DRAM, L1-L3 GB/s); run "
                                 "`archline bench run --platform localhost --quick` again")
    by_run = (f"run {next(iter(runs))}" if len(runs) == 1
              else "runs " + "; ".join(f"{r} ({', '.join(f)})" for r, f in runs.items()))
    no_meter = (f"no meter: localhost's constants are the peaks of {by_run}, which carry no energy; fit a metered "
                "run's rows (`archline fit`) and give the cost table for energy")
    for key in _ENERGY_KEYS:
        constants[key] = Constant(None, no_meter)
    foreign = _foreign(meta, path)
    host = str(meta.get("hostname") or "") or ("a machine it does not name" if foreign else "this machine")
    cpu = str(meta.get("cpu_model") or "")
    title = f"{host}{' (' + cpu + ')' if cpu else ''}, {label} by {by_run}" + (f" at {when}" if when else "")
    cautions = foreign + _stale_host(meta, path) + ([
        f"NOT TRUSTED (too noisy or too few points): {', '.join(not_trusted)} in {show(path)}; run "
        "`archline bench run --platform localhost --quick` at a quieter moment to replace them"]
        if not_trusted else [])
    if roof.duplicates:
        cautions.append(f"{show(path)}: {capped(list(roof.duplicates))}")
    for line in cautions:
        logging.getLogger("archline.fit").warning(f"archline: warning: localhost: {line}")
    return Platform(name=LOCALHOST, title=title, constants=constants, origin=str(path), kind="measured",
                    emulated=emulated, device_kind="cpu", notes=f"{label} by {by_run}, {where}",
                    raw={"name": LOCALHOST}, not_trusted=not_trusted, cautions=cautions)


#: bounds on the rates localhost's copy may hold (a CPU's; docs/formats.md): above them a value is corrupt
MAX_LOCALHOST_GFLOP_PER_S = 1e6
MAX_LOCALHOST_GB_PER_S = 1e5


def _check_rate(path: Path, name: str, rate: float) -> None:
    """A rate of localhost's copy that is not positive, not finite or above a CPU's bounds: one line naming the
    file, the key and the value (exit 2; the format owner's check), never a figure silently dropped or believed."""
    from archline.formats.ert_roofline import check_rate

    check_rate(show(path), name, rate, name.endswith("GFLOPs"), "run `archline bench run --platform localhost "
               "--quick` again to rewrite it", (MAX_LOCALHOST_GFLOP_PER_S, MAX_LOCALHOST_GB_PER_S))


def _foreign(meta: dict[str, Any], path: Path) -> list[str]:
    """One line when the copy was not written by ``bench run --platform localhost`` (it names no run_id and no
    cpu_model: an ERT file or another machine's export copied there), whose figures are no run of this machine's."""
    if meta.get("run_id") or meta.get("cpu_model"):
        return []
    return [f"{show(path)} was not written by `archline bench run --platform localhost` (it names no run_id and "
            "cpu_model: a copied file?); its figures are not a run of this machine: run `archline bench run "
            "--platform localhost --quick` to replace it"]


def _stale_host(meta: dict[str, Any], path: Path) -> list[str]:
    """One line when the copy names another host or CPU model than this machine's (a shared home, a copied
    state directory), naming both and how to refresh it; none when the copy names neither."""
    import socket

    from archline.formats.ert_roofline import cpu_model

    theirs = (str(meta.get("hostname") or ""), str(meta.get("cpu_model") or ""))
    ours = (socket.gethostname(), cpu_model())
    differ = [f"{what} {t!r} (this machine: {o!r})" for what, t, o in zip(("host", "CPU"), theirs, ours, strict=True)
              if t and t != o]
    if not differ:
        return []
    return [f"{show(path)} was measured on another machine: {', '.join(differ)}; run "
            "`archline bench run --platform localhost --quick` here to replace it"]
