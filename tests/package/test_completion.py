"""Shell completion (README "Shell completion"): click's, through the documented environment variable, with value
completion for platforms, a profile's meters, meter record's kinds and kernels."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.shell_completion import BashComplete

from archline.cli.complete import RECORD_SPECS
from archline.cli.main import cli
from archline.formats.platforms.profiles import SHIPPED_DIR


def _complete(words: list[str], incomplete: str) -> list[str]:
    return [c.value for c in BashComplete(cli, {}, "archline", "_ARCHLINE_COMPLETE").get_completions(words,
                                                                                                     incomplete)]


def test_bash_completion_through_the_environment_variable() -> None:
    """What the bash script that `_ARCHLINE_COMPLETE=bash_source archline` prints asks, and what it gets."""
    env = {**os.environ, "_ARCHLINE_COMPLETE": "bash_complete", "COMP_WORDS": "archline bench run --platform gtx",
           "COMP_CWORD": "4"}
    res = subprocess.run([sys.executable, "-c", "from archline.cli.main import main; main()"], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    shipped = sorted(p.stem for p in SHIPPED_DIR.glob("gtx*.toml"))
    assert shipped and res.stdout.splitlines() == [f"plain,{n}" for n in shipped]
    env["_ARCHLINE_COMPLETE"] = "bash_source"
    script = subprocess.run([sys.executable, "-c", "from archline.cli.main import main; main()"], env=env,
                            capture_output=True, text=True, timeout=60, check=False).stdout
    assert "_archline_completion" in script and "_ARCHLINE_COMPLETE=bash_complete" in script


def test_platform_names_are_the_shipped_profiles_and_localhost(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))          # no user profiles
    monkeypatch.delenv("ARCHLINE_PLATFORM_PATH", raising=False)
    names = sorted({p.stem for p in SHIPPED_DIR.glob("*.toml")} | {"localhost"})
    assert _complete(["bench", "run", "--platform"], "") == names
    assert _complete(["platforms", "show"], "i7") == [n for n in names if n.startswith("i7")]
    assert _complete(["meter", "emulate", "--platform"], "gtx58") == ["gtx580"]
    assert _complete(["fit", "r.csv", "--platform"], "local") == ["localhost"]


def test_bench_run_meter_completes_the_profiles_meters() -> None:
    from archline.bench.config.profile import load_bench_profile

    meters = [m.name for m in load_bench_profile("gtx580").meters]
    assert meters and _complete(["bench", "run", "--platform", "gtx580", "--meter"], "") == meters
    assert _complete(["bench", "run", "--platform", "no-such-platform", "--meter"], "") == []   # no traceback


def test_meter_record_kinds_are_accepted_by_the_recorder() -> None:
    """Each offered kind reaches its own meter's checks, never 'unknown meter' (the list has not drifted)."""
    from archline.powermon.errors import MeterError
    from archline.powermon.meter_words import meter_from_spec

    assert _complete(["meter", "record", "--meter"], "p") == ["powermon2:", "powersensor3:", "pmd:"]
    for kind in RECORD_SPECS:
        if kind in ("emulated", "rapl", "nvml"):   # these would open a meter: only their names are checked here
            continue
        with pytest.raises(MeterError) as e:
            meter_from_spec(kind)                   # no argument: refused, naming what it needs
        assert "unknown meter" not in str(e.value), kind
    with pytest.raises(MeterError, match="unknown meter"):
        meter_from_spec("nosuchkind")


def test_kernel_names() -> None:
    assert _complete(["bench", "run", "--kernel"], "c") == ["cache", "chase", "ceilings"]


def test_measure_completes_platforms_and_the_profiles_meters() -> None:
    assert "gtx580" in _complete(["measure", "--platform"], "gtx5")
    from archline.bench.config.profile import load_bench_profile

    meters = [m.name for m in load_bench_profile("gtx580").meters]
    assert "ps3" in meters and _complete(["measure", "--platform", "gtx580", "--meter"], "") == meters
