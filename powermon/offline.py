"""Offline work on files: decode a raw PowerMon 2 capture, integrate a samples file, list meters, record."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.decode import StreamDecoder, guess_channels
from archline.powermon.powermon2.driver import period_for_rate, sidecar_path
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, TICK_HZ
from archline.powermon.record.integrate import Integration, integrate_samples
from archline.powermon.record.samples import Samples
from archline.powermon.record.traces import read_samples, write_samples

if TYPE_CHECKING:  # pragma: no cover
    from archline.powermon.record.samples_csv import CsvStream, RowFormat


#: Raw bytes fed to the decoder at a time when writing as it decodes (~260 k records, half a minute of 8 channels
#: at 1024 Hz): small enough that the writer starts early, big enough that per-block work is amortised.
FEED_BYTES = 1 << 20


def _prepare(raw_path: str | Path, channels: Sequence[int] | None, rate_hz: float | None,
             r_sense_ohm: float | None) -> tuple[bytes, list[int], int, dict[str, Any], RowFormat]:
    """The capture's bytes, channels, period and sidecar, and how its records become rows."""
    from archline.powermon.record.samples_csv import RowFormat

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
    period = period_for_rate(rate_hz) if rate_hz is not None else int(side.get("period_ticks", 8))
    r_map = {int(k): float(v) for k, v in (side.get("r_sense_ohm") or {}).items()}
    r_lut = np.full(16, DEFAULT_R_SENSE_OHM if r_sense_ohm is None else r_sense_ohm)
    if r_sense_ohm is None:
        for c, r in r_map.items():
            r_lut[c] = r
    dt = period / TICK_HZ
    clock = side.get("clock") or {}
    if "offset_s" in clock:
        offset = float(clock["offset_s"])
        scale = clock.get("seconds_per_device_s", 1.0) * (1 + clock.get("drift_ppm", 0) * 1e-6)

        def t_of_event(ev: np.ndarray) -> np.ndarray:
            return offset + (ev * dt) * scale
        clock_name = "host_monotonic"
    else:
        def t_of_event(ev: np.ndarray) -> np.ndarray:
            return ev * dt
        clock_name = "device_s"
    fmt = RowFormat(r_lut, t_of_event, str(side.get("meter", "powermon2")), bool(side.get("emulated", False)),
                    clock_name)
    return data, chans, period, side, fmt


def _feed(dec: StreamDecoder, data: bytes, stream: CsvStream | None) -> None:
    """All of ``data`` through the decoder; with a stream, a block of finished seconds to it after each
    FEED_BYTES, so the rows are formatted and written while decoding goes on."""
    if stream is None:
        dec.feed(data)
        dec.finish()
        return
    done = 0
    view = memoryview(data)
    for i in range(0, len(data), FEED_BYTES):
        dec.feed(view[i:i + FEED_BYTES])
        stream.submit(dec.final_parts(done))
        done = len(dec.final_parts())
    dec.finish()
    stream.submit(dec.final_parts(done))


def _decode(raw_path: str | Path, out: str | Path | None, channels: Sequence[int] | None, rate_hz: float | None,
            r_sense_ohm: float | None) -> tuple[StreamDecoder, RowFormat, dict[str, Any], bool]:
    """Decode a capture; a .csv/.csv.gz ``out`` is written while decoding (True in the last place)."""
    from archline.common.atomic import atomic_path, write_atomic
    from archline.powermon.record.samples_csv import CsvStream
    from archline.powermon.record.traces import _meta

    data, chans, period, side, fmt = _prepare(raw_path, channels, rate_hz, r_sense_ohm)
    dec = StreamDecoder(chans, period, side.get("time_set_s", 0) if side else None)
    target = Path(out) if out is not None else None

    def meta() -> dict[str, Any]:
        if dec.n_accepted == 0:
            raise MeterError(f"no PowerMon 2 samples in {raw_path} (garbage or truncated capture; "
                             f"{dec.stats.skipped_bytes} bytes skipped)")
        stats = dec.stats.as_dict()
        return {"source": str(raw_path), "channels": chans, "rate_hz": TICK_HZ / period, "stats": stats,
                "overflows": stats["overflows"], "gaps": stats["gaps"], "lost_records": stats["lost_records"]}

    if target is None or not target.name.lower().endswith((".csv", ".csv.gz")):
        _feed(dec, data, None)
        return dec, fmt, meta(), False
    with atomic_path(target) as tmp:
        stream = CsvStream(target, tmp, fmt)
        try:
            _feed(dec, data, stream)
            info = meta()
        except BaseException:
            stream.abort()
            raise
        stream.close()
    empty = Samples.empty(fmt.meter, fmt.emulated)
    empty.clock = fmt.clock
    write_atomic(target.with_name(target.name + ".json"), json.dumps(_meta(empty, info), indent=1, default=str))
    return dec, fmt, info, True


def decode_file(raw_path: str | Path, out: str | Path | None = None, channels: Sequence[int] | None = None,
                rate_hz: float | None = None, r_sense_ohm: float | None = None) -> tuple[Samples, dict[str, Any]]:
    """Decode a raw capture (using its ``RAW.json`` sidecar when present) and optionally write the samples
    (.csv and .csv.gz as the decoder goes; .parquet at the end)."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm)
    s = fmt.samples(dec.records())
    if out is not None and not written:
        write_samples(s, out, meta)
    return s, meta


def decode_to_file(raw_path: str | Path, out: str | Path, channels: Sequence[int] | None = None,
                   rate_hz: float | None = None, r_sense_ohm: float | None = None) -> tuple[int, bool, dict[str, Any]]:
    """Decode a capture into a samples file without keeping the samples: (rows written, emulated, meta)."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm)
    if not written:
        write_samples(fmt.samples(dec.records()), out, meta)
    return dec.n_accepted, fmt.emulated, meta


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
