"""The meter-kind contract of powermon/spec.py: every kind, its fields, channel ids per kind, the default channel
of whole-device kinds, and open_meter / emulate_meter dispatching by kind."""

from __future__ import annotations

import csv as _csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archline.formats.platforms.profiles import SHIPPED_DIR
from archline.powermon import emulate_meter
from archline.powermon.errors import MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import METER_KINDS, METER_MODULES, can_emulate, channels_spec, open_meter, parse_meters


def _one(entry: dict[str, object]) -> object:
    (spec,) = parse_meters([entry], "p.toml")
    return spec


def test_every_kind_is_known_and_has_a_module_or_is_built_in() -> None:
    assert set(METER_KINDS) == {"powermon2", "rapl", "nvml", "powersensor3", "pmd", "redfish", "ipmi", "amdsmi",
                                "hwmon"}
    assert set(METER_KINDS) - set(METER_MODULES) == {"rapl", "nvml"}


@pytest.mark.parametrize(("kind", "device"), [("redfish", "node"), ("ipmi", "node"), ("amdsmi", "gpu"),
                                              ("hwmon", "cpu")])
def test_whole_device_kinds_get_one_channel(kind: str, device: str) -> None:
    spec = _one({"name": "m", "kind": kind, "url": "http://127.0.0.1:8000", "username": "admin",
                 "password_env": "BMC_PASSWORD", "calibration": {"gain": 1.07, "offset_w": -3.5}})
    (c,) = spec.channels  # type: ignore[attr-defined]
    assert (c.id, c.rail, c.device) == (0, kind, device)
    assert spec.devices() == {device: [kind]}  # type: ignore[attr-defined]
    assert spec.calibration == {"gain": 1.07, "offset_w": -3.5}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kind", "bad_id", "text"), [("powermon2", 8, "0-7"), ("powersensor3", 4, "0-3"),
                                                      ("pmd", 4, "0-3")])
def test_channel_ids_per_kind(kind: str, bad_id: int, text: str) -> None:
    _one({"name": "m", "kind": kind, "port": "x", "channels": [{"id": bad_id - 1, "rail": "a"}]})
    with pytest.raises(MeterError, match=f"meters.m: .*{text}, got {bad_id}"):
        _one({"name": "m", "kind": kind, "port": "x", "channels": [{"id": bad_id, "rail": "a"}]})


def test_sampling_kinds_need_channels_and_pmd_voltage_limit() -> None:
    for kind in ("powermon2", "powersensor3", "pmd"):
        with pytest.raises(MeterError, match=f"a {kind} meter needs 'channels'"):
            _one({"name": "m", "kind": kind, "port": "x"})
    with pytest.raises(MeterError, match=r"above the pmd meter.s 15\.49 V"):
        _one({"name": "m", "kind": "pmd", "port": "x", "channels": [{"id": 0, "rail": "a", "nominal_v": 24.0}]})
    # PowerSensor3's divider reads 24 V rails
    _one({"name": "m", "kind": "powersensor3", "port": "x", "channels": [{"id": 0, "rail": "a", "nominal_v": 24.0}]})


def test_password_env_is_a_name_never_a_password() -> None:
    with pytest.raises(MeterError, match="password_env"):
        _one({"name": "b", "kind": "redfish", "url": "http://h", "password_env": "hunter2!"})


def test_channels_spec_defaults_per_kind() -> None:
    assert [c.id for c in channels_spec("p", "powersensor3").channels] == [0, 1, 2, 3]
    assert [c.id for c in channels_spec("p", "pmd").channels] == [0, 1, 2, 3]


