"""The names and versions of powermon's file formats, and the plausibility limits their owners check (no
imports: writers use these without paying for the readers' validation)."""

#: a samples file's sidecar (``S.csv.json``): ``family/version``; a reader takes newer versions as far as it knows them
SAMPLES_FORMAT = "archline.samples/1"
#: a raw PowerMon 2 capture's sidecar (``C.raw.bin.json``)
RAW_FORMAT = "archline.powermon2.raw/1"
#: the tick a raw PowerMon 2 capture's ``period_ticks`` count (the device's 32.768 kHz crystal / 32)
RAW_TICK_HZ = 1024
#: the largest clock drift a sidecar may claim: a quartz crystal drifts tens of ppm; 1000 ppm is a damaged file
MAX_DRIFT_PPM = 1000.0
#: a power_w column may differ from voltage_v x current_a by this share (plus POWER_ABS_TOL_W): the files hold 7
#: significant digits of each, so an honest product agrees to ~1e-6
POWER_REL_TOL = 1e-3
POWER_ABS_TOL_W = 1e-3
#: the most a raw capture read from a pipe may hold: a day of the PowerMon 2's fastest stream (3072 four-byte
#: records a second) is 1.06e9 bytes
MAX_CAPTURE_STREAM_BYTES = 1 << 30
#: the emulated PowerMon 2's stream over a pty, records per host second, that the decoder keeps up with (the one
#: limit of an emulator's speed: ``bench run --time-compression``, ``meter record --meter emulated:N``, ``meter
#: emulate --speed``; a sidecar claiming a faster emulator is damaged)
MAX_EMULATED_RECORDS_PER_S = 60_000


def max_emulator_speed(records_per_device_s: float) -> int:
    """The highest whole speed (device seconds per host second) at which an emulator streaming
    ``records_per_device_s`` (channels x per-channel rate) stays within :data:`MAX_EMULATED_RECORDS_PER_S`."""
    return int(MAX_EMULATED_RECORDS_PER_S // max(records_per_device_s, 1e-300))


def slower_advice(records_per_device_s: float, rate_hz: float, speed_flag: str, rate_where: str) -> str:
    """What to lower so that an emulator carries its stream: the speed (``speed_flag``) while real time fits; else
    the rate (``rate_where``), since even real time is too fast and no speed of 0 or less can be asked for."""
    top = max_emulator_speed(records_per_device_s)
    if top >= 1:
        return f"lower {speed_flag} to {top} or less"
    rate = int(rate_hz * MAX_EMULATED_RECORDS_PER_S / records_per_device_s)
    return (f"even in real time it would stream {records_per_device_s:.4g} records per second: lower {rate_where} "
            f"to {rate} Hz or less")


def emulator_speed_problem(speed: float, records_per_device_s: float) -> str | None:
    """Why an emulator cannot run at ``speed`` with this stream (None when it can): the records per host second
    it would push over the pty, against the limit."""
    per_s = speed * records_per_device_s
    if per_s <= MAX_EMULATED_RECORDS_PER_S:
        return None
    return (f"speed {speed:g}x would stream {per_s:.4g} PowerMon records per second over the pty (limit "
            f"{MAX_EMULATED_RECORDS_PER_S}, {records_per_device_s:g} records per device second at speed 1)")
