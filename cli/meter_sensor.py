"""``archline meter probe`` and ``archline meter calibrate``: an on-board sensor measured against a reference meter
while a step load switches the power (wiring only: bench's busy/idle switch drives powermon's analysis)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from archline.cli.params import NON_NEGATIVE, POSITIVE, FiniteFloat, OutPath
from archline.common.outputs import show

_SPEED = FiniteFloat(gt=0, le=50)


def _emulation_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--emulate", is_flag=True,
                     help="an emulated sensor (the model below) against an emulated PowerMon 2 (the reference)"),
        click.option("--redfish", is_flag=True,
                     help="with --emulate: the sensor is a node's BMC, its readings served by an emulated Redfish "
                          "service on 127.0.0.1 and read by the Redfish meter (try --period 1 --window 1 --step 4)"),
        click.option("--period", "period_s", type=POSITIVE, default=0.05, show_default=True,
                     help="emulated sensor: seconds between readings"),
        click.option("--window", "window_s", type=NON_NEGATIVE, default=0.02, show_default=True,
                     help="emulated sensor: seconds each reading averages"),
        click.option("--lag", "lag_s", type=NON_NEGATIVE, default=0.03, show_default=True,
                     help="emulated sensor: seconds a reading appears after its window ends"),
        click.option("--quantum", "quantum_w", type=NON_NEGATIVE, default=0.25, show_default=True,
                     help="emulated sensor: watts its readings are rounded to (0: none)"),
        click.option("--gain", type=FiniteFloat(ge=0.1, le=10), default=1.0, show_default=True,
                     help="emulated sensor: reading = gain x true + offset (0.1 to 10: a sensor further off is "
                          "broken, not miscalibrated)"),
        click.option("--offset", "offset_w", type=FiniteFloat(ge=-1000, le=1000), default=0.0, show_default=True,
                     help="emulated sensor: watts added to every reading (-1000 to 1000)"),
        click.option("--idle-w", type=NON_NEGATIVE, default=40.0, show_default=True, help="emulated load: low level"),
        click.option("--busy-w", type=POSITIVE, default=160.0, show_default=True, help="emulated load: high level"),
        click.option("--speed", type=_SPEED, default=10.0, show_default=True,
                     help="emulated seconds per real second"),
        click.option("--steps", "n_steps", type=click.IntRange(2, 1000), default=20, show_default=True,
                     help="power steps up (each followed by one down)"),
        click.option("--step", "step_s", type=FiniteFloat(gt=0, le=3600), default=0.3, show_default=True,
                     help="seconds each level lasts, give or take 30% (longer than the sensor's window + lag)"),
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True),
        click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _setup(meter: str, emulate: bool, kw: dict[str, Any]) -> tuple[Any, Any, Any, dict[str, float]]:
    """(reference, sensor, step load, the emulated sensor's given values)."""
    from archline.powermon.errors import MeterError

    if not emulate:
        raise MeterError(f"meter {meter}: probing or calibrating real hardware needs a step-load kernel on its "
                         "device, which is not wired yet; use --emulate")
    from archline.bench.monitor import PhasePower, PhasePowerSource
    from archline.powermon.emulator.sensor import SensorModel
    from archline.powermon.sensor.run import REFERENCE_SPEC, EdgeLoad, emulated_bmc_pair, emulated_pair

    given = {"update_period_s": kw["period_s"], "window_s": kw["window_s"], "lag_s": kw["lag_s"],
             "quantum_w": kw["quantum_w"], "gain": kw["gain"], "offset_w": kw["offset_w"]}
    if kw["busy_w"] <= kw["idle_w"]:
        raise click.UsageError("--busy-w must be above --idle-w")
    if kw["step_s"] * 0.7 <= kw["window_s"] + kw["lag_s"]:
        raise click.UsageError(f"--step {kw['step_s']:g}: its shortest level (70%) must outlast the sensor's window "
                               f"+ lag ({kw['window_s'] + kw['lag_s']:g} s)")
    schedule = PhasePower(kw["idle_w"], kw["busy_w"])
    pair = emulated_bmc_pair if kw["redfish"] else emulated_pair
    ref, sensor = pair(SensorModel(**given), PhasePowerSource(schedule, REFERENCE_SPEC),
                       speed=kw["speed"], seed=kw["seed"], name=meter)
    return ref, sensor, EdgeLoad(schedule.edge), given


def _table(rows: list[tuple[str, float, float | None, float | None]], unit_note: str) -> None:
    click.echo(f"{'quantity':<16} {'measured':>12} {'± err':>10} {'given':>10}   {unit_note}")
    for name, value, err, given in rows:
        e = "" if err is None else f"{err:10.3g}"
        g = "" if given is None else f"{given:10.5g}"
        click.echo(f"{name:<16} {value:12.6g} {e:>10} {g:>10}")


@click.command("probe")
@click.argument("meter")
@click.option("--out", required=True, type=OutPath(suffixes=(".json",)), help="the sensor profile to write (.json)")
@_emulation_options
def probe_cmd(meter: str, out: str, **kw: Any) -> None:
    """Measure METER's update period, averaging window, lag behind a power step and quantum against a reference
    meter while a step load switches the power, and write a versioned sensor profile (archline.sensor_profile/1)
    that the integrator uses: a window shorter than the sensor allows is refused or widened, and the bound says why.

    \b
    Examples:
      archline meter probe nvml0 --emulate --out nvml0.sensor.json
      archline meter probe bmc --emulate --period 1 --window 1 --lag 0.5 --step 4 --steps 6 --out bmc.json
      archline meter probe bmc --emulate --redfish --period 1 --window 0.8 --lag 0.3 --quantum 1 --step 4 --out b.json
      archline meter probe nvml0 --emulate --out s.json --format json
    """
    from archline.common.stamps import utc_iso
    from archline.powermon.sensor.profile import SensorProfile
    from archline.powermon.sensor.run import probe

    ref, sensor, load, given = _setup(meter, kw["emulate"], kw)
    res = probe(ref, sensor, load, n_steps=kw["n_steps"], step_s=kw["step_s"], seed=kw["seed"])
    d = res.as_dict()
    prof = SensorProfile(meter=meter, emulated=True, reference=ref.name, created_utc=utc_iso(),
                         **{k: v for k, v in d.items() if k not in ("gain_err", "offset_err_w")})
    prof.write(out)
    if kw["fmt"] == "json":
        click.echo(json.dumps({"profile": show(out), "emulated": True, "measured": d, "given": given,
                               "min_window_s": prof.limits().min_window_s}, indent=1))
    else:
        _table([("update_period_s", d["update_period_s"], d["update_period_err_s"], given["update_period_s"]),
                ("window_s", d["window_s"], d["window_err_s"], given["window_s"]),
                ("lag_s", d["lag_s"], d["lag_err_s"], given["lag_s"]),
                ("quantum_w", d["quantum_w"], d["quantum_err_w"], given["quantum_w"])], "(emulated)")
        click.echo(f"shortest window the integrator accepts: {prof.limits().min_window_s:.4g} s")
    click.echo(f"wrote {show(out)}", err=True)


@click.command("calibrate")
@click.argument("meter")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False),
              help="platform profile (TOML) whose [[meters]] entry METER gets the calibration (in --out)")
