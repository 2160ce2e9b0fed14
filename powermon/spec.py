"""The one ``[[meters]]`` schema: what a platform profile (or ``archline meter record --meter``) says about a meter,
validated once, and :func:`open_meter`, which turns an entry into a recorder meter.

    [[meters]]
    name = "powermon"                # required, unique
    kind = "powermon2"               # required: one of METER_KINDS
    port = "/dev/ttyUSB0"            # powermon2 / powersensor3 / pmd: serial device or pyserial URL
                                     # (powermon://, powersensor3://, pmd:// serve an emulator)
    rate_hz = 128                    # sampling kinds: per-channel samples per second
    channels = [                     # channel -> rail -> device (ids per kind: CHANNEL_IDS)
      { id = 0, rail = "pcie_slot_12v", device = "gpu", nominal_v = 12.0, r_sense_ohm = 0.00422, share = 0.25 },
    ]
    zones = ["package-0", "dram"]    # rapl (default: every zone)
    index = 0                        # nvml / amdsmi: GPU index
    url = "http://127.0.0.1:8000"    # redfish (service root host) or "ipmi://host:port"
    username = "admin"               # redfish / ipmi
    password_env = "BMC_PASSWORD"    # the NAME of the environment variable holding the password (never the password)
    chassis = "1U"                   # redfish: chassis id (default: the first with a power reading)
    update_period_s = 5.0            # redfish / ipmi: the BMC's update period (default: what the BMC says, else 1 s)
    power_source = "PowerSubsystem"  # redfish: read only this source (default: the first found, docs/meters.md)
    sensors = ["hwmon3/energy1_input"]  # hwmon entries (default: every energy input)
    calibration = { gain = 1.07, offset_w = -3.5, lag_s = 0.1 }   # written by `archline meter calibrate`
    sensor_profile = "sensors/nvml0.json"  # written by `archline meter probe`

Whole-device kinds (redfish, ipmi, amdsmi, hwmon) may omit ``channels``: they get one channel 0 whose rail is the
kind and whose device is "node", "gpu" or "cpu" (:data:`WHOLE_DEVICE`).

A channel's ``share`` is the fraction of its device's power an emulator draws through it (the shares of one
device sum to 1); real hardware ignores it. A GPU behind the PCIe interposer is the slot 12 V and 3.3 V rails
plus its 6-pin and 8-pin cables (S0 §IV-A); a CPU is its ATX/EPS rails.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from archline.common.inputs import Strict, validate
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.protocol import (
    DEFAULT_R_SENSE_OHM,
    MAX_CHANNELS,
    SENSE_FULL_SCALE_V,
    VOLTAGE_FULL_SCALE_V,
)

MeterKind = Literal["powermon2", "rapl", "nvml", "powersensor3", "pmd", "redfish", "ipmi", "amdsmi", "hwmon"]
METER_KINDS: tuple[str, ...] = ("powermon2", "rapl", "nvml", "powersensor3", "pmd", "redfish", "ipmi", "amdsmi",
                                "hwmon")
#: channel ids each kind has (PowerMon 2: 16 channels; PowerSensor3: 4 current/voltage pairs; PMD-USB: PCIE1,
#: PCIE2, EPS1, EPS2); kinds not named here take any id
CHANNEL_IDS: dict[str, range] = {"powermon2": range(MAX_CHANNELS), "powersensor3": range(4), "pmd": range(4)}
#: the highest voltage a channel of the kind can read (PMD-USB: 2047 x 7.568 mV)
VOLTAGE_LIMIT_V: dict[str, float] = {"powermon2": VOLTAGE_FULL_SCALE_V, "pmd": 15.49}
#: kinds that read one whole-device value -> the device their default channel feeds
WHOLE_DEVICE: dict[str, str] = {"redfish": "node", "ipmi": "node", "amdsmi": "gpu", "hwmon": "cpu"}
#: kinds with a byte stream on a serial port (``port`` required)
SERIAL_KINDS = ("powermon2", "powersensor3", "pmd")
#: kind -> the module whose ``open_from_spec`` / ``emulate_from_spec`` build its meter
METER_MODULES: dict[str, str] = {
    "powermon2": "archline.powermon.powermon2.meter",
    "powersensor3": "archline.powermon.powersensor3.meter",
    "pmd": "archline.powermon.pmd.meter",
    "redfish": "archline.powermon.bmc.meter",
    "ipmi": "archline.powermon.bmc.meter",
    "amdsmi": "archline.powermon.counters.amdsmi",
    "hwmon": "archline.powermon.counters.hwmon",
}


class ChannelSpec(Strict):
    id: int = Field(ge=0)
    rail: str
    device: str = "device"
    nominal_v: float = Field(default=12.0, gt=0)
    r_sense_ohm: float = Field(default=DEFAULT_R_SENSE_OHM, gt=0)
    share: float | None = Field(default=None, ge=0)

    @property
    def full_scale_a(self) -> float:
        return SENSE_FULL_SCALE_V / self.r_sense_ohm


class MeterSpec(Strict):
    name: str
    kind: MeterKind
    port: str | None = None
    rate_hz: float = Field(default=128.0, gt=0)
    channels: tuple[ChannelSpec, ...] = ()
    zones: tuple[str, ...] = ()
    index: int = Field(default=0, ge=0)
    url: str | None = None
    username: str | None = None
    password_env: str | None = None
    chassis: str | None = None
    sensors: tuple[str, ...] = ()
    cipher_suite: Literal[3, 17] | None = None      #: ipmi: force RMCP+ cipher suite 17 or 3 (else the best offered)
    #: redfish / ipmi: the BMC's update period, seconds (else its SensingInterval or DCMI statistics period, or 1 s)
    update_period_s: float | None = Field(default=None, gt=0, le=3600)
    #: redfish: read only this power source (else the first of these discovery finds, in this order)
    power_source: Literal["EnvironmentMetrics", "Sensors", "PowerSubsystem", "Power"] | None = None
    calibration: dict[str, float | bool] | None = None     #: bool: only "emulated" (meter calibrate --emulate)
    sensor_profile: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _whole_device_channel(cls, data: Any) -> Any:
        """A whole-device kind without ``channels`` reads one value: channel 0, rail = the kind."""
        if isinstance(data, dict) and isinstance(data.get("cipher_suite"), bool):     # pydantic says "got True"
            raise ValueError(f"cipher_suite: give 17 or 3, not TOML's `{str(data['cipher_suite']).lower()}`")
        if isinstance(data, dict) and data.get("kind") in WHOLE_DEVICE and not data.get("channels"):
            kind = data["kind"]
            data = {**data, "channels": ({"id": 0, "rail": kind, "device": WHOLE_DEVICE[kind]},)}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> MeterSpec:
        ids_ok = CHANNEL_IDS.get(self.kind)
        vmax = VOLTAGE_LIMIT_V.get(self.kind)
        for c in self.channels:
            if ids_ok is not None and c.id not in ids_ok:
                raise ValueError(f"channels: a {self.kind} meter has channels {ids_ok[0]}-{ids_ok[-1]}, "
                                 f"got {c.id}")
            if vmax is not None and c.nominal_v > vmax:
                raise ValueError(f"channels: nominal_v {c.nominal_v:g} V of channel {c.id} is above the "
                                 f"{self.kind} meter's {vmax:g} V full scale")
        if self.password_env is not None and not self.password_env.replace("_", "").isalnum():
            raise ValueError("password_env: give the NAME of an environment variable (letters, digits, _), "
                             "never the password")
        if self.cipher_suite is not None and self.kind != "ipmi":
            raise ValueError(f"cipher_suite: only an ipmi meter has one, not a {self.kind} meter")
        if self.kind in ("redfish", "ipmi"):
            if "rate_hz" in self.model_fields_set:
                raise ValueError(f"rate_hz: a {self.kind} meter reads at the BMC's own update period; give "
                                 "update_period_s (seconds) to state it")
            if len(self.channels) > 1:
                raise ValueError(f"channels: a {self.kind} meter has one whole-node reading: give one channel "
                                 f"(got {len(self.channels)})")
        elif self.update_period_s is not None:
            raise ValueError(f"update_period_s: only a BMC (redfish, ipmi) meter has one, not a {self.kind} meter")
        if self.power_source is not None and self.kind != "redfish":
            raise ValueError(f"power_source: only a redfish meter has one, not a {self.kind} meter")
        ids = [c.id for c in self.channels]
        if len(set(ids)) != len(ids):
            raise ValueError(f"channels: channel id used twice ({sorted(ids)})")
        rails = [c.rail for c in self.channels]
        if len(set(rails)) != len(rails):
            raise ValueError(f"channels: a rail is measured by more than one channel ({sorted(rails)})")
        if self.kind in CHANNEL_IDS and not self.channels:
            raise ValueError(f"a {self.kind} meter needs 'channels' (channel -> rail -> device)")
        for dev in {c.device for c in self.channels}:
            shares = [c.share for c in self.channels if c.device == dev]
            if any(s is not None for s in shares):
                if any(s is None for s in shares):
                    raise ValueError(f"give 'share' on every channel of device '{dev}' or none")
                tot = sum(s for s in shares if s is not None)
                if abs(tot - 1.0) > 1e-6:
                    raise ValueError(f"the shares of device '{dev}' sum to {tot:g}, not 1")
        return self

    def r_sense(self) -> dict[int, float]:
        return {c.id: c.r_sense_ohm for c in sorted(self.channels, key=lambda c: c.id)}

    def rail(self, channel: int) -> str:
        return next((c.rail for c in self.channels if c.id == channel), f"ch{channel}")

    def devices(self) -> dict[str, list[str]]:
        """device -> the rails that feed it."""
        out: dict[str, list[str]] = {}
        for c in self.channels:
            out.setdefault(c.device, []).append(c.rail)
        return out

    def with_even_shares(self) -> MeterSpec:
        """Shares for an emulator where the profile gives none: each device's power split evenly."""
        if any(c.share is not None for c in self.channels):
            return self
        n = {d: len(r) for d, r in self.devices().items()}
        chans = tuple(c.model_copy(update={"share": 1.0 / n[c.device]}) for c in self.channels)
        return self.model_copy(update={"channels": chans})


