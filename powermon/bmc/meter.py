"""The node BMC kinds' driver (``kind = "redfish"`` or ``"ipmi"``, powermon/spec.py's dispatch): a profile's
``[[meters]]`` entry (or ``--meter redfish:URL``) opened, or emulated, as a :class:`~archline.powermon.bmc.bmc_meter.
BmcMeter`. The update period is the one stated (``update_period_s``), else the BMC's own (Redfish's SensingInterval,
DCMI's statistics period), else 1 s (assumed, and said); a real BMC is polled no faster than every MIN_POLL_S.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.powermon.bmc.bmc_meter import POLLS_PER_PERIOD, BmcMeter, spec_channel
from archline.powermon.bmc.bound import RESOLUTION_W
from archline.powermon.bmc.redfish import RedfishClient
from archline.powermon.bmc.redfish_sources import SOURCE_SUBSYSTEM
from archline.powermon.counters.emulated import Timeline, device_power
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import MeterError

if TYPE_CHECKING:
    from archline.powermon.bmc.emulator import RedfishFaults
    from archline.powermon.emulator.power import PowerCallable, PowerSource
    from archline.powermon.spec import MeterSpec

DEFAULT_PERIOD_S = 1.0          # "poll no faster than 1 Hz" (bmc_power.md): a BMC that does not say updates ~1 s
#: a real BMC is polled no faster than every MIN_POLL_S (a BMC serves a few requests a second at best), so a
#: SensingInterval shorter than POLLS_PER_PERIOD polls is read as that period: each reading seen covers the time
#: since the previous one seen, and readings the BMC replaced between two polls are not counted as lost
MIN_POLL_S = 0.2
MIN_PERIOD_S = POLLS_PER_PERIOD * MIN_POLL_S
__all__ = ["RESOLUTION_W", "emulate_from_spec", "list_meters", "open_from_spec", "refuse_record_options"]


def refuse_record_options(kind: str, channels: Any, rate_hz: float | None) -> None:
    """``meter record --meter redfish:URL`` (or ``ipmi:``) with ``--channels`` or ``--rate``: refused in one line
    (a BMC has one whole-node reading at its own update period; they were silently ignored)."""
    given = [opt for opt, v in (("--channels", channels), ("--rate", rate_hz)) if v is not None]
    if given:
        raise MeterError(f"--meter {kind}: a BMC gives one whole-node power reading at its own update period, so "
                         f"{' and '.join(given)} cannot apply; leave {'them' if len(given) > 1 else 'it'} out (the "
                         "BMC's own period is used: Redfish's SensingInterval, DCMI's statistics period, else 1 s; "
                         "to state it, give update_period_s in a platform profile's [[meters]] entry)")


# --- the kind dispatch (powermon/spec.py) ---------------------------------------------------------------------------

def _password(spec: MeterSpec) -> str | None:
    """The password from the environment variable ``spec.password_env`` names (never from the profile)."""
    if spec.password_env is None:
        return None
    pw = os.environ.get(spec.password_env)
    if pw is None:
        raise MeterError(f"meter '{spec.name}': the environment variable {spec.password_env} (password_env) is not "
                         "set; export it with the BMC password")
    return pw


def _url(spec: MeterSpec) -> str:
    url = spec.url or spec.port
    if not url:
        raise MeterError(f"meter '{spec.name}': a {spec.kind} meter needs url = \"http://BMC\" (the Redfish host)")
    return url


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, name: str | None = None,
                   lag_s: float = 0.0, window_s: float | None = None, update_period_s: float | None = None,
                   verify: bool | str = True, **kw: Any) -> BmcMeter:
    """The BMC at ``spec.url`` (Redfish): discovers the chassis and its power reading at once (MeterError/DeviceError
    with the reason); the update period is the sensor's ``SensingInterval``, else ``update_period_s`` or 1 s."""
    if spec.kind == "ipmi":
        from archline.powermon.bmc.ipmi import DcmiClient

        ipmi = DcmiClient(_url(spec), spec.username, _password(spec), spec.cipher_suite,
                          password_from=f"the password in {spec.password_env} (password_env)"
                          if spec.password_env else None)
        # the period stated (profile's update_period_s), else the statistics period the BMC's reading gives
        period = update_period_s or spec.update_period_s or ipmi.reported_period() or DEFAULT_PERIOD_S
        rail, device = spec_channel(spec)
        return BmcMeter(ipmi, rail, device, update_period_s=period, lag_s=lag_s,
                        window_s=window_s, quantum_w=1.0, name=name or spec.name, emulated=ipmi.emulated, **kw)
    if spec.kind != "redfish":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a BMC")
    client = RedfishClient(_url(spec), spec.username, _password(spec), spec.chassis, verify=verify,
                           shape=spec.power_source).discover()
    period = update_period_s or spec.update_period_s or client.sensing_interval_s or DEFAULT_PERIOD_S
    assumed = not (update_period_s or spec.update_period_s or client.sensing_interval_s)
    if period < MIN_PERIOD_S:
        # SensingInterval PT0.001S polled every 0.25 ms was ~530 GETs/s and 2998 of 3001 readings "lost"
        client._note(f"redfish {client.url}: the BMC updates every {period:g} s; polled every {MIN_POLL_S:g} s at "
                     f"most, so each reading seen covers the time since the last (read as a {MIN_PERIOD_S:g} s "
                     "period)")
        period = MIN_PERIOD_S
    rail, device = spec_channel(spec)
    # a sum of supplies is good to a watt per supply
    quantum = RESOLUTION_W * max(1, len(client.psu_metrics)) if client.source == SOURCE_SUBSYSTEM else 0.0
    return BmcMeter(client, rail, device, update_period_s=period, lag_s=lag_s, window_s=window_s,
                    quantum_w=quantum, name=name or spec.name, emulated=client.emulated, period_assumed=assumed,
                    **kw)


