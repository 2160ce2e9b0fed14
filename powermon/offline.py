"""Offline work on files: decode a raw PowerMon 2 capture, integrate a samples file, list meters, record."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.decode import decode_bytes, guess_channels
from archline.powermon.powermon2.driver import period_for_rate, samples_from_records, sidecar_path
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, TICK_HZ
from archline.powermon.record.integrate import Integration, integrate_samples
from archline.powermon.record.samples import Samples
from archline.powermon.record.traces import read_samples, write_samples


def decode_file(raw_path: str | Path, out: str | Path | None = None, channels: Sequence[int] | None = None,
                rate_hz: float | None = None, r_sense_ohm: float | None = None) -> tuple[Samples, dict[str, Any]]:
    """Decode a raw capture (using its ``RAW.json`` sidecar when present) and optionally write the samples."""
    raw = Path(raw_path)
    try:
        data = raw.read_bytes()
    except FileNotFoundError:
        raise MeterError(f"capture {raw} does not exist") from None
    except OSError as e:
        raise MeterError(f"cannot read {raw}: {e.strerror}") from None
    if len(data) < 4:
        raise MeterError(f"capture {raw} is empty or truncated ({len(data)} bytes)")
    side: dict[str, Any] = {}
    sp = sidecar_path(raw)
    if sp.exists():
        try:
            side = json.loads(sp.read_text())
        except json.JSONDecodeError:
            raise MeterError(f"sidecar {sp} is not valid JSON") from None
    chans = list(channels) if channels else side.get("channels") or guess_channels(data)
    if rate_hz is not None:
        period = period_for_rate(rate_hz)
    else:
        period = int(side.get("period_ticks", 8))
    r_map = {int(k): float(v) for k, v in (side.get("r_sense_ohm") or {}).items()}
    r_lut = np.full(16, DEFAULT_R_SENSE_OHM if r_sense_ohm is None else r_sense_ohm)
    if r_sense_ohm is None:
        for c, r in r_map.items():
            r_lut[c] = r
    dec = decode_bytes(data, chans, period, side.get("time_set_s", 0) if side else None)
    rec = dec.records()
    if len(rec) == 0:
        raise MeterError(f"no PowerMon 2 samples in {raw} (garbage or truncated capture; "
                         f"{dec.stats.skipped_bytes} bytes skipped)")
    t_dev = rec.event * (period / TICK_HZ)
    clock = side.get("clock") or {}
    emulated = bool(side.get("emulated", False))
    if "offset_s" in clock:
        scale = clock.get("seconds_per_device_s", 1.0) * (1 + clock.get("drift_ppm", 0) * 1e-6)
        t = clock["offset_s"] + t_dev * scale
        clock_name = "host_monotonic"
    else:
        t = t_dev
        clock_name = "device_s"
    s = samples_from_records(rec.event, rec.channel, rec.vcode, rec.icode, r_lut, t,
                             str(side.get("meter", "powermon2")), emulated, clock_name)
    from archline.powermon.record.traces import code_tables

    s.meta["codes"] = {"vcode": rec.vcode, "icode": rec.icode, **code_tables(r_lut)}
    stats = dec.stats.as_dict()
    meta = {"source": str(raw), "channels": chans, "rate_hz": TICK_HZ / period, "stats": stats,
            "overflows": stats["overflows"], "gaps": stats["gaps"], "lost_records": stats["lost_records"]}
    if out is not None:
        write_samples(s, out, meta)
    return s, meta


def integrate_file(path: str | Path, t0_s: float | None = None, t1_s: float | None = None) -> Integration:
    s, meta = read_samples(path)
    stats = meta.get("stats") or {}
    return integrate_samples(s, t0_s, t1_s, overflows=stats.get("overflows", meta.get("overflows")),
                             gaps=stats.get("gaps", meta.get("gaps")))


def list_meters(powercap_root: str | Path | None = None, nvml: Any = None) -> list[dict[str, Any]]:
    """Serial ports, RAPL zones and NVML GPUs on this machine; an absent kind comes with its reason."""
    from archline.powermon.counters import nvml as nvml_mod
    from archline.powermon.counters import rapl

    rows: list[dict[str, Any]] = []
    try:
        from serial.tools import list_ports

        ports = list(list_ports.comports())
    except Exception as e:  # pragma: no cover - platform specific
        ports = []
        rows.append({"kind": "serial", "name": "-", "detail": f"cannot list serial ports: {e}", "available": False})
    for p in ports:
        rows.append({"kind": "serial", "name": p.device, "detail": p.description or "", "available": True})
    if not ports:
        rows.append({"kind": "serial", "name": "-", "available": False,
                     "detail": "no serial ports (PowerMon 2 not plugged in?); `archline meter emulate` makes one"})
    root = rapl.default_root() if powercap_root is None else Path(powercap_root)
    zones = rapl.list_zones(root)
    for z in zones:
        try:
            z.read_uj()
            detail, ok = f"{z.path} range {z.max_energy_range_uj} uJ", True
        except MeterError as e:
            detail, ok = str(e), False
        rows.append({"kind": "rapl", "name": z.name, "detail": detail, "available": ok})
    if not zones:
        rows.append({"kind": "rapl", "name": "-", "available": False,
                     "detail": f"no RAPL zones under {root} (not an Intel/AMD CPU with powercap, or a VM)"})
    try:
        for g in nvml_mod.list_gpus(nvml):
            rows.append({"kind": "nvml", "name": f"gpu{g['index']}", "available": True,
                         "detail": f"{g['name']}, total energy counter: {'yes' if g['total_energy'] else 'no'}, "
                                   f"power scope {g['power_scope']}"})
    except MeterError as e:
        rows.append({"kind": "nvml", "name": "-", "detail": str(e), "available": False})
    return rows


def meter_from_spec(spec: str, channels: Sequence[int] | None = None, rate_hz: float = 128.0,
                    raw_path: str | Path | None = None) -> Any:
    """``powermon2:PORT``, ``emulated[:SPEED]``, ``rapl[:ZONE,...]`` or ``nvml[:INDEX]`` as a recorder meter."""
    from archline.powermon.spec import channels_spec, open_meter

    kind, _, arg = spec.partition(":")
    if kind in ("powermon2", "powermon"):
        if not arg:
            raise MeterError("--meter powermon2 needs a port: powermon2:/dev/ttyUSB0")
        return open_meter(channels_spec("powermon2", "powermon2", channels, port=arg, rate_hz=rate_hz),
                          raw_path=raw_path)
    if kind == "emulated":
        from archline.powermon.powermon2.meter import emulated_powermon

        try:
            speed = float(arg or 1.0)
        except ValueError:
            raise MeterError(f"--meter emulated:SPEED needs a number, got {arg!r}") from None
        return emulated_powermon(channels_spec("powermon2", "powermon2", channels, rate_hz=rate_hz), None,
                                 speed=speed, raw_path=raw_path)
    if kind == "rapl":
        return open_meter(channels_spec("rapl", "rapl", [], zones=[z for z in arg.split(",") if z]))
    if kind == "nvml":
        return open_meter(channels_spec("nvml", "nvml", [], index=int(arg or 0)))
    raise MeterError(f"unknown meter {spec!r} (use powermon2:PORT, emulated[:SPEED], rapl[:ZONES], nvml[:INDEX])")


def record(spec: str, duration_s: float, out: str | Path, channels: Sequence[int] | None = None,
           rate_hz: float = 128.0) -> tuple[Path, dict[str, Any]]:
    """Record one meter for ``duration_s`` into a trace file; a PowerMon 2 also keeps its raw capture."""
    from archline.powermon.record.recorder import Recorder

    out_p = Path(out)
    raw = out_p.with_name(out_p.name.split(".")[0] + ".raw.bin")
    meter = meter_from_spec(spec, channels, rate_hz, raw)
    with Recorder([meter]) as rec:
        rec.begin("record")
        time.sleep(duration_s)
        region = rec.end("record")
    write_samples(meter.samples(), out_p, {"marks": [vars(m) for m in rec.marks], "info": meter.info()})
    return out_p, region.summary()