def parse_meters(value: Any, origin: str, error: type[Exception] = MeterError) -> tuple[MeterSpec, ...]:
    """A profile's ``[[meters]]`` (a single ``[meters]`` table is a one-element list); names must be unique."""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise error(f"{origin}: [[meters]] must be an array of tables")
    out: list[MeterSpec] = []
    for i, m in enumerate(value):
        name = m.get("name") if isinstance(m, dict) else None
        where = f"{origin}: meters.{name}" if isinstance(name, str) else f"{origin}: meters[{i}]"
        spec = validate(MeterSpec, m, where, error=error)
        if spec.name in {o.name for o in out}:
            raise error(f"{where}: meter name used twice")
        out.append(spec)
    return tuple(out)


def channels_spec(name: str, kind: str, channels: Sequence[int] | None = None, **kw: Any) -> MeterSpec:
    """A meter entry for channels given by number only (``archline meter record``): rails named ``chN``."""
    ids = CHANNEL_IDS.get(kind, range(1)) if channels is None else channels
    chans = [ChannelSpec(id=c, rail=f"ch{c}") for c in ids]
    return validate(MeterSpec, {"name": name, "kind": kind, "channels": chans, **kw}, f"meter {name}",
                    error=MeterError)


def _module(spec: MeterSpec) -> Any:
    import importlib

    name = METER_MODULES.get(spec.kind)
    if name is None:
        raise MeterError(f"meter '{spec.name}': kind {spec.kind} has no driver module")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise MeterError(f"meter '{spec.name}': the {spec.kind} driver is not in this archline "
                             "(update archline)") from None
        raise


