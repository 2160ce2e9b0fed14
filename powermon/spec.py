"""The one ``[[meters]]`` schema: what a platform profile (or ``archline meter record --meter``) says about a meter,
validated once, and :func:`open_meter`, which turns an entry into a recorder meter.

    [[meters]]
    name = "powermon"                # required, unique
    kind = "KIND"                    # required: a registered kind (powermon/kinds.py; plugins add more)
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

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from archline.common.inputs import Strict, validate
from archline.common.plugins import FAULTS, one_line
from archline.powermon.errors import MeterError, MeterOpenError
from archline.powermon.shunts import DEFAULT_R_SENSE_OHM, SENSE_FULL_SCALE_V

#: the keys only some kinds take: each kind's ``own_keys`` (powermon/kinds.py) says which of these it takes
RESTRICTED_KEYS = ("cipher_suite", "update_period_s", "power_source")


def _registry_view(name: str) -> Any:
    """The tables this module held before the kind registry (powermon/kinds.py), read from it: METER_KINDS,
    METER_MODULES, CHANNEL_IDS, VOLTAGE_LIMIT_V, WHOLE_DEVICE, SERIAL_KINDS."""
    from archline.powermon import kinds

    ks = kinds.kinds()
    views: dict[str, Any] = {
        "METER_KINDS": lambda: tuple(k.name for k in ks),
        "METER_MODULES": lambda: {k.name: k.module for k in ks if k.module},
        "CHANNEL_IDS": lambda: {k.name: k.channel_ids for k in ks if k.channel_ids is not None},
        "VOLTAGE_LIMIT_V": lambda: {k.name: k.voltage_limit_v for k in ks if k.voltage_limit_v is not None},
        "WHOLE_DEVICE": lambda: {k.name: k.whole_device for k in ks if k.whole_device},
        "SERIAL_KINDS": lambda: tuple(k.name for k in ks if k.serial),
    }
    if name not in views:
        raise AttributeError(f"module 'archline.powermon.spec' has no attribute '{name}'")
    return views[name]()


def __getattr__(name: str) -> Any:
    return _registry_view(name)


def _kind_check(k: Any, spec: Any) -> None:
    """A kind's own rules on an entry: its ValueError names the key (one line, exit 2); a plugin's check that fails
    otherwise says so in one line too, never a traceback."""
    from archline.powermon.guarded import is_plugin, who

    try:
        k.check(spec)
    except ValueError:
        raise
    except FAULTS as e:
        if not is_plugin(k):
            raise
        raise ValueError(f"{who(k)} failed in check: {type(e).__name__}: {one_line(e)}") from None


def _kind(name: Any) -> Any:
    """The registered kind ``name`` (None when it is not one: the kind's own validator says so)."""
    from archline.powermon import kinds

    return kinds.find(name) if isinstance(name, str) else None


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
    kind: str                                       #: a registered meter kind (powermon/kinds.py)
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
        k = _kind(data.get("kind")) if isinstance(data, dict) else None
        if k is not None and k.whole_device and not data.get("channels"):
            data = {**data, "channels": ({"id": 0, "rail": k.name, "device": k.whole_device},)}
        return data

    @field_validator("kind")
    @classmethod
    def _registered(cls, v: str) -> str:
        from archline.powermon import kinds

        if kinds.find(v) is None:     # said as a Literal's error is: "kind must be one of ..., got ..."
            *head, last = [repr(n) for n in kinds.names()]
            raise PydanticCustomError("literal_error", "Input should be {expected}",
                                      {"expected": f"{', '.join(head)} or {last}" if head else last})
        return v

    @model_validator(mode="after")
    def _consistent(self) -> MeterSpec:
        k = _kind(self.kind)
        ids_ok, vmax = k.channel_ids, k.voltage_limit_v
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
        for key in RESTRICTED_KEYS:
            if getattr(self, key) is not None and key not in k.own_keys:
                raise ValueError(f"{key}: only {_owners(key)} meter has one, not a {self.kind} meter")
        if k.bmc:
            if "rate_hz" in self.model_fields_set:
                raise ValueError(f"rate_hz: a {self.kind} meter reads at the BMC's own update period; give "
                                 "update_period_s (seconds) to state it")
            if len(self.channels) > 1:
                raise ValueError(f"channels: a {self.kind} meter has one whole-node reading: give one channel "
                                 f"(got {len(self.channels)})")
        ids = [c.id for c in self.channels]
        if len(set(ids)) != len(ids):
            raise ValueError(f"channels: channel id used twice ({sorted(ids)})")
        rails = [c.rail for c in self.channels]
        if len(set(rails)) != len(rails):
            raise ValueError(f"channels: a rail is measured by more than one channel ({sorted(rails)})")
        if k.channel_ids is not None and not self.channels:
            raise ValueError(f"a {self.kind} meter needs 'channels' (channel -> rail -> device)")
        for dev in {c.device for c in self.channels}:
            shares = [c.share for c in self.channels if c.device == dev]
            if any(s is not None for s in shares):
                if any(s is None for s in shares):
                    raise ValueError(f"give 'share' on every channel of device '{dev}' or none")
                tot = sum(s for s in shares if s is not None)
                if abs(tot - 1.0) > 1e-6:
                    raise ValueError(f"the shares of device '{dev}' sum to {tot:g}, not 1")
        if k.check is not None:
            _kind_check(k, self)
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

    def measured_devices(self) -> set[str]:
        """The devices this entry measures (its channels' devices, else its kind's whole device)."""
        from archline.powermon import kinds

        got = {c.device for c in self.channels}
        if not got:
            kind = kinds.find(self.kind)
            got = {(kind.device if kind is not None else None) or self.kind}
        return got

    def same_power(self, other: MeterSpec) -> set[str]:
        """The devices both entries count (empty: none): one in common, or all of either when one measures the
        whole ``node``. Added together, their energies would count that power twice."""
        a, b = self.measured_devices(), other.measured_devices()
        return a | b if "node" in a or "node" in b else a & b

    def with_even_shares(self) -> MeterSpec:
        """Shares for an emulator where the profile gives none: each device's power split evenly."""
        if any(c.share is not None for c in self.channels):
            return self
        n = {d: len(r) for d, r in self.devices().items()}
        chans = tuple(c.model_copy(update={"share": 1.0 / n[c.device]}) for c in self.channels)
        return self.model_copy(update={"channels": chans})


def _owners(key: str) -> str:
    """Who takes ``key``: "an ipmi", "a redfish", "a BMC (redfish, ipmi)"."""
    from archline.powermon import kinds

    owners = [k for k in kinds.kinds() if key in k.own_keys]
    if len(owners) == 1:
        name = owners[0].name
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
    what = "BMC" if owners and all(k.bmc for k in owners) else "kind"
    return f"a {what} ({', '.join(k.name for k in owners)})"


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
    k = _kind(kind)
    ids = (k.channel_ids if k is not None and k.channel_ids is not None else range(1)) if channels is None \
        else channels
    chans = [ChannelSpec(id=c, rail=f"ch{c}") for c in ids]
    return validate(MeterSpec, {"name": name, "kind": kind, "channels": chans, **kw}, f"meter {name}",
                    error=MeterError)


def _module(spec: MeterSpec) -> Any:
    import importlib

    name = _kind(spec.kind).module
    if name is None:
        raise MeterError(f"meter '{spec.name}': kind {spec.kind} has no driver module")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise MeterError(f"meter '{spec.name}': the {spec.kind} driver is not in this archline "
                             "(update archline)") from None
        if not _is_plugin(spec.kind):
            raise
        raise MeterOpenError(f"meter '{spec.name}': the {spec.kind} plugin's driver {name} cannot be imported: "
                             f"{e}") from None
    except FAULTS as e:     # a plugin's driver that fails at import: one line, exit 4
        if not _is_plugin(spec.kind):
            raise
        raise MeterOpenError(f"meter '{spec.name}': the {spec.kind} plugin's driver {name} cannot be imported: "
                             f"{type(e).__name__}: {one_line(e)}") from None


def _is_plugin(kind: str) -> bool:
    from archline.powermon.guarded import is_plugin

    return is_plugin(_kind(kind))


def open_meter(spec: MeterSpec, *, raw_dir: str | Path | None = None, powercap_root: str | Path | None = None,
               nvml: Any = None, **kw: Any) -> Any:
    """A recorder meter for ``spec`` on real hardware, opened as its kind declares (powermon/kinds.py): the kind's
    ``opener`` (RAPL zones under ``powercap_root``, an NVML GPU through ``nvml``), else its driver module's
    ``open_from_spec(spec, raw_dir=raw_dir, **kw)`` (e.g. the PowerMon 2 on its port with raw captures under
    ``raw_dir``). MeterError says why it cannot be opened."""
    from archline.powermon.guarded import call_opener, guard_meter, is_plugin

    k = _kind(spec.kind)
    if k.opener is not None:
        meter = call_opener(k, "opener", k.opener, spec, raw_dir=raw_dir, powercap_root=powercap_root, nvml=nvml,
                            **kw)
        hook = "opener"
    else:
        hook = "open_from_spec"
        fn = getattr(_module(spec), hook, None)
        if fn is None and is_plugin(k):
            raise MeterOpenError(f"meter '{spec.name}': the {spec.kind} kind's driver {k.module} has no {hook} "
                                 "(the meter-driver contract: docs/design.md section 7)")
        meter = call_opener(k, hook, fn if fn is not None else _module(spec).open_from_spec, spec, raw_dir=raw_dir,
                            **kw)
    return _sensor_applied(guard_meter(k, meter, hook), spec)    # a plugin's meter: never trusted


def _sensor_applied(meter: Any, spec: MeterSpec) -> Any:
    """The entry's ``sensor_profile`` limits and ``calibration`` (from `meter probe` / `meter calibrate`) applied:
    windows shorter than the sensor allows refused, energy corrected and labelled calibrated."""
    if not (spec.sensor_profile or spec.calibration):
        return meter
    from archline.powermon.sensor.apply import apply_spec

    return apply_spec(meter, spec)


def can_emulate(spec: MeterSpec) -> bool:
    """Whether ``spec``'s kind has an emulator (its module provides ``emulate_from_spec``)."""
    if _kind(spec.kind).module is None:
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
    from archline.powermon.guarded import call_opener, guard_meter

    mod = _module(spec)
    fn = getattr(mod, "emulate_from_spec", None)
    if fn is None:
        raise MeterError(f"meter '{spec.name}': a {spec.kind} meter has no emulator")
    k, hook = _kind(spec.kind), "emulate_from_spec"
    meter = call_opener(k, hook, fn, spec, power, speed=speed, seed=seed, raw_dir=raw_dir, faults=faults, **kw)
    return _sensor_applied(guard_meter(k, meter, hook), spec)