def test_what_the_emulators_and_localhost_read_from_the_registry(tmp_path: Path) -> None:
    """Issue 37: bench and the CLI read these declarations instead of spelling a kind. The emulators' default kind,
    the kinds ``meter emulate --kind`` serves (its default first) and their fastest streams, the PowerMon 2 URL's
    faults, and the kind the localhost profile finds (RAPL; none under a powercap root that is not there)."""
    from archline.powermon import kinds

    assert kinds.default_emulated().name == "powermon2"
    served = kinds.pty_kinds()
    assert [k.name for k in served] == ["powermon2", "powersensor3"]
    pm, ps3 = (k.pty_emulator for k in served)
    assert pm is not None and ps3 is not None and not pm.takes_rate and ps3.takes_rate
    assert pm.records_per_s(None) == 3072 and ps3.records_per_s(2000.0) == 9000.0
    url_faults = kinds.get("powermon2").url_faults
    assert url_faults is not None and url_faults("powermon://default?stall=0.3:0.5").stall == (0.3, 0.5)
    kind, keys, found = kinds.detected(powercap_root=tmp_path / "missing", perf_root=tmp_path / "no-pmu")
    assert kind is None and keys == {} and found.startswith("no RAPL: ")


def test_emulatable_kinds_and_a_missing_driver() -> None:
    specs = parse_meters([{"name": k, "kind": k, "port": "x", "channels": [{"id": 0, "rail": "a"}]}
                          for k in ("powermon2", "powersensor3", "pmd")], "p.toml")
    assert all(can_emulate(s) for s in specs)
    rapl = _one({"name": "r", "kind": "rapl"})
    assert not can_emulate(rapl)  # type: ignore[arg-type]
    with pytest.raises(MeterError, match=r"no emulator|no driver"):
        emulate_meter(rapl, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["powermon2", "powersensor3", "pmd"])
def test_emulate_meter_dispatches_by_kind(kind: str) -> None:
    (spec,) = parse_meters([{"name": "m", "kind": kind, "rate_hz": 256.0 if kind == "powermon2" else 1000.0,
                             "channels": [{"id": 0, "rail": "main", "device": "card"}]}], "p.toml")
    meter = emulate_meter(spec, lambda t_s: {0: (12.0, 2.5)}, speed=2.0, seed=1)
    assert meter.emulated and meter.speed == 2.0
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.3)
        region = rec.end("w")
    (mr,) = region.meters.values()
    assert mr.emulated and mr.lost_samples == 0
    assert mr.devices["card"].mean_power_w == pytest.approx(30.0, rel=0.02)


@pytest.mark.parametrize(("kind", "url"), [("powersensor3", "powersensor3://default?rate=1000"),
                                           ("pmd", "pmd://default?rate=1000")])
def test_open_meter_dispatches_to_the_url_emulator(kind: str, url: str) -> None:
    spec = channels_spec("m", kind, [0, 1], port=url)
    meter = open_meter(spec)
    assert meter.emulated and meter.update_hz == 1000.0
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.2)
        region = rec.end("w")
    assert region.meters["m"].n_samples > 0


def test_meter_list_names_every_kind(tmp_path: object) -> None:
    from archline.powermon.offline import list_meters

    rows = list_meters(powercap_root="/nonexistent-powercap")
    assert set(METER_KINDS) <= {r["kind"] for r in rows}
    emulators = {r["name"] for r in rows if r["available"] and r["kind"] in ("powersensor3", "pmd")}
    assert {"powersensor3://default", "pmd://default"} <= emulators


@pytest.mark.parametrize(("port", "text"), [("powersensor3://nosuch", "no emulated device named 'nosuch'"),
                                            ("powersensor3://default?bogus=1", "unknown option 'bogus'"),
                                            ("pmd://default?rate=x", "rate takes a number above 0")])
def test_bad_emulator_urls_are_one_line_errors(port: str, text: str) -> None:
    kind = port.partition(":")[0]
    with pytest.raises(MeterError, match=text):
        meter = open_meter(channels_spec("m", kind, [0], port=port))
        meter.start()


