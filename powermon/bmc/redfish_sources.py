"""The Redfish power sources (docs: ../shared/reference/bmc_power.md), each found on a chassis and read on each
poll: ``EnvironmentMetrics.PowerWatts`` (the Sensor its ``DataSourceUri`` names, else its inline ``Reading``), a
``Sensors`` member of ``ReadingType`` ``Power``, ``PowerSubsystem``'s supplies summed, ``Power.PowerControl``.
The order they are tried in and the chassis walk are :meth:`archline.powermon.bmc.redfish.RedfishClient.discover`'s.
"""

from __future__ import annotations

import json
import math
from typing import Any

from archline.powermon.bmc.reading import PowerReading, iso_duration_s, iso_time_s, sensor_watts, watts
from archline.powermon.bmc.redfish_http import RedfishHttp, ResourceMissing
from archline.powermon.errors import DeviceError, MeterError

#: the power sources, in the order discovery tries them on a chassis
SHAPES = ("EnvironmentMetrics", "Sensors", "PowerSubsystem", "Power")
SOURCE_ENV_SENSOR = "EnvironmentMetrics.PowerWatts.DataSourceUri"     # the Sensor it names (with ReadingTime)
SOURCE_ENV_INLINE = "EnvironmentMetrics.PowerWatts"                   # its inline Reading (no time)
SOURCE_SENSOR = "Sensors"                                             # a Sensor of ReadingType Power
SOURCE_SUBSYSTEM = "PowerSubsystem"                                   # the supplies' InputPowerWatts, summed
SOURCE_POWER = "Power.PowerControl"                                   # PowerControl[0].PowerConsumedWatts
#: ChassisType of a chassis that is a node (or holds one): its power is the node's; another type (a Card, a
#: Component, a Drawer of drives, a PowerStrip) is tried after every node chassis and said when read
NODE_CHASSIS_TYPES = {"RackMount", "Blade", "StandAlone", "Enclosure", "Sled", "Module", "Shelf", "Zone",
                      "Pod", "Rack", "RackGroup", "Cartridge", "Other"}
#: DMTF Resource.State of a power supply that delivers no power (left out of a PowerSubsystem sum)
_NO_POWER_STATES = {"Absent", "Disabled", "UnavailableOffline"}
#: a PowerControl entry or Sensor PhysicalContext that is the whole node (absent: the same)
_WHOLE_CONTEXTS = {None, "Chassis", "Rack", "Room", "Exterior"}
#: a Sensor PhysicalContext naming a part of the node, not the node (its power is not the node's)
_PART_CONTEXTS = {"CPU", "Memory", "GPU", "Accelerator", "StorageDevice", "NetworkingDevice", "Fan", "VoltageRegulator",
                  "PowerSupply", "Battery", "ASIC", "FPGA", "Backplane", "Board", "SystemBoard", "CPUSubsystem",
                  "ComputeBay", "StorageBay", "PowerSubsystem", "Transceiver", "Transformer", "Rectifier"}


