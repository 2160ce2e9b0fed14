"""Offline work on files: decode a raw PowerMon 2 capture, integrate a samples file, list meters, record."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.common.files import read_bytes, read_json
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.capture import sidecar_path
from archline.powermon.powermon2.decode import StreamDecoder, guess_channels
from archline.powermon.powermon2.driver import period_for_rate
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, TICK_HZ
from archline.powermon.record.integrate import Integration, integrate_samples
from archline.powermon.record.samples import Samples
from archline.powermon.record.traces import check_samples_path, read_samples, write_samples

if TYPE_CHECKING:  # pragma: no cover
    from archline.powermon.record.samples_csv import CsvStream, RowFormat


#: Raw bytes fed to the decoder at a time when writing as it decodes (~260 k records, half a minute of 8 channels
#: at 1024 Hz): small enough that the writer starts early, big enough that per-block work is amortised.
FEED_BYTES = 1 << 20


def _sidecar(raw: Path) -> dict[str, Any]:
    """The capture's ``RAW.json`` (what an offline decode needs), checked; {} when there is none."""
    sp = sidecar_path(raw)
    if not sp.exists():
        return {}
    side = read_json(sp, error=MeterError, what="capture sidecar")
    if not isinstance(side, dict):
        raise MeterError(f"capture sidecar {sp} is not a JSON object")
    chans = side.get("channels")
    if chans is not None and not (isinstance(chans, list) and chans and
                                  all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 16 for c in chans)):
        raise MeterError(f"capture sidecar {sp}: channels must be a list of channel numbers 0-15, got {chans!r}")
    for key in ("period_ticks", "time_set_s"):
        v = side.get(key)
        if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v >= (1 if key == "period_ticks"
                                                                                         else 0)):
            raise MeterError(f"capture sidecar {sp}: {key} must be a whole number, got {v!r}")
    for key in ("speed",):
        v = side.get(key)
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise MeterError(f"capture sidecar {sp}: {key} must be a positive number, got {v!r}")
    return side


def _prepare(raw_path: str | Path, channels: Sequence[int] | None, rate_hz: float | None,
             r_sense_ohm: float | None) -> tuple[bytes, list[int], int, dict[str, Any], RowFormat]:
    """The capture's bytes, channels, period and sidecar, and how its records become rows."""
    from archline.powermon.record.samples_csv import RowFormat

    raw = Path(raw_path)
    data = read_bytes(raw, error=MeterError, what="capture", give="the .raw.bin file")
    if len(data) < 4:
        raise MeterError(f"capture {raw} is empty or truncated ({len(data)} bytes)")
    side = _sidecar(raw)
    if r_sense_ohm is not None and not (math.isfinite(r_sense_ohm) and r_sense_ohm > 0):
        raise MeterError(f"shunt resistance must be a positive number of ohms, got {r_sense_ohm:g}")
    chans = list(channels) if channels else side.get("channels") or guess_channels(data)
    period = period_for_rate(rate_hz) if rate_hz is not None else int(side.get("period_ticks", 8))
    try:
        r_map = {int(k): float(v) for k, v in (side.get("r_sense_ohm") or {}).items()}
        clock = side.get("clock") or {}
        offset, scale = (float(clock["offset_s"]), float(clock.get("seconds_per_device_s", 1.0)) *
                         (1 + float(clock.get("drift_ppm", 0)) * 1e-6)) if "offset_s" in clock else (0.0, 1.0)
    except (TypeError, ValueError, AttributeError):
        raise MeterError(f"capture sidecar {sidecar_path(raw)}: r_sense_ohm and clock must hold numbers") from None
    if any(not (0 <= c < 16 and math.isfinite(r) and r > 0) for c, r in r_map.items()):
        raise MeterError(f"capture sidecar {sidecar_path(raw)}: r_sense_ohm must map channels 0-15 to positive ohms")
    r_lut = np.full(16, DEFAULT_R_SENSE_OHM if r_sense_ohm is None else r_sense_ohm)
    if r_sense_ohm is None:
        for c, r in r_map.items():
            r_lut[c] = r
    dt = period / TICK_HZ
    if "offset_s" in clock:
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