# A third party's meter kind (issue 37): a package "installed" inside the test (a module and its dist-info on a path
# put on PYTHONPATH, which importlib.metadata discovers), used end to end with no change to archline.
TOY_MODULE = '''"""A toy meter kind: a constant 42 W, labelled emulated."""
from archline.powermon.counters.base import CounterMeter
from archline.powermon.kinds import MeterKind

POWER_W = 42.0


class ToyMeter(CounterMeter):
    kind = "toy"
    emulated = True

    def __init__(self, name, speed=1.0):
        super().__init__(["toy"], {"node": ["toy"]}, poll_s=0.01)
        self.name, self.speed = name, speed
        self.t0_s = self.clock()

    def _read(self):
        return [POWER_W * (self.clock() - self.t0_s) * self.speed]


def open_from_spec(spec, *, raw_dir=None, **kw):
    return ToyMeter(spec.name)


def emulate_from_spec(spec, power, *, speed=1.0, seed=0, raw_dir=None, faults=None, **kw):
    return ToyMeter(spec.name + "-emulated", speed=speed)


KIND = MeterKind(name="toy", title="Toy", module="toy_meter", whole_device="node", device="node",
                 record_words=(("toy:", "a toy meter: 42 W, emulated"),))
'''


def _install_plugin(root: Path, entry_points: str, module: str = TOY_MODULE) -> Path:
    (root / "toy_meter.py").write_text(module)
    dist = root / "toy_meter-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-meter\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[archline.meters]\n{entry_points}\n")
    return root


