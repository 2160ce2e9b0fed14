"""An emulated BMC's Redfish service: a real HTTP server on 127.0.0.1 (port 0: the kernel picks one).

It serves a small DMTF-style mockup (service root, Chassis collection, one chassis ``1U`` with ``Power``,
``EnvironmentMetrics`` and a ``Sensors/TotalPower`` sensor) whose power reading is the emulated node's power seen
through a :class:`~archline.powermon.emulator.sensor.SensorModel` (a new reading every update period, each the mean
over its window, lagged). ``shape`` serves one of the power sources a current BMC may offer instead (the chassis
links only that one): ``EnvironmentMetrics`` (``PowerWatts.Reading`` inline, no ``DataSourceUri``), ``Sensors``
(``TotalPower`` beside a CPU power sensor), ``PowerSubsystem`` (two supplies sharing the node's power, a third bay
absent), ``Power`` (``PowerControl`` alone). Faults: a share of requests answered HTTP 503, and stale stretches
where the BMC keeps serving its last reading. Its ``Name`` fields say emulated.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from archline.powermon.bmc.redfish_sources import SHAPES  # the power sources the emulated chassis can serve alone
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.sensor import SensorModel

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)   # the emulated BMC's clock reads EPOCH + device time
CHASSIS = "1U"


@dataclass(frozen=True)
class RedfishFaults:
    """``http_503_every``: every Nth request for a reading is answered 503 (0: never); ``stale``: device-time
    spans ``(t0_s, t1_s)`` in which the BMC serves the reading it had at t0_s (its sensor task hung);
    ``http_503_spans``: device-time spans in which every request for a reading is answered 503 (an outage)."""

    http_503_every: int = 0
    stale: tuple[tuple[float, float], ...] = ()
    http_503_spans: tuple[tuple[float, float], ...] = ()


#: the share of the node's power each emulated supply's InputPowerWatts carries (PowerSubsystem), and the CPU
#: sensor's share (Sensors: a part's power beside the node's, which the client must not take)
PSU_SHARES = (0.55, 0.45)
CPU_SHARE = 0.4


def mockup(reading_w: float | None, reading_time: str | None, interval: str, average_w: float | None,
           shape: str | None = None) -> dict[str, dict[str, Any]]:
    """The resources by path (without a trailing slash); ``shape``: only that power source is linked."""
    res = _classic(reading_w, reading_time, interval, average_w)
    if shape is None:
        return res
    base = "/redfish/v1"
    ch = f"{base}/Chassis/{CHASSIS}"
    links = {"EnvironmentMetrics": "EnvironmentMetrics", "Sensors": "Sensors", "PowerSubsystem": "PowerSubsystem",
             "Power": "Power"}
    for key in links:
        if key != shape:
            res[ch].pop(key, None)
    if shape == "EnvironmentMetrics":         # the Reading inline: no Sensor behind it
        res[f"{ch}/EnvironmentMetrics"]["PowerWatts"].pop("DataSourceUri")
    elif shape == "Sensors":
        cpu = None if reading_w is None else round(CPU_SHARE * reading_w, 3)
        res[f"{ch}/Sensors"]["Members"].insert(0, {"@odata.id": f"{ch}/Sensors/CPU1Power"})
        res[f"{ch}/Sensors"]["Members@odata.count"] = 2
        res[f"{ch}/Sensors/CPU1Power"] = {**res[f"{ch}/Sensors/TotalPower"], "@odata.id": f"{ch}/Sensors/CPU1Power",
                                          "Id": "CPU1Power", "Name": "CPU 1 power (emulated)", "Reading": cpu,
                                          "PhysicalContext": "CPU"}
    elif shape == "PowerSubsystem":
        ps = f"{ch}/PowerSubsystem"
        res[ch]["PowerSubsystem"] = {"@odata.id": ps}
        res[ps] = {"@odata.id": ps, "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem", "Id": "PowerSubsystem",
                   "Name": "Power subsystem (emulated)", "PowerSupplies": {"@odata.id": f"{ps}/PowerSupplies"}}
        bays = [f"{ps}/PowerSupplies/Bay{k + 1}" for k in range(len(PSU_SHARES) + 1)]
        res[f"{ps}/PowerSupplies"] = {"@odata.id": f"{ps}/PowerSupplies", "Name": "Power supplies",
                                      "Members@odata.count": len(bays), "Members": [{"@odata.id": b} for b in bays]}
        for k, bay in enumerate(bays):
            present = k < len(PSU_SHARES)
            res[bay] = {"@odata.id": bay, "@odata.type": "#PowerSupply.v1_5_0.PowerSupply", "Id": f"Bay{k + 1}",
                        "Status": {"State": "Enabled" if present else "Absent"},
                        **({"Metrics": {"@odata.id": f"{bay}/Metrics"}} if present else {})}
            if present:
                w = None if reading_w is None else round(PSU_SHARES[k] * reading_w, 3)
                res[f"{bay}/Metrics"] = {"@odata.id": f"{bay}/Metrics", "Id": "Metrics",
                                         "@odata.type": "#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics",
                                         "InputPowerWatts": {"Reading": w}}
    return res


def _classic(reading_w: float | None, reading_time: str | None, interval: str, average_w: float | None
             ) -> dict[str, dict[str, Any]]:
    base = "/redfish/v1"
    ch = f"{base}/Chassis/{CHASSIS}"
    return {
        base: {"@odata.id": f"{base}/", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot", "Id": "RootService",
               "Name": "Root Service (archline emulated BMC)", "RedfishVersion": "1.6.0",
               "Chassis": {"@odata.id": f"{base}/Chassis"}},
        f"{base}/Chassis": {"@odata.id": f"{base}/Chassis", "Name": "Chassis Collection",
                            "Members@odata.count": 1, "Members": [{"@odata.id": ch}]},
        ch: {"@odata.id": ch, "@odata.type": "#Chassis.v1_15_0.Chassis", "Id": CHASSIS,
             "Name": "Emulated node", "ChassisType": "RackMount", "Power": {"@odata.id": f"{ch}/Power"},
             "EnvironmentMetrics": {"@odata.id": f"{ch}/EnvironmentMetrics"},
             "Sensors": {"@odata.id": f"{ch}/Sensors"}},
        f"{ch}/Power": {"@odata.id": f"{ch}/Power", "@odata.type": "#Power.v1_5_0.Power", "Id": "Power",
                        "Name": "Power", "PowerControl": [{
                            "@odata.id": f"{ch}/Power#/PowerControl/0", "MemberId": "0",
                            "Name": "System Input Power", "PowerConsumedWatts": reading_w,
                            "PowerMetrics": {"IntervalInMin": 1, "AverageConsumedWatts": average_w},
                            "Status": {"State": "Enabled", "Health": "OK"}}]},
        f"{ch}/EnvironmentMetrics": {"@odata.id": f"{ch}/EnvironmentMetrics",
                                     "@odata.type": "#EnvironmentMetrics.v1_2_0.EnvironmentMetrics",
                                     "Id": "EnvironmentMetrics", "Name": "Chassis environment metrics",
                                     "PowerWatts": {"Reading": reading_w,
                                                    "DataSourceUri": f"{ch}/Sensors/TotalPower"}},
        f"{ch}/Sensors": {"@odata.id": f"{ch}/Sensors", "Name": "Sensors", "Members@odata.count": 1,
                          "Members": [{"@odata.id": f"{ch}/Sensors/TotalPower"}]},
        f"{ch}/Sensors/TotalPower": {"@odata.id": f"{ch}/Sensors/TotalPower", "@odata.type": "#Sensor.v1_2_0.Sensor",
                                     "Id": "TotalPower", "Name": "Total node power (emulated)",
                                     "ReadingType": "Power", "ReadingUnits": "W", "Reading": reading_w,
                                     "ReadingTime": reading_time, "SensingInterval": interval,
                                     "PhysicalContext": "Chassis", "Implementation": "Synthesized"},
    }


def _iso_duration(s: float) -> str:
    return f"PT{s:.6g}S"


class RedfishEmulator:
    """The node's power (``power_w(device times) -> W``) through ``sensor`` on a threaded HTTP server.

    ``credentials``: {user: password} enforced by HTTP Basic (the service root is open); None: no auth. The
    sensor's periods are device seconds, and so is everything it serves: ``ReadingTime`` is EPOCH + device time and
    ``SensingInterval`` the device's update period (the BMC's own clock is the device's); a meter that polls it at
    a speed other than 1 is told the speed and converts to host seconds itself (``BmcMeter(speed=...)``)."""

    def __init__(self, power_w: Callable[[Any], Any], sensor: SensorModel, timeline: Timeline,
                 faults: RedfishFaults | None = None, credentials: dict[str, str] | None = None,
                 shape: str | None = None) -> None:
        if shape is not None and shape not in SHAPES:
            raise ValueError(f"shape {shape!r} is not one of {', '.join(SHAPES)}")
        self.shape = shape
        self.power_w, self.sensor, self.timeline = power_w, sensor, timeline
        self.faults = faults or RedfishFaults()
        self.credentials = credentials
        self.requests = 0
        self.served_503 = 0
        self.stale_served = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- what the BMC shows at device time t -------------------------------------------------------------------
    def reading(self, t_dev_s: float) -> tuple[float, float, bool]:
        """(watts, device time of that reading, stale) visible at ``t_dev_s``."""
        stale = False
        for a, b in self.faults.stale:
            if a <= t_dev_s < b:
                t_dev_s, stale = a, True
        p = self.sensor.update_period_s
        tk = np.floor(t_dev_s / p + 1e-9) * p
        return self.sensor.reading_at(self.power_w, float(tk)), float(tk), stale

    def resource(self, path: str) -> tuple[int, dict[str, Any] | None]:
        path = path.split("?", 1)[0].rstrip("/") or "/"
        dynamic = path.endswith(("/Power", "/EnvironmentMetrics", "/Sensors/TotalPower", "/Sensors/CPU1Power",
                                 "/Metrics"))
        w: float | None = None
        rt: str | None = None
        avg: float | None = None
        if dynamic:
            with self._lock:
                self.requests += 1
                n = self.requests
            t_now = self.timeline.emulated_time_s()
            outage = any(a <= t_now < b for a, b in self.faults.http_503_spans)
            if outage or (self.faults.http_503_every and n % self.faults.http_503_every == 0):
                with self._lock:
                    self.served_503 += 1
                return 503, {"error": {"code": "Base.1.0.ServiceTemporarilyUnavailable",
                                       "message": "emulated BMC busy"}}
            w, tk, stale = self.reading(self.timeline.emulated_time_s())
            if stale:
                with self._lock:
                    self.stale_served += 1
            rt = (EPOCH + timedelta(seconds=tk)).isoformat()
            avg = w
        res = mockup(w, rt, _iso_duration(self.sensor.update_period_s), avg, self.shape).get(path)
        return (200, res) if res is not None else (404, {"error": {"code": "Base.1.0.ResourceMissingAtURI",
                                                                   "message": path}})

    # --- the server ---------------------------------------------------------------------------------------------
    def start(self) -> RedfishEmulator:
        self._server, self._thread = serve_json(self.resource, self._authorised if self.credentials else None)
        return self

    def _authorised(self, header: str) -> bool:
        if not header.startswith("Basic "):
            return False
        try:
            user, _, pw = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return self.credentials is not None and self.credentials.get(user) == pw

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Redfish emulator is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def serve_json(resource: Callable[[str], tuple[int, Any]], authorised: Callable[[str], bool] | None = None
               ) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A threaded HTTP server on 127.0.0.1 (a free port) answering GET with ``resource(path) -> (status, JSON)``;
    with ``authorised``, every path but the service root needs an Authorization header it accepts."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if authorised is not None and path not in ("/redfish/v1", "/redfish"):
                if not authorised(self.headers.get("Authorization", "")):
                    self._send(401, {"error": {"code": "Base.1.0.InsufficientPrivilege"}})
                    return
            code, body = resource(self.path)
            self._send(code, body)

        def _send(self, code: int, body: Any) -> None:
            # bytes: served as they are (a BMC's HTML page); a 3xx: body {"Location": URL}, as a redirect
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            if 300 <= code < 400 and isinstance(body, dict) and "Location" in body:
                self.send_header("Location", body["Location"])
            self.send_header("Content-Type", "text/html" if isinstance(body, bytes) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: no request log on stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="redfish server",
                              daemon=True)
    thread.start()
    return server, thread


class StaticRedfish:
    """A mockup directory served as sushy-static does: ``GET /redfish/v1/<path>`` -> ``DIR/redfish/v1/<path>/
    index.json`` (read on each request, so a test may rewrite a reading between polls)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._server, self._thread = serve_json(self.resource)

    def resource(self, path: str) -> tuple[int, Any]:
        rel = path.split("?", 1)[0].strip("/")
        f = (self.root / rel / "index.json").resolve()
        if self.root.resolve() not in f.parents or not f.is_file():
            return 404, {"error": {"code": "Base.1.0.ResourceMissingAtURI", "message": path}}
        try:
            return 200, json.loads(f.read_text())
        except ValueError:          # a page that is no JSON (a BMC's login page): served as it is
            return 200, f.read_bytes()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