def open_meter(spec: MeterSpec, *, raw_dir: str | Path | None = None, powercap_root: str | Path | None = None,
               nvml: Any = None, **kw: Any) -> Any:
    """A recorder meter for ``spec`` on real hardware: RAPL zones, an NVML GPU, or the driver module of its kind
    (:data:`METER_MODULES`, e.g. the PowerMon 2 on its port with raw captures under ``raw_dir``), through that
    module's ``open_from_spec(spec, raw_dir=raw_dir, **kw)``. MeterError says why it cannot be opened."""
    if spec.kind == "rapl":
        from archline.powermon.counters.rapl import RaplMeter, default_root

        meter = RaplMeter(list(spec.zones) or None, root=powercap_root or default_root(),
                          devices={"cpu": list(spec.zones)} if spec.zones else None, name=spec.name, **kw)
    elif spec.kind == "nvml":
        from archline.powermon.counters.nvml import NvmlMeter

        meter = NvmlMeter(spec.index, nvml=nvml, name=spec.name, **kw)
    else:
        meter = _module(spec).open_from_spec(spec, raw_dir=raw_dir, **kw)
    return _sensor_applied(meter, spec)


def _sensor_applied(meter: Any, spec: MeterSpec) -> Any:
    """The entry's ``sensor_profile`` limits and ``calibration`` (from `meter probe` / `meter calibrate`) applied:
    windows shorter than the sensor allows refused, energy corrected and labelled calibrated."""
    if not (spec.sensor_profile or spec.calibration):
        return meter
    from archline.powermon.sensor.apply import apply_spec

    return apply_spec(meter, spec)


def can_emulate(spec: MeterSpec) -> bool:
    """Whether ``spec``'s kind has an emulator (its module provides ``emulate_from_spec``)."""
    if spec.kind not in METER_MODULES:
        return False
    try:
        return callable(getattr(_module(spec), "emulate_from_spec", None))
    except MeterError:
        return False


def emulate_meter(spec: MeterSpec, power: Any, *, speed: float = 1.0, seed: int = 0,
                  raw_dir: str | Path | None = None, faults: Any = None, **kw: Any) -> Any:
    """The emulated meter of ``spec``'s kind playing ``power`` (a PowerSource: ``sample(t_s, channels) ->
    (volts, amps)``, optionally ``bind(core)``), labelled emulated; ``speed`` compresses time, ``faults`` are the
    kind's own fault description."""
    mod = _module(spec)
    fn = getattr(mod, "emulate_from_spec", None)
    if fn is None:
        raise MeterError(f"meter '{spec.name}': a {spec.kind} meter has no emulator")
    return _sensor_applied(fn(spec, power, speed=speed, seed=seed, raw_dir=raw_dir, faults=faults, **kw), spec)