def _archline(args: list[str], cwd: Path, plugin: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")]), **env}
    return subprocess.run([sys.executable, "-c", "from archline.cli.main import main; main()", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=120, check=False)


def test_a_plugin_meter_kind_is_listed_recorded_benchmarked_and_completed(tmp_path: Path) -> None:
    """meter list lists it, meter record records its 42 W, a profile with kind = "toy" runs bench run --emulate on
    it, and completion offers it; archline itself is not changed."""
    (tmp_path / "site").mkdir()
    plugin = _install_plugin(tmp_path / "site", "toy = toy_meter:KIND")
    listed = _archline(["meter", "list", "--format", "json"], tmp_path, plugin)
    assert listed.returncode == 0, listed.stderr
    assert "toy" in {r["kind"] for r in json.loads(listed.stdout)}

    rec = _archline(["meter", "record", "--meter", "toy:", "--duration", "1", "--out", "t.csv"], tmp_path, plugin)
    assert rec.returncode == 0, rec.stderr
    rows = (tmp_path / "t.csv").read_text().splitlines()
    power_w = [float(r.split(",")[-1]) for r in rows[1:]]
    # each row is the counter's advance between two polls over their clock readings (a read a hair after its clock
    # reading: each row off by up to a few ms of power); over the second, the toy's 42 W
    assert len(power_w) >= 10 and abs(sum(power_w) / len(power_w) - 42.0) < 0.2
    side = json.loads((tmp_path / "t.csv.json").read_text())
    assert side["info"]["type"] == "toy" and side["info"]["emulated"] is True

    profile = (SHIPPED_DIR / "emulated-node.toml").read_text()
    for old, new in (('name = "emulated-node"', 'name = "toy-node"'),
                     ('kind = "redfish"\nurl = "https://bmc.example"', 'kind = "toy"'),
                     ("min_samples = 10", "min_samples = 2"), ("max_region_s = 10.0", "max_region_s = 0.5"),
                     ("min_regions = 2", "min_regions = 1"), ("max_regions = 2", "max_regions = 1"),
                     ("idle_s = 1.0", "idle_s = 0.1"), ("points = 5", "points = 1"),
                     ("time_compression = 20.0", "time_compression = 1.0")):
        assert old in profile, old          # the shipped profile changed: this derivation must follow it
        profile = profile.replace(old, new)
    (tmp_path / "toy-node.toml").write_text(profile)
    run = _archline(["bench", "run", "--platform", "./toy-node.toml", "--emulate", "--quick", "--min-time", "0.01",
                     "--out", "out"], tmp_path, plugin)
    assert run.returncode == 0, run.stderr
    (csv,) = (tmp_path / "out").glob("toy-node-*.csv")
    with csv.open() as f:
        results = list(_csv.DictReader(f))
    assert results and {r["meter"] for r in results} == {"bmc:toy-emulated"}
    assert all(abs(float(r["power_w"]) - 42.0) < 0.2 for r in results)     # the toy's power, not the model's

    comp = _archline([], tmp_path, plugin, _ARCHLINE_COMPLETE="bash_complete",
                     COMP_WORDS="archline meter record --meter to", COMP_CWORD="4")
    assert comp.returncode == 0 and "plain,toy:" in comp.stdout.splitlines(), comp.stdout


def test_a_broken_plugin_is_one_warning_line_never_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A plugin whose module is missing, one that declares something else, and one that takes a kind archline has:
    one warning line each, naming it; archline's kinds stay, and are discovered once (cached)."""
    from archline.powermon import kinds

    _install_plugin(tmp_path, "gone = no_such_module:KIND\nodd = toy_meter:POWER_W\nclash = archline_clash:KIND",
                    TOY_MODULE)
    (tmp_path / "archline_clash.py").write_text(TOY_MODULE.replace('name="toy"', 'name="rapl"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    kinds.clear_cache()
    try:
        before = kinds.get("rapl")
        assert set(METER_KINDS) <= set(kinds.names()) and "toy" not in kinds.names()
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 3 and all(ln.startswith("archline: warning: meter plugin '") for ln in lines)
        assert {ln.split("'")[1] for ln in lines} == {"gone", "odd", "clash"}
        assert "already declared" in next(ln for ln in lines if "'clash'" in ln)
        kinds.names()
        assert capsys.readouterr().err == ""            # cached: said once
        assert kinds.get("rapl") is before
    finally:
        kinds.clear_cache()


HOSTILE_MODULE = '''"""A hostile meter kind (issue 37, plugin findings 6-8, 17-18): its url says what it does."""
import sys

from archline.powermon.counters.base import CounterMeter
from archline.powermon.kinds import MeterKind

print("HELLO FROM PLUGIN")          # at import: must never reach archline's stdout


class Hostile(CounterMeter):
    kind = "hostile"
    emulated = True

    def __init__(self, name, mode):
        super().__init__(["0"], {"node": ["0"]}, poll_s=0.01)
        self.name, self.mode = name, mode
        self.t0_s = self.clock()

    def _read(self):
        if self.mode == "raise_read":
            raise OSError("hostile: sensor read failed")
        if self.mode in ("nan", "inf"):
            return [float(self.mode)]
        if self.mode == "none":
            return []
        return [float(self.mode) * (self.clock() - self.t0_s)]


def open_from_spec(spec, *, raw_dir=None, **kw):
    if spec.url == "raise_open":
        raise RuntimeError("hostile: open exploded")
    if spec.url == "exit_open":
        sys.exit(3)
    if spec.url == "garbage":
        return 42
    if spec.url not in ("raise_read", "nan", "inf", "none"):
        float(spec.url)             # a bad address: ValueError
    return Hostile(spec.name, spec.url)


def emulate_from_spec(spec, power, *, speed=1.0, seed=0, raw_dir=None, faults=None, **kw):
    raise RuntimeError("hostile: emulate exploded")


def lister(**options):
    return [{"kind": "hostile", "name": "h0", "available": True, "detail": "ok"}, {"foo": 1}, "str"]


def exits():
    sys.exit(3)


KIND = MeterKind(name="hostile", title="Hostile meter", module="hostile_meter", whole_device="node", device="node",
                 lister=lister, record_words=(("hostile", "a hostile meter (hostile:MODE)"),))
MIXED = [MeterKind(name="good_one", title="Good"), 3, MeterKind(name="bad\\nname", title="Bad")]
'''


def _hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, "hostile = hostile_meter:KIND\nmixed = hostile_meter:MIXED\n"
                    "z_exits = hostile_meter:exits\nclash = archline_clash:KIND", HOSTILE_MODULE)
    (tmp_path / "hostile_meter.py").write_text(HOSTILE_MODULE)
    (tmp_path / "archline_clash.py").write_text(TOY_MODULE.replace('name="toy"', 'name="rapl"'))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_hostile_plugin_at_import_is_one_line_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Findings 6, 16, 18: sys.exit at import, stdout at import, a sequence with one bad element, a name holding a
    newline, a clash: one warning line each (the clash names who holds the name); the good kinds are kept."""
    from archline.powermon import kinds

    _hostile(tmp_path, monkeypatch)
    kinds.clear_cache()
    try:
        assert {"hostile", "good_one"} <= set(kinds.names()) and "bad\nname" not in kinds.names()
        out, err = capsys.readouterr()
        assert out == ""                                        # the plugin's print never reaches stdout
        lines = err.splitlines()
        assert all(ln.startswith("archline: warning: meter plugin '") for ln in lines), lines
        said = {ln.split("'")[1]: ln for ln in lines}
        assert "SystemExit: 3" in said["z_exits"] and "left out" in said["z_exits"]
        assert "printed 18 character(s) on stdout" in said["hostile"]
        mixed = [ln for ln in lines if ln.startswith("archline: warning: meter plugin 'mixed'")]
        assert len(mixed) == 2 and "declares an int," in mixed[0] and "'bad\\nname' is not a name" in mixed[1]
        assert "is already declared by archline" in said["clash"]
        assert len(lines) == 5
        assert kinds.get("hostile").origin == "toy-meter (hostile)"
    finally:
        kinds.clear_cache()


def test_completion_hushes_plugin_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Finding 15: a Tab press (the safe completion classes) prints no plugin warning into the command line."""
    from archline.cli.complete import SafeBashComplete
    from archline.cli.main import cli
    from archline.powermon import kinds

    _hostile(tmp_path, monkeypatch)
    monkeypatch.setattr(kinds, "_HUSHED", {"on": False})
    monkeypatch.setenv("COMP_WORDS", "archline meter record --meter hos")
    monkeypatch.setenv("COMP_CWORD", "4")
    kinds.clear_cache()
    try:
        got = SafeBashComplete(cli, {}, "archline", "_ARCHLINE_COMPLETE").complete()
        assert "plain,hostile" in got.splitlines()
        assert capsys.readouterr().err == ""
    finally:
        kinds.clear_cache()


def test_a_plugin_listers_malformed_rows_are_one_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 17: a lister's rows without 'available' (or not dicts) never crash meter list: its good row stays,
    one row says how many were malformed."""
    from archline.powermon import kinds
    from archline.powermon.meter_list import _kind_rows

    _hostile(tmp_path, monkeypatch)
    kinds.clear_cache()
    try:
        rows = _kind_rows(kinds.get("hostile"), set(), {})
    finally:
        kinds.clear_cache()
    assert [r["name"] for r in rows] == ["h0", "-"]
    assert rows[1]["available"] is False and "gave 2 malformed row(s) (first: {'foo': 1})" in rows[1]["detail"]


@pytest.mark.parametrize(("url", "code", "text"), [
    ("raise_open", 4, "failed in open_from_spec: RuntimeError: hostile: open exploded"),
    ("exit_open", 4, "failed in open_from_spec: SystemExit: 3"),
    ("garbage", 4, "open_from_spec gave a int without start, stop"),
    ("abc", 2, "refused the entry in open_from_spec: could not convert string to float: 'abc'"),
    ("raise_read", 4, "failed in _read(): OSError: hostile: sensor read failed"),
    ("nan", 4, "_read() gave [nan]: an energy that is not a finite number"),
    ("inf", 4, "_read() gave [inf]: an energy that is not a finite number"),
    ("none", 4, "_read() gave [], not one cumulative energy (J) per channel (1)"),
    ("-50", 4, "over a window: a meter never reports negative power"),
    ("1e12", 4, "W over a window: not a real machine's (at most 1e+06 W)"),
])
def test_a_plugin_meters_faults_and_non_physical_values_are_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, code: int, text: str) -> None:
    """Findings 7, 8: a plugin's open, read and values, through the one boundary (powermon/guarded.py): one line
    naming the kind and the hook, exit 4 for a meter fault, exit 2 for a bad address; NaN, inf, negative and
    implausible power are refused when measured, never written."""
    from archline.powermon import kinds

    _hostile(tmp_path, monkeypatch)
    kinds.clear_cache()
    try:
        spec = _one({"name": "h", "kind": "hostile", "url": url})
        with pytest.raises(MeterError) as e:
            with Recorder([open_meter(spec)]) as rec:  # type: ignore[arg-type]
                rec.begin("w")
                time.sleep(0.05)
                rec.end("w")
        with pytest.raises(MeterError, match="emulate_from_spec: RuntimeError: hostile: emulate exploded") as em:
            emulate_meter(spec, None)  # type: ignore[arg-type]
    finally:
        kinds.clear_cache()
    assert e.value.exit_code == code and text in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert "meter kind 'hostile' (toy-meter (hostile))" in str(e.value)
    assert em.value.exit_code == 4


def test_a_plugin_meter_within_bounds_is_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard passes a physical plugin meter's window as it is: 30 W over the window."""
    from archline.powermon import kinds

    _hostile(tmp_path, monkeypatch)
    kinds.clear_cache()
    try:
        meter = open_meter(_one({"name": "h", "kind": "hostile", "url": "30"}))  # type: ignore[arg-type]
        with Recorder([meter]) as rec:
            rec.begin("w")
            time.sleep(0.1)
            mr = rec.end("w").meters["h"]
    finally:
        kinds.clear_cache()
    assert mr.mean_power_w == pytest.approx(30.0, rel=0.02) and meter.samples().power_w.size > 5


def test_meter_record_refuses_a_nan_meter_and_writes_nothing(tmp_path: Path) -> None:
    """Finding 7 end to end: meter record with a NaN meter is one line, exit 4, no trace; meter list --format json
    with the hostile plugin (it prints and sys.exits at import) is JSON, exit 0."""
    (tmp_path / "site").mkdir()
    plugin = _install_plugin(tmp_path / "site", "hostile = hostile_meter:KIND\nexits = hostile_meter:exits",
                             HOSTILE_MODULE)
    (plugin / "hostile_meter.py").write_text(HOSTILE_MODULE)
    rec = _archline(["meter", "record", "--meter", "hostile:nan", "--duration", "0.2", "--out", "t.csv"], tmp_path,
                    plugin)
    err = [ln for ln in rec.stderr.splitlines() if not ln.startswith("archline: warning: ")]
    assert rec.returncode == 4 and len(err) == 1 and err[0].startswith("archline: error: meter 'hostile' of meter "
                                                                       "kind 'hostile'"), rec.stderr
    assert rec.stdout == "" and not list(tmp_path.glob("t.csv*"))
    listed = _archline(["meter", "list", "--format", "json"], tmp_path, plugin)
    assert listed.returncode == 0 and "hostile" in {r["kind"] for r in json.loads(listed.stdout)}, listed.stderr


def test_meter_record_help_names_the_plugins_kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 15: meter record's --meter help ends with the plugins' record words (read when the help is shown);
    with no plugin it is archline's own."""
    from click.testing import CliRunner

    from archline.cli.main import cli
    from archline.powermon import kinds

    kinds.clear_cache()
    plain = CliRunner().invoke(cli, ["meter", "record", "--help"], terminal_width=400)
    _hostile(tmp_path, monkeypatch)
    kinds.clear_cache()
    try:
        more = CliRunner().invoke(cli, ["meter", "record", "--help"], terminal_width=400)
    finally:
        kinds.clear_cache()
    assert plain.exit_code == 0 and more.exit_code == 0 and "a plugin's" not in plain.output
    assert "by default); a plugin's: hostile (a hostile meter (hostile:MODE))" in " ".join(more.output.split())
