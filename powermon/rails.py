"""Channel maps: which meter channel measures which rail, with what shunt, and which rails make a device.

A platform's meter section looks like::

    {"type": "powermon2", "port": "/dev/ttyUSB0", "rate_hz": 128,
     "channels": {0: {"rail": "pcie_12v", "r_sense_ohm": 0.00422}, 1: {"rail": "pcie_3v3"}, ...},
     "devices": {"gpu": ["pcie_12v", "pcie_3v3", "aux_6pin", "aux_8pin"]}}

(TOML gives the channel keys as strings; both work.) A GPU through the PCIe interposer is the slot 12 V and
3.3 V rails plus its 6-pin and 8-pin cables; a CPU is its ATX/EPS rails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, MAX_CHANNELS

#: The papers' GPU rails (S0 §IV-A): PCIe slot 12 V and 3.3 V through the interposer, 6-pin and 8-pin cables.
GPU_INTERPOSER_SECTION: dict[str, Any] = {
    "type": "powermon2", "rate_hz": 128,
    "channels": {0: {"rail": "pcie_12v"}, 1: {"rail": "pcie_3v3"}, 2: {"rail": "aux_6pin"}, 3: {"rail": "aux_8pin"}},
    "devices": {"gpu": ["pcie_12v", "pcie_3v3", "aux_6pin", "aux_8pin"]},
}


@dataclass(frozen=True)
class ChannelSpec:
    channel: int
    rail: str
    r_sense_ohm: float = DEFAULT_R_SENSE_OHM


@dataclass
class RailMap:
    channels: dict[int, ChannelSpec]
    devices: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_section(cls, section: Mapping[str, Any], n_channels: int = MAX_CHANNELS) -> RailMap:
        raw = section.get("channels")
        if not raw:
            raise MeterError("the meter section has no channels (expected channels = {0 = {rail = \"...\"}})")
        chans: dict[int, ChannelSpec] = {}
        items = raw.items() if isinstance(raw, Mapping) else enumerate(raw)
        for key, spec in items:
            try:
                c = int(key)
            except (TypeError, ValueError):
                raise MeterError(f"channel id {key!r} is not a number") from None
            if not 0 <= c < n_channels:
                raise MeterError(f"the channel map names channel {c}, but the meter has channels 0..{n_channels - 1}")
            if isinstance(spec, str):
                spec = {"rail": spec}
            rail = str(spec.get("rail", f"ch{c}"))
            r = float(spec.get("r_sense_ohm", DEFAULT_R_SENSE_OHM))
            if not r > 0:
                raise MeterError(f"channel {c}: r_sense_ohm must be > 0, got {r}")
            chans[c] = ChannelSpec(c, rail, r)
        rails = [s.rail for s in chans.values()]
        dup = {r for r in rails if rails.count(r) > 1}
        if dup:
            raise MeterError(f"rail(s) {sorted(dup)} measured by more than one channel")
        devices: dict[str, list[str]] = {}
        for dev, members in (section.get("devices") or {}).items():
            members = [members] if isinstance(members, str) else list(members)
            unknown = [m for m in members if m not in rails and not (str(m).isdigit() and int(m) in chans)]
            if unknown:
                raise MeterError(f"device {dev!r} names rail(s) {unknown} that no channel measures "
                                 f"(channels measure {rails})")
            devices[str(dev)] = [chans[int(m)].rail if str(m).isdigit() and int(m) in chans else str(m)
                                 for m in members]
        return cls(chans, devices)

    def r_sense(self) -> dict[int, float]:
        return {c: s.r_sense_ohm for c, s in sorted(self.channels.items())}

    def rail(self, channel: int) -> str:
        return self.channels[channel].rail

    def channel_of(self, rail: str) -> int:
        for c, s in self.channels.items():
            if s.rail == rail:
                return c
        raise MeterError(f"no channel measures rail {rail!r}")

    def device_channels(self, device: str) -> list[int]:
        return [self.channel_of(r) for r in self.devices[device]]