def _warnings(raw: str | Path, data: bytes, dec: StreamDecoder, side: dict[str, Any], partial: bool) -> list[str]:
    """What went wrong in the capture, one line each; a capture cut short (no done record) is an error unless
    ``partial``."""
    warnings: list[str] = []
    st = dec.stats
    if not st.done:
        msg = (f"capture {raw} ends without its done record ({len(data)} bytes): the recording was cut short "
               "(killed, or the meter vanished), so samples after its end are missing")
        if not partial:
            raise MeterError(msg + "; pass --partial to decode what is there")
        warnings.append(msg)
    if side.get("error"):
        warnings.append(f"the recording reported: {side['error']}")
    if st.lost_records or st.uncertain_gaps or st.overflows or st.resyncs or st.skipped_bytes:
        warnings.append(f"{st.lost_records} record(s) lost in {st.gaps} gap(s), {st.overflows} overflow(s), "
                        f"{st.resyncs} resync(s), {st.skipped_bytes} byte(s) skipped")
    if st.after_done_bytes:
        warnings.append(f"{st.after_done_bytes} byte(s) follow the done record and were not decoded (a second "
                        "recording joined on? decode it on its own)")
    return warnings


def _decode(raw_path: str | Path, out: str | Path | None, channels: Sequence[int] | None, rate_hz: float | None,
            r_sense_ohm: float | None, partial: bool = False) -> tuple[StreamDecoder, RowFormat, dict[str, Any], bool]:
    """Decode a capture; a .csv/.csv.gz ``out`` is written while decoding (True in the last place)."""
    from archline.common.atomic import atomic_path, write_atomic
    from archline.powermon.record.samples_csv import CsvStream
    from archline.powermon.record.traces import _meta

    if out is not None:
        check_samples_path(out)
    data, chans, period, side, fmt = _prepare(raw_path, channels, rate_hz, r_sense_ohm)
    dec = StreamDecoder(chans, period, side.get("time_set_s", 0) if side else None)
    target = Path(out) if out is not None else None

    def meta() -> dict[str, Any]:
        if dec.n_accepted == 0:
            raise MeterError(f"no PowerMon 2 samples in {raw_path} (garbage or truncated capture; "
                             f"{dec.stats.skipped_bytes} bytes skipped)")
        warnings = _warnings(raw_path, data, dec, side, partial)
        stats = dec.stats.as_dict()
        speed = float(side.get("speed", 1.0)) if fmt.clock == "host_monotonic" else 1.0
        return {"source": str(raw_path), "channels": chans, "rate_hz": TICK_HZ / period, "stats": stats,
                "overflows": stats["overflows"], "gaps": stats["gaps"], "lost_records": stats["lost_records"],
                "speed": speed, "warnings": warnings}

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
                rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                ) -> tuple[Samples, dict[str, Any]]:
    """Decode a raw capture (using its ``RAW.json`` sidecar when present) and optionally write the samples
    (.csv and .csv.gz as the decoder goes; .parquet at the end). A capture that ends without its done record was
    cut short: an error unless ``partial``. Every count of what went wrong is in ``meta["stats"]``, every problem
    in ``meta["warnings"]``."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm, partial)
    s = fmt.samples(dec.records())
    if out is not None and not written:
        write_samples(s, out, meta)
    return s, meta


def decode_to_file(raw_path: str | Path, out: str | Path, channels: Sequence[int] | None = None,
                   rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                   ) -> tuple[int, bool, dict[str, Any]]:
    """Decode a capture into a samples file without keeping the samples: (rows written, emulated, meta)."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm, partial)
    if not written:
        write_samples(fmt.samples(dec.records()), out, meta)
    return dec.n_accepted, fmt.emulated, meta


def integrate_file(path: str | Path, t0_s: float | None = None, t1_s: float | None = None, *,
                   min_samples: int = 2) -> Integration:
    """Integrate a samples file the way its recording did: on the device's timeline (``speed``, an emulator's time
    compression, from the file's sidecar) and, unless a window is given, over the recorded window."""
    s, meta = read_samples(path)
    info = meta.get("info") if isinstance(meta.get("info"), dict) else {}
    stats = meta.get("stats") or info.get("stats") or {}
    speed = meta.get("speed", info.get("speed", 1.0))
    if not (isinstance(speed, (int, float)) and math.isfinite(speed) and speed > 0):
        raise MeterError(f"{path}: the sidecar's speed must be a positive number, got {speed!r}")
    if s.clock == "device_s":
        speed = 1.0
    window = meta.get("window_s")
    recorded = t0_s is None and t1_s is None and isinstance(window, list) and len(window) == 2
    if recorded:
        t0_s, t1_s = float(window[0]), float(window[1])
    try:
        return integrate_samples(s, t0_s, t1_s, overflows=stats.get("overflows", meta.get("overflows")),
                                 gaps=stats.get("gaps", meta.get("gaps")), min_samples=min_samples,
                                 time_compression=float(speed))
    except MeterError as e:
        if recorded and "outside the samples" in str(e):
            raise MeterError(f"{path}: the recorded window reaches past the samples (the meter lost the rest of "
                             f"the recording; its sidecar says: {info.get('error') or 'no error'}); give --start "
                             f"and --end inside them to integrate what arrived ({e})") from None
        raise


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
