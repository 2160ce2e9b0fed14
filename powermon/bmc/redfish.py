"""A Redfish client for node power (docs: ../shared/reference/bmc_power.md): standard library HTTP only.

It finds the chassis (``spec.chassis`` or the first member of ``/redfish/v1/Chassis`` that has a power reading) and
its power source, trying on each chassis, in this order (current schemas first, then the deprecated one):

1. ``EnvironmentMetrics.PowerWatts``: the Sensor its ``DataSourceUri`` names, else its inline ``Reading``;
2. ``Sensors``: the member of ``ReadingType`` ``Power`` whose ``PhysicalContext`` is the chassis (else the only
   power sensor that names no part);
3. ``PowerSubsystem``: the sum of ``PowerSupplies/*/Metrics`` ``InputPowerWatts`` over every supply present
   (refused where a present supply has no Metrics: the sum would not be the node's power);
4. ``Power.PowerControl[0].PowerConsumedWatts`` (with ``PowerMetrics`` where given).

A Sensor's ``ReadingTime`` tells one reading from the next exactly, and its ``SensingInterval`` is the update period;
the other shapes carry no time. Which one is read is :attr:`RedfishClient.source` (said in ``meter record``'s summary
and a recording's sidecar). Credentials go by HTTP Basic on every request (no session to leak on a BMC with few
session slots); the service root needs none.
"""

from __future__ import annotations

from typing import Any

from archline.powermon.bmc.reading import BmcUnavailable
from archline.powermon.bmc.redfish_http import ResourceMissing
from archline.powermon.bmc.redfish_sources import NODE_CHASSIS_TYPES, SHAPES, RedfishSources
from archline.powermon.errors import DeviceError


class RedfishClient(RedfishSources):
    """One Redfish service: ``url`` is its root host (``http://127.0.0.1:8000``); :meth:`discover` finds its
    chassis and power source, :meth:`read` reads it."""

    # set in RedfishSources.__init__; stated here for mypy, which sees the base class through an import it reads as Any
    chassis_id: str | None
    psu_metrics: list[str]

    def discover(self) -> RedfishClient:
        """Find the chassis and its power source (the module docstring's order); DeviceError when there is none,
        naming what each chassis lacked."""
        root = self.get("/redfish/v1/")
        # archline's own emulated BMC says so in its service root's Name: its readings are labelled emulated
        self.emulated = "emulated" in str(root.get("Name", "")).lower()
        coll_uri = self._link(root, "Chassis") or "/redfish/v1/Chassis"
        members: list[str] = [m["@odata.id"] for m in self.get(coll_uri).get("Members", [])
                              if isinstance(m, dict) and isinstance(m.get("@odata.id"), str)]
        if self.chassis_id is not None:
            named = [u for u in members if u.rstrip("/").split("/")[-1] == self.chassis_id]
            # a chassis the collection leaves out (a card under another chassis) may still be there
            members = named or [f"{coll_uri.rstrip('/')}/{self.chassis_id}"]
        chassis: list[tuple[str, dict[str, Any] | None, str]] = []
        for uri in members:
            try:
                chassis.append((uri, self.get(uri), ""))
            except (ResourceMissing, DeviceError) as e:   # a bad member is passed over, and said why
                if isinstance(e, BmcUnavailable):
                    raise
                chassis.append((uri, None, str(e).rpartition(": ")[2]))
        if self.chassis_id is not None and chassis[0][1] is None:
            raise DeviceError(f"redfish {self.url}: no chassis {self.chassis_id!r} ({chassis[0][2]}; see "
                              f"{coll_uri})")
        # a node's chassis first (RackMount, Blade, ...): a card's or a drive drawer's power is not the node's
        parts = [c for c in chassis if c[1] is not None and not self._is_node(c[1])]
        order = [c for c in chassis if c not in parts] + parts
        why: list[str] = []
        for uri, ch, bad in order:
            cid = uri.rstrip("/").split("/")[-1]
            if ch is None:
                why.append(f"{cid}: {bad}")
                continue
            lacks = self._try_chassis(ch)
            if lacks is None:
                self.chassis_id = cid
                if not self._is_node(ch):
                    self._note(f"redfish {self.url}: chassis {cid} is a {ch.get('ChassisType')}, not a node; its "
                               "power is read as the node's (no node chassis has a power reading; give chassis "
                               "in a profile to choose)")
                return self
            why.append(f"{cid}: {'; '.join(lacks)}")
        raise DeviceError(f"redfish {self.url}: no chassis with a power reading ({' | '.join(why) or 'no chassis'})")

    @staticmethod
    def _is_node(ch: dict[str, Any]) -> bool:
        t = ch.get("ChassisType")
        return t is None or t in NODE_CHASSIS_TYPES

    def _try_chassis(self, ch: dict[str, Any]) -> list[str] | None:
        """Each source on chassis ``ch`` in turn (a missing or malformed resource is what that source lacks); the
        one found is read once (a reading no meter can use: DeviceError, one line at open); None when one is found,
        else what each lacked."""
        self.power_uri = self._link(ch, "Power")
        self.sensor_uri = self.env_uri = None
        self.psu_metrics = []
        lacks = []
        for shape in SHAPES if self.shape is None else (self.shape,):
            try:
                found = getattr(self, f"_find_{shape.lower()}")(ch)
            except BmcUnavailable:
                raise
            except DeviceError as e:        # a link to nothing, a malformed resource: this source is not there
                found = str(e)
            if found is None:
                try:     # one reading now: a reading no meter can use is one line at open, not mid-recording
                    self.read()
                except BmcUnavailable:          # null now (host off?) or a 5xx: the polls count later ones
                    self.open_failures += 1
                self.timed_reads = None
                return None
            self.sensor_uri = self.env_uri = None
            self.psu_metrics = []
            lacks.append(found)
        return lacks