#: the emulated BMC: a new reading every second, the mean of the last second, shown at once
DEFAULT_SENSOR = SensorModel(update_period_s=1.0, window_s=1.0)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: RedfishFaults | None = None,
                      sensor: SensorModel = DEFAULT_SENSOR, name: str | None = None, timeline: Any = None,
                      shape: str | None = None, **kw: Any) -> BmcMeter:
    """An emulated node: ``power`` (summed over the spec's channels) through ``sensor`` on a real Redfish server on
    127.0.0.1, read by the real client; the server stops when the meter stops. Labelled emulated; ``seed`` unused.
    ``timeline``: a device clock to share (``emulated_time_s()``, ``speed``; e.g. a reference emulator's core, so
    that ``meter probe`` compares both on one device timeline); else a new one at ``speed``. ``shape``: the one
    power source the emulated chassis serves (``emulator.SHAPES``; None: Power, EnvironmentMetrics and a Sensor)."""
    from archline.powermon.bmc.emulator import RedfishEmulator

    if spec.kind == "ipmi":
        from archline.powermon.bmc.ipmi import emulate_node

        return emulate_node(spec, power, speed=speed, faults=faults, sensor=sensor, name=name, **kw)
    if spec.kind != "redfish":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a BMC")
    if timeline is None:
        timeline = Timeline(speed)
    speed = float(timeline.speed)
    pw = device_power(power, [c.id for c in spec.channels] or [0], timeline)
    shape = shape or spec.power_source         # a profile's source is the one its emulated chassis serves
    server = RedfishEmulator(pw, sensor, timeline, faults, shape=shape).start()
    try:
        client = RedfishClient(server.url, chassis=spec.chassis, shape=shape).discover()
    except Exception:
        server.stop()
        raise
    rail, device = spec_channel(spec)
    meter = BmcMeter(client, rail, device, update_period_s=sensor.update_period_s, lag_s=sensor.lag_s,
                     window_s=sensor.window_s, quantum_w=sensor.quantum_w, speed=speed,
                     name=name or f"{spec.name}-emulated", emulated=True, **kw)
    meter.sensor = sensor
    meter.server = server                     # type: ignore[attr-defined]
    meter._on_stop.append(server.stop)
    return meter


def list_meters() -> list[dict[str, Any]]:
    """`archline meter list`'s rows for these kinds: a BMC is named in a profile, never discovered."""
    return [{"kind": "redfish", "name": "-", "available": False,
             "detail": "a node's BMC: give [[meters]] kind = \"redfish\", url = \"https://BMC\", username, "
                       "password_env (or --meter redfish:https://BMC); reads the first of EnvironmentMetrics."
                       "PowerWatts, a Power Sensor, PowerSubsystem supply input, Power.PowerControl (power_source "
                       "picks one; meter record says which)"},
            {"kind": "ipmi", "name": "-", "available": False,
             "detail": "a node's BMC over IPMI DCMI: give [[meters]] kind = \"ipmi\", url = \"ipmi://BMC\", "
                       "username, password_env (or --meter ipmi:ipmi://USER:PASSWORD@BMC[:PORT])"}]