class RedfishSources(RedfishHttp):
    """A Redfish service's power source: which one (``source``), where, and its reading."""

    def __init__(self, url: str, username: str | None = None, password: str | None = None,
                 chassis: str | None = None, timeout_s: float = 5.0, verify: bool | str = True,
                 shape: str | None = None) -> None:
        super().__init__(url, username, password, timeout_s, verify)
        if shape is not None and shape not in SHAPES:
            raise MeterError(f"redfish: shape {shape!r} is not one of {', '.join(SHAPES)}")
        self.shape = shape                  # only this source (tests, and a BMC whose first source is wrong)
        self.chassis_id = chassis
        self.power_uri: str | None = None
        self.sensor_uri: str | None = None
        self.env_uri: str | None = None
        self.psu_metrics: list[str] = []
        self.source: str | None = None      #: which source is read (a SOURCE_* name), set by discover()
        self.source_uri: str | None = None  #: the resource read on each poll (the first supply's for PowerSubsystem)
        self.sensing_interval_s: float | None = None
        self.interval_min: float | None = None
        self.power_index = 0                #: the PowerControl entry read (the node's, by PhysicalContext)
        self.emulated = False
        self.timed_reads: bool | None = None    #: every reading so far carried a ReadingTime (None: none read)
        self.open_failures = 0              #: discovery's own reading unanswered (5xx, null): not a poll

    # each _find_* sets the source and returns None, or returns what this chassis lacks for it
    def _find_environmentmetrics(self, ch: dict[str, Any]) -> str | None:
        env = self._link(ch, "EnvironmentMetrics")
        if env is None:
            return "no EnvironmentMetrics"
        pw = self.get(env).get("PowerWatts")
        if not isinstance(pw, dict):
            return "EnvironmentMetrics has no PowerWatts"
        src = pw.get("DataSourceUri")
        if isinstance(src, str):
            try:
                self._use_sensor(src, self.get(src), SOURCE_ENV_SENSOR)
                return None
            except ResourceMissing:
                if "Reading" not in pw:
                    return f"EnvironmentMetrics.PowerWatts.DataSourceUri {src} is missing"
                self._note(f"redfish {self.url}: EnvironmentMetrics.PowerWatts.DataSourceUri {src} is missing "
                           "(HTTP 404); its inline Reading is read instead, without a ReadingTime")
        if "Reading" not in pw:
            return "EnvironmentMetrics.PowerWatts has no Reading"
        self.env_uri, self.source, self.source_uri = env, SOURCE_ENV_INLINE, env
        return None

    def _find_sensors(self, ch: dict[str, Any]) -> str | None:
        coll = self._link(ch, "Sensors")
        if coll is None:
            return "no Sensors"
        power: list[tuple[str, dict[str, Any]]] = []
        for m in self.get(coll).get("Members", []):
            uri = m.get("@odata.id") if isinstance(m, dict) else None
            if isinstance(uri, str):
                s = self.get(uri)
                if s.get("ReadingType") == "Power":
                    power.append((uri, s))
        # the node's own sensor: PhysicalContext Chassis (ElectricalContext Total first), else the one power
        # sensor that names no part of the node (a CPU's or a supply's power is not the node's)
        chassis = sorted((p for p in power if p[1].get("PhysicalContext") == "Chassis"),
                         key=lambda p: p[1].get("ElectricalContext") != "Total")
        whole = [p for p in power if p[1].get("PhysicalContext") not in _PART_CONTEXTS]
        pick = chassis[0] if chassis else whole[0] if len(whole) == 1 else None
        if pick is None:
            names = ", ".join(f"{u.rstrip('/').split('/')[-1]} ({s.get('PhysicalContext', 'no context')})"
                              for u, s in power) or "none"
            return f"no Sensor of ReadingType Power for the chassis (power sensors: {names}; {coll} lists them)"
        totals = [p for p in chassis if p[1].get("ElectricalContext") == pick[1].get("ElectricalContext")]
        if len(totals) > 1:
            self._note(f"redfish {self.url}: {len(totals)} chassis power sensors "
                       f"({', '.join(u.rstrip('/').split('/')[-1] for u, _ in totals)}); the first, {pick[0]}, is "
                       "read (give power_source or chassis in a profile to choose another)")
        self._use_sensor(pick[0], pick[1], SOURCE_SENSOR)
        return None

    def _find_powersubsystem(self, ch: dict[str, Any]) -> str | None:
        sub = self._link(ch, "PowerSubsystem")
        if sub is None:
            return "no PowerSubsystem"
        psus = self._link(self.get(sub), "PowerSupplies")
        if psus is None:                      # DMTF's public-power-shelf links its Sensors collection here
            return f"PowerSubsystem {sub} has no PowerSupplies"
        metrics: list[str] = []
        for m in self.get(psus).get("Members", []):
            uri = m.get("@odata.id") if isinstance(m, dict) else None
            if not isinstance(uri, str):
                continue
            psu = self.get(uri)
            state = (psu.get("Status") or {}).get("State") if isinstance(psu.get("Status"), dict) else None
            name = uri.rstrip("/").split("/")[-1]
            # DMTF Resource.State: an empty bay, a supply disabled or unavailable (offline) delivers nothing, so
            # draws nothing worth a watt, and Metrics it still serves are stale: left out of the sum
            if state in _NO_POWER_STATES:
                if self._link(psu, "Metrics") is not None:
                    self._note(f"redfish {self.url}: power supply {name} is {state}: its Metrics are left out "
                               "of the node's power")
                continue
            link = self._link(psu, "Metrics")
            if link is None:
                if state in ("StandbyOffline", "StandbySpare"):   # a standby supply unread: it carries no load
                    self._note(f"redfish {self.url}: power supply {name} is {state} and has no Metrics: "
                               "left out of the node's power")
                    continue
                # a present, working supply we cannot read: the sum would fall short
                return f"power supply {name} is present but has no Metrics"
            metrics.append(link)
        if not metrics:
            return "PowerSubsystem has no power supply present"
        for link in metrics:
            if not isinstance(self.get(link).get("InputPowerWatts"), dict):
                return f"{link} has no InputPowerWatts"
        self.psu_metrics, self.source, self.source_uri = metrics, SOURCE_SUBSYSTEM, metrics[0]
        return None

    def _find_power(self, ch: dict[str, Any]) -> str | None:
        if self.power_uri is None:
            return "no Power"
        power = self.get(self.power_uri)
        # no PowerControl (DMTF's public-bladed enclosure lists only its supplies), or a well-formed member without
        # the key (OpenBMC's bmcweb without a total power sensor): no total here, another chassis may have one; a
        # malformed PowerControl is taken, and read() says the BMC misbehaves
        if "PowerControl" not in power:
            return "Power has no PowerControl"
        pc = power["PowerControl"]
        if not isinstance(pc, list) or not pc or not all(isinstance(x, dict) for x in pc):
            return f"Power.PowerControl is {json.dumps(pc)[:40]}, no list of power readings"
        # the node's entry: PhysicalContext Chassis or none (a CPU's or a supply's is a part's)
        whole = [k for k, x in enumerate(pc) if x.get("PhysicalContext") in _WHOLE_CONTEXTS
                 and "PowerConsumedWatts" in x]
        if not whole:
            ctx = ", ".join(str(x.get("PhysicalContext")) for x in pc)
            return f"Power.PowerControl has no PowerConsumedWatts for the chassis (PhysicalContext: {ctx})"
        self.power_index = whole[0]
        self.source, self.source_uri = SOURCE_POWER, self.power_uri
        return None

    def _use_sensor(self, uri: str, sensor: dict[str, Any], source: str) -> None:
        self.sensor_uri, self.source, self.source_uri = uri, source, uri
        si = sensor.get("SensingInterval")
        self.sensing_interval_s = None
        if si is not None:
            try:
                v = iso_duration_s(si) if isinstance(si, str) else math.nan
            except ValueError:
                v = math.nan
            if math.isfinite(v) and v > 0:
                self.sensing_interval_s = v
            else:                           # "1s", "PT-1S", "PT0S", 5: no period; the meter assumes one
                self._note(f"redfish {self.url}{uri}: SensingInterval {json.dumps(si)[:40]} is not a positive ISO "
                           "8601 duration (PT1S); ignored (the update period is taken from update_period_s, "
                           "else the readings, else 1 s)")

    def describe(self) -> dict[str, Any]:
        """Which source is read, for summaries and sidecars: ``source``, its ``uri`` (every supply's metrics for
        PowerSubsystem), the chassis, and whether the readings carry a ReadingTime."""
        uris = self.psu_metrics if self.source == SOURCE_SUBSYSTEM else [self.source_uri]
        # true only where every reading read carried a ReadingTime (a Sensor may lack one: DMTF public-pdu)
        timed = self.sensor_uri is not None and self.timed_reads is not False
        return {"source": self.source, "uri": uris if len(uris) > 1 else uris[0], "chassis": self.chassis_id,
                "reading_time": timed}

    def read_power_control(self) -> PowerReading:
        """``Power.PowerControl[0]``: PowerConsumedWatts (and its PowerMetrics)."""
        if self.power_uri is None:
            raise DeviceError(f"redfish {self.url}: chassis {self.chassis_id} has no Power resource")
        pc = self.get(self.power_uri).get("PowerControl")
        where = f"redfish {self.url}{self.power_uri}"
        if not (isinstance(pc, list) and pc and isinstance(pc[0], dict)):
            raise DeviceError(f"{where}: PowerControl is {json.dumps(pc)[:60]}, not a list of power readings: "
                              "the BMC misbehaves")
        first = pc[self.power_index] if self.power_index < len(pc) and isinstance(pc[self.power_index], dict) else None
        if first is None:
            raise DeviceError(f"{where}: PowerControl has no entry {self.power_index}: the BMC misbehaves")
        w = watts(first.get("PowerConsumedWatts"), f"{where}: PowerControl[{self.power_index}].PowerConsumedWatts")
        metrics = first.get("PowerMetrics") or {}
        avg, iv = metrics.get("AverageConsumedWatts"), metrics.get("IntervalInMin")
        if isinstance(iv, (int, float)):
            self.interval_min = float(iv)
        return PowerReading(w, None, float(avg) if isinstance(avg, (int, float)) else None,
                            float(iv) if isinstance(iv, (int, float)) else None)

    def read(self) -> PowerReading:
        """The node's power now, from the source discover() found."""
        if self.sensor_uri is not None:
            s = self.get(self.sensor_uri)
            where = f"redfish {self.url}{self.sensor_uri}"
            w = sensor_watts(s, where)
            rt = s.get("ReadingTime")
            t: float | None = None
            if rt is not None:
                try:
                    t = iso_time_s(rt)
                except (ValueError, TypeError, OverflowError):
                    raise DeviceError(f"{where}: ReadingTime {json.dumps(rt)[:40]} is not an ISO 8601 time: the "
                                      "BMC misbehaves") from None
            self.timed_reads = (self.timed_reads is not False) and t is not None
            return PowerReading(w, t)
        if self.source == SOURCE_ENV_INLINE and self.env_uri is not None:
            pw = self.get(self.env_uri).get("PowerWatts")
            return PowerReading(watts(pw.get("Reading") if isinstance(pw, dict) else pw,
                                      f"redfish {self.url}{self.env_uri}: PowerWatts.Reading"))
        if self.source == SOURCE_SUBSYSTEM:
            total = 0.0
            for link in self.psu_metrics:
                ip = self.get(link).get("InputPowerWatts")
                total += (sensor_watts(ip, f"redfish {self.url}{link}: InputPowerWatts") if isinstance(ip, dict)
                          else watts(ip, f"redfish {self.url}{link}: InputPowerWatts.Reading"))
            return PowerReading(round(total, 6))     # 1037.4, not 1037.4000000000003
        return self.read_power_control()
