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

import base64
import http.client
import json
import logging
import math
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.stream.rate_note import WARNING

log = logging.getLogger("archline.powermon")


class BmcUnavailable(DeviceError):
    """The BMC answered 5xx or did not answer in time: one lost poll, not a dead meter."""


class ResourceMissing(DeviceError):
    """HTTP 404: a link that leads nowhere (discovery tries the next power source)."""


@dataclass(frozen=True)
class PowerReading:
    power_w: float
    reading_time_s: float | None = None     #: the BMC's ReadingTime (seconds since the epoch), where it gives one
    average_w: float | None = None          #: PowerMetrics.AverageConsumedWatts over interval_min
    interval_min: float | None = None


_ISO_DURATION = re.compile(r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?"
                           r"(?:(\d+(?:\.\d+)?)S)?)?$")


MAX_POWER_W = 1e6     #: no node a BMC meters draws a megawatt: a larger reading is a broken sensor, not power


def watts(value: Any, where: str) -> float:
    """A BMC's power field as watts; BmcUnavailable when null (the host may be off: one lost poll), DeviceError
    (exit 4, the meter misbehaves) for anything no meter can read (text, NaN, infinity, negative, above 1 MW), saying
    what was there: such a reading is never integrated."""
    if value is None:
        raise BmcUnavailable(f"{where} is null (host off?)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DeviceError(f"{where} is {json.dumps(value)[:60]}, not a number of watts: the BMC misbehaves")
    w = float(value)
    if not (math.isfinite(w) and 0 <= w <= MAX_POWER_W):
        raise DeviceError(f"{where} is {w:g} W, not a power a node can draw (0 to {MAX_POWER_W:g} W): "
                          "the BMC misbehaves")
    return w


#: ReadingUnits a power reading may carry (UCUM): the factor to watts
_UNITS_W = {"W": 1.0, "kW": 1e3, "mW": 1e-3}


def sensor_watts(sensor: dict[str, Any], where: str) -> float:
    """A Sensor's ``Reading`` in watts, by its ``ReadingUnits`` (W, kW, mW; absent: W); another unit is refused
    naming it (DeviceError: a power sensor in volts is no power)."""
    units = sensor.get("ReadingUnits")
    factor = 1.0 if units is None else _UNITS_W.get(units) if isinstance(units, str) else None
    if factor is None:
        raise DeviceError(f"{where}: ReadingUnits is {json.dumps(units)[:40]}, not W, kW or mW: the BMC misbehaves "
                          "(or give power_source to read another source)")
    w = watts(sensor.get("Reading"), f"{where}: Reading")
    # the BMC's resolution: a kW reading of 0.374 is 374 W, not 374.00000000000006
    return watts(round(w * factor, 6), f"{where}: Reading ({units})") if factor != 1.0 else w


def mask_url(url: str) -> str:
    """``url`` fit to print: credentials in it (``http://user:pw@host``) become ``user:***@``; never echo a password."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host_part, slash, tail = rest.partition("/")
    if "@" not in host_part:
        return url
    userinfo, _, host = host_part.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}{slash}{tail}"


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``http://user:pw@host:port/x`` -> (``http://host:port/x``, user, pw): credentials never stay in an address
    that messages print. A URL that cannot be parsed is a MeterError naming it (masked)."""
    try:
        u = urlsplit(url)
        u.port                                     # noqa: B018  (raises ValueError on a bad port)
    except ValueError as e:
        raise MeterError(f"{mask_url(url)!r} is not a valid address ({e})") from None
    if u.username is None and u.password is None:
        return url, None, None
    netloc = u.netloc.rpartition("@")[2]
    return (urlunsplit((u.scheme, netloc, u.path, u.query, u.fragment)), unquote(u.username or ""),
            None if u.password is None else unquote(u.password))


def iso_duration_s(text: str) -> float:
    """``PT0.25S``, ``PT1M``, ``P1DT2H`` -> seconds (the Redfish Duration subset of ISO 8601)."""
    m = _ISO_DURATION.match(text.strip())
    if m is None or not any(m.groups()):
        raise ValueError(f"not an ISO 8601 duration: {text!r}")
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def iso_time_s(text: str) -> float:
    """A Redfish DateTime (``2026-01-01T00:00:01.250+00:00`` or ``...Z``) -> seconds since the epoch; ValueError
    for anything else (``yesterday``, ``""``)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``: where credentials may go."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return u.scheme, (u.hostname or "").lower(), port


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the BMC's own origin: urllib would send the Authorization header (the BMC
    password) to whatever host a redirect names."""

    def __init__(self, base: str) -> None:
        self.base = base

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        target = urljoin(req.full_url, newurl)
        if origin(target) != origin(self.base):
            raise DeviceError(f"redfish {mask_url(req.full_url)}: HTTP {code} redirects to another origin "
                              f"({mask_url(target)}); refused, so the credentials go nowhere else: give that "
                              "address as the meter's url if it is the BMC")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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


class RedfishClient:
    """One Redfish service: ``url`` is its root host (``http://127.0.0.1:8000``)."""

    def __init__(self, url: str, username: str | None = None, password: str | None = None,
                 chassis: str | None = None, timeout_s: float = 5.0, verify: bool | str = True,
                 shape: str | None = None) -> None:
        shown = mask_url(url)
        if not url.startswith(("http://", "https://")):
            raise MeterError(f"redfish: {shown!r} is not an http:// or https:// address")
        if any(c.isspace() or ord(c) < 32 for c in url):
            raise MeterError(f"redfish: {shown!r} is not a valid address (it holds a space or control character)")
        clean, url_user, url_password = split_credentials(url)
        if urlsplit(clean).query or urlsplit(clean).fragment:     # it would be glued onto every resource's path
            raise MeterError(f"redfish: {shown!r}: a Redfish address takes no query or fragment (?, #); give "
                             "http[s]://[USER:PASSWORD@]HOST[:PORT], and the rest in a profile's [[meters]] entry")
        if username is None and url_user:           # credentials in the URL: used, never shown again
            username, password = url_user, password if password is not None else url_password
        self.url = clean.rstrip("/")
        if self.url.endswith("/redfish/v1"):
            self.url = self.url[: -len("/redfish/v1")]
        if not urlsplit(self.url).hostname:
            raise MeterError(f"redfish: {shown!r} names no host (http://HOST[:PORT])")
        self.timeout_s = timeout_s
        self._auth = (None if username is None else
                      "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode())
        self._ctx: ssl.SSLContext | None = None
        if self.url.startswith("https://"):
            # BMCs ship self-signed certificates: a CA file, or an explicit opt-out
            self._ctx = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
            if verify is False:
                self._ctx.check_hostname = False
                self._ctx.verify_mode = ssl.CERT_NONE
                log.warning("%sredfish %s: verify = false: the BMC's certificate is not checked (anyone between "
                            "here and it could read the password); export SSL_CERT_FILE instead", WARNING, self.url)
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self.url),
                                                   urllib.request.HTTPSHandler(context=self._ctx))
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
        self.notes: list[str] = []          #: what discovery warned about (said once; kept in the summary)
        self.timed_reads: bool | None = None    #: every reading so far carried a ReadingTime (None: none read)
        self.open_failures = 0              #: discovery's own reading unanswered (5xx, null): not a poll

    def _note(self, text: str) -> None:
        """Kept once: a recording's window warnings carry it (meter record prints them, the summary keeps them)."""
        if text not in self.notes:
            self.notes.append(text)

    def get(self, path: str) -> dict[str, Any]:
        # a link may be absolute (DataSourceUri "http://bmc/redfish/v1/..."): joined, never glued onto the base
        full = urljoin(self.url + "/", path)
        if origin(full) != origin(self.url):
            raise DeviceError(f"redfish {self.url}: a link names another origin ({mask_url(full)}); not followed "
                              "(the credentials go to the BMC only)")
        path = urlsplit(full).path + (f"?{urlsplit(full).query}" if urlsplit(full).query else "")
        req = urllib.request.Request(full, headers={"Accept": "application/json"})
        if self._auth is not None and path.rstrip("/") not in ("/redfish/v1", "/redfish"):
            req.add_header("Authorization", self._auth)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            if e.code >= 500:
                raise BmcUnavailable(f"redfish {self.url}{path}: HTTP {e.code}") from None
            if e.code in (401, 403):
                raise DeviceError(f"redfish {self.url}{path}: HTTP {e.code} (check the username and password: a "
                                  "profile's [[meters]] username and the environment variable its password_env "
                                  "names, or http://USER:PASSWORD@HOST in the address)") from None
            if e.code == 404:
                raise ResourceMissing(f"redfish {self.url}{path}: HTTP 404") from None
            raise DeviceError(f"redfish {self.url}{path}: HTTP {e.code}") from None
        except (http.client.InvalidURL, ValueError) as e:     # an address http.client cannot use
            raise MeterError(f"redfish {self.url}{path}: not a valid address ({e})") from None
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, ssl.SSLCertVerificationError):     # no poll will fare better: say how to fix it
                raise DeviceError(f"redfish {self.url}: the BMC's certificate failed verification "
                                  f"({reason.verify_message}); export SSL_CERT_FILE=PATH naming a PEM file of the "
                                  "BMC's certificate (or of the CA that signed it) and run again") from None
            raise BmcUnavailable(f"redfish {self.url}{path}: no answer ({reason})") from None
        try:
            out = json.loads(body)
        except ValueError:
            raise DeviceError(f"redfish {self.url}{path}: the reply is not JSON ({body[:40]!r}...): the BMC "
                              "misbehaves, or the address is not its Redfish service (check the URL)") from None
        if not isinstance(out, dict):
            raise DeviceError(f"redfish {self.url}{path}: the reply is not a JSON object: the BMC misbehaves")
        return out

    @staticmethod
    def _link(obj: dict[str, Any], key: str) -> str | None:
        v = obj.get(key)
        return v.get("@odata.id") if isinstance(v, dict) and isinstance(v.get("@odata.id"), str) else None

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
