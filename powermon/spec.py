"""The one ``[[meters]]`` schema: what a platform profile (or ``archline meter record --meter``) says about a meter,
validated once, and :func:`open_meter`, which turns an entry into a recorder meter.

    [[meters]]
    name = "powermon"                # required, unique
    kind = "powermon2"               # required: powermon2 | rapl | nvml
    port = "/dev/ttyUSB0"            # powermon2: serial device or pyserial URL
    rate_hz = 128                    # powermon2: per-channel samples per second (1024/N)
    channels = [                     # powermon2: channel -> rail -> device
      { id = 0, rail = "pcie_slot_12v", device = "gpu", nominal_v = 12.0, r_sense_ohm = 0.00422, share = 0.25 },
    ]
    zones = ["package-0", "dram"]    # rapl (default: every zone)
    index = 0                        # nvml: GPU index

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

METER_KINDS = ("powermon2", "rapl", "nvml")


class ChannelSpec(Strict):
    id: int = Field(ge=0)
    rail: str
    device: str = "device"
    nominal_v: float = Field(default=12.0, gt=0)
    r_sense_ohm: float = Field(default=DEFAULT_R_SENSE_OHM, gt=0)
    share: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ranges(self) -> ChannelSpec:
        if self.id >= MAX_CHANNELS:
            raise ValueError(f"id: PowerMon 2 has channels 0-{MAX_CHANNELS - 1}, got {self.id}")
        if self.nominal_v > VOLTAGE_FULL_SCALE_V:
            raise ValueError(f"nominal_v: {self.nominal_v:g} V is above the meter's {VOLTAGE_FULL_SCALE_V} V "
                             "full scale")
        return self

    @property
    def full_scale_a(self) -> float:
        return SENSE_FULL_SCALE_V / self.r_sense_ohm


class MeterSpec(Strict):
    name: str
    kind: Literal["powermon2", "rapl", "nvml"]
    port: str | None = None
    rate_hz: float = Field(default=128.0, gt=0)
    channels: tuple[ChannelSpec, ...] = ()
    zones: tuple[str, ...] = ()
    index: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> MeterSpec:
        ids = [c.id for c in self.channels]
        if len(set(ids)) != len(ids):
            raise ValueError(f"channels: channel id used twice ({sorted(ids)})")
        rails = [c.rail for c in self.channels]
        if len(set(rails)) != len(rails):
            raise ValueError(f"channels: a rail is measured by more than one channel ({sorted(rails)})")
        if self.kind == "powermon2" and not self.channels:
            raise ValueError("a powermon2 meter needs 'channels' (channel -> rail -> device)")
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
    chans = [ChannelSpec(id=c, rail=f"ch{c}") for c in (range(MAX_CHANNELS) if channels is None else channels)]
    return validate(MeterSpec, {"name": name, "kind": kind, "channels": chans, **kw}, f"meter {name}",
                    error=MeterError)


def open_meter(spec: MeterSpec, *, raw_dir: str | Path | None = None, powercap_root: str | Path | None = None,
               nvml: Any = None, **kw: Any) -> Any:
    """A recorder meter for ``spec`` on real hardware: the PowerMon 2 driver on its port (raw captures, one per
    segment, under ``raw_dir``), RAPL zones, or an NVML GPU. MeterError says why it cannot be opened."""
    if spec.kind == "rapl":
        from archline.powermon.counters.rapl import RaplMeter, default_root

        return RaplMeter(list(spec.zones) or None, root=powercap_root or default_root(),
                         devices={"cpu": list(spec.zones)} if spec.zones else None, name=spec.name, **kw)
    if spec.kind == "nvml":
        from archline.powermon.counters.nvml import NvmlMeter

        return NvmlMeter(spec.index, nvml=nvml, name=spec.name, **kw)
    from archline.powermon.powermon2.meter import open_powermon

    return open_powermon(spec, raw_dir=raw_dir, **kw)
