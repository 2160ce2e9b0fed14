"""Figures of `archline ipp`: performance and perf/W against active SMs (S3 Fig. 13, 15), the per-unit power
breakdown (S3 Fig. 3) and the temperature rise (S3 Fig. 11). Kernels whose curves coincide share one line
and one legend entry, so no line hides another."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.fit.analyses.hongkim.report import KernelPower, Sweep, breakdown_w
from archline.fit.figure_layout import pyplot, save_figure

_STYLES = ["-", "--", "-.", ":"]
_MARKERS = ["o", "^", "s", "D", "v", "x"]


def _groups(sweeps: Sequence[Sweep], which: str) -> list[tuple[str, Sweep]]:
    """Kernels with the same curves (to 1e-9) collapse into one labelled group."""
    out: list[tuple[list[str], Sweep, tuple[float, ...]]] = []
    for s in sweeps:
        key = tuple(round(v, 9) for v in [*s.perf, *s.perf_per_watt(which)])
        for names, _, k in out:
            if k == key:
                names.append(s.kernel)
                break
        else:
            out.append(([s.kernel], s, key))
    return [(", ".join(n), s) for n, s, _ in out]


def plot_sweeps(sweeps: Sequence[Sweep], optimal: dict[str, int], out_path: Path, gpu_name: str,
                which: str = "runtime") -> Path:
    """Left: performance against active SMs; right: perf/W (eq.28), both normalised to all SMs when the kernel
    file gives only S3 Table 4's MWP/CWP. IPP's optimal SM count (eq.34) is marked on each curve."""
    plt = pyplot()
    fig, (ax_p, ax_w) = plt.subplots(1, 2, figsize=(11, 4.4))
    groups = _groups(sweeps, which)
    rel = not all(s.absolute for s in sweeps)
    for k, (label, s) in enumerate(groups):
        style = _STYLES[k % len(_STYLES)]
        colour = f"C{k % 10}"
        scale = 1e9 if s.time_unit == "s" else 1.0
        perf = [p / s.perf[-1] for p in s.perf] if rel else [p / scale for p in s.perf]
        ppw = s.perf_per_watt(which)
        ppw = [p / ppw[-1] for p in ppw] if rel else [p / scale for p in ppw]
        # markers on staggered SM counts: curves that nearly coincide (Nmat, Dotp...) stay distinguishable
        mk = dict(marker=_MARKERS[k % len(_MARKERS)], markevery=(k % 3, 3), markersize=4, markerfacecolor="none")
        ax_p.plot(s.active_sms, perf, style, color=colour, label=label, **mk)
        ax_w.plot(s.active_sms, ppw, style, color=colour, label=label, **mk)
        n_opt = optimal.get(s.kernel)
        if n_opt is not None:
            i = s.active_sms.index(n_opt)
            ax_w.plot([n_opt], [ppw[i]], "o", color=colour, markersize=6)
    unit = "G warp instr/s" if sweeps[0].time_unit == "s" else "warp instr/cycle"
    ax_p.set_ylabel("performance (relative to all SMs)" if rel else f"performance ({unit})")
    ax_w.set_ylabel(f"perf/W, {which} power" + (" (relative to all SMs)" if rel else f" ({unit} per W)"))
    for ax in (ax_p, ax_w):
        ax.set_xlabel("active SMs")
        ax.grid(True, alpha=0.3)
        ax.set_xlim(0, sweeps[0].active_sms[-1] + 1)
        ax.set_ylim(bottom=0)
    ax_w.plot([], [], "o", color="0.3", label="IPP optimal SMs (eq.34)")
    ax_p.legend(fontsize=8, loc="lower right")
    ax_w.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"IPP on {gpu_name}: performance and perf/W against active SMs (Hong & Kim 2010, Fig. 13, 15)",
                 fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out_path)


def plot_power(powers: Sequence[KernelPower], out_path: Path, gpu_name: str) -> Path:
    """Stacked bars of GPU power by unit (S3 Fig. 3): idle, Const_SM, the other SM units, memory."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.5, 1.0 * len(powers) + 4), 4.4))
    per_kernel = [breakdown_w(kp.power) for kp in powers]
    units = list(dict.fromkeys(u for v in per_kernel for u in v))
    parts = {u: [v.get(u, 0.0) for v in per_kernel] for u in units}
    names = [kp.kernel for kp in powers]
    bottom = [0.0] * len(powers)
    cmap = plt.get_cmap("tab20")
    drawn = [(u, vals) for u, vals in parts.items() if any(vals)]
    for k, (u, vals) in enumerate(drawn):
        ax.bar(names, vals, bottom=bottom, label=u, color=cmap(k % 20), edgecolor="white", linewidth=0.5)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    for x, total in enumerate(bottom):
        ax.annotate(f"{total:.2f} W", (x, total), textcoords="offset points", xytext=(0, 3), ha="center",
                    fontsize=8)
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.set_ylabel("GPU power (W)")
    ax.set_title(f"IPP power breakdown on {gpu_name} (Hong & Kim 2010, eq.5-16)", fontsize=11, pad=12)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # as stacked
    fig.tight_layout()
    return save_figure(fig, out_path)


def plot_temperature(temps: Sequence[dict[str, Any]], out_path: Path, gpu_name: str) -> Path:
    """Chip temperature and the static power it adds over time from a cold start (S3 eq.17, 22; Fig. 11)."""
    plt = pyplot()
    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(10, 4.2))
    for k, t in enumerate(temps):
        xs = [r["time_s"] for r in t["over_time"]]
        ax_t.plot(xs, [r["temperature_degc"] for r in t["over_time"]], _STYLES[k % 4], label=t["kernel"])
        ax_p.plot(xs, [r["static_power_increase_w"] for r in t["over_time"]], _STYLES[k % 4], label=t["kernel"])
    ax_t.set_ylabel("chip temperature (°C)")
    ax_p.set_ylabel("static power increase (W)")
    for ax in (ax_t, ax_p):
        ax.set_xscale("log")
        ax.set_xlabel("time since a cold start (s, log scale)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"IPP temperature model on {gpu_name} (Hong & Kim 2010, eq.17-23; eq.19 read as a rise)", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out_path)