@click.option("--out", type=OutPath(suffixes=(".toml",)), help="the new profile to write (never the input)")
@click.option("--sensor-profile", type=click.Path(dir_okay=False),
              help="METER's sensor profile (meter probe): its averaging window is used, not fitted")
@_emulation_options
def calibrate_cmd(meter: str, profile_path: str | None, out: str | None, sensor_profile: str | None,
                  **kw: Any) -> None:
    """Fit METER's gain, offset and lag against a reference meter recording the same step load at once (one
    recorder, two meters), report the discrepancy with its uncertainty, and store it as the `calibration` of
    METER's [[meters]] entry in a new profile, so that a machine without the reference gets corrected energy,
    labelled calibrated.

    \b
    Examples:
      archline meter calibrate nvml0 --emulate --gain 1.07 --offset -3.5
      archline meter calibrate ps3 --emulate --gain 1.07 --offset -3.5 --profile gtx580.toml --out gtx580-cal.toml
      archline meter calibrate nvml0 --emulate --sensor-profile nvml0.sensor.json --format json

    The uncertainties are least-squares standard errors (lag: where the residual rises by one variance); the
    reference's own error is not in them.
    """
    from archline.common.atomic import write_atomic
    from archline.common.files import read_text
    from archline.powermon.errors import MeterError
    from archline.powermon.sensor.profile import SensorProfile
    from archline.powermon.sensor.profile_edit import with_calibration
    from archline.powermon.sensor.run import calibrate

    if (profile_path is None) != (out is None):
        raise click.UsageError("--profile and --out go together (the calibration is stored in a new profile)")
    text = read_text(profile_path, error=MeterError, what="profile") if profile_path else None
    window_s = SensorProfile.read(sensor_profile).window_s if sensor_profile else None
    if out is not None:
        from archline.common.outputs import check_output

        check_output(out)         # the input profile (or the sensor profile) named as --out: refused before the run
    ref, sensor, load, given = _setup(meter, kw["emulate"], kw)
    cal, resp = calibrate(ref, sensor, load, n_steps=kw["n_steps"], step_s=kw["step_s"], seed=kw["seed"],
                          window_s=window_s)
    if kw["emulate"]:             # marked: such a line corrects no real sensor (apply_spec refuses it on hardware)
        import dataclasses

        cal = dataclasses.replace(cal, emulated=True)
    if text is not None and profile_path is not None and out is not None:
        write_atomic(out, with_calibration(text, meter, cal.as_dict(), profile_path))
        click.echo(f"wrote {show(out)} (meter '{meter}' calibrated)", err=True)
    if kw["fmt"] == "json":
        click.echo(json.dumps({"meter": meter, "emulated": True, "calibration": cal.as_dict(), "given": given,
                               "window_s": resp.window_s, "residual_w": resp.residual_w,
                               "n_readings": resp.n_readings}, indent=1))
        return
    _table([("gain", cal.gain, cal.gain_err, given["gain"]), ("offset_w", cal.offset_w, cal.offset_w_err,
                                                               given["offset_w"]),
            ("lag_s", cal.lag_s, cal.lag_s_err, given["lag_s"])], "(emulated)")
    click.echo(f"window {resp.window_s:.4g} s{' (from the sensor profile)' if window_s is not None else ''}, "
               f"rms residual {resp.residual_w:.3g} W over {resp.n_readings} readings")
