"""A profile whose [emulate] rates or constants are absurd (1e-300 bytes/s made the emulator's sleep overflow with a
traceback) is one line naming the key, before anything runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archline.bench.config.profile import load_bench_profile
from archline.bench.emulated.model import EmulatedModel, EmulationError
from archline.bench.errors import BenchError
from archline.fit.errors import ProfileFormatError
from archline.fit.platforms.profiles import load_platform

GTX580 = Path(load_platform("gtx580").origin)


def _profile(tmp_path: Path, name: str, **subs: str) -> Path:
    """The shipped GTX 580 profile renamed ``name``, each ``key = value`` line of ``subs`` replaced (or, for a key
    not there, added to [emulate])."""
    text = GTX580.read_text()
    text = re.sub(r'^name = .*$', f'name = "{name}"', text, count=1, flags=re.M)
    for key, value in subs.items():
        line = f"{key} = {value}"
        text, n = re.subn(rf"^{key} = .*$", line, text, count=1, flags=re.M)
        if not n:
            text = text.replace("[emulate]\n", f"[emulate]\n{line}\n", 1)
    d = tmp_path / "profiles"
    d.mkdir(exist_ok=True)
    p = d / f"{name}.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("key", "value"), [
    ("observed_byte_per_s", "1e-300"), ("observed_byte_per_s", "1e300"), ("observed_flop_per_s_sp", "inf"),
    ("observed_flop_per_s_dp", "nan"), ("time_compression", "1e-300"), ("time_compression", "1e300"),
    ("idle_w", "1e300"), ("noise_rel", "1e10"),
])
def test_absurd_emulate_values_are_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, key: str, value: str) -> None:
    p = _profile(tmp_path, "absurd", **{key: value})
    monkeypatch.setenv("ARCHLINE_PLATFORM_PATH", str(p.parent))
    out = tmp_path / "out"
    r = run_cli("bench", "run", "--platform", "absurd", "--emulate", "--quick", "--out", str(out))
    assert r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1 and key in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize(("subs", "says"), [
    ({"peak_byte_per_s": '{ value = 1e-300, source = "x" }', "observed_byte_per_s": "170e9"}, None),
    ({"eps_mem": '{ value = 1e300, source = "x" }'}, "eps_mem"),
])
def test_absurd_constants_cannot_be_emulated(tmp_path: Path, subs: dict[str, str], says: str | None) -> None:
    p = _profile(tmp_path, "odd", **subs)
    text = p.read_text()
    if says is None:     # the memory rate from 1/tau_mem: drop the observed rate so that the constant is used
        p.write_text(re.sub(r"^observed_byte_per_s = .*\n", "", text, flags=re.M))
    # a cost no machine can have is refused already where the profile is read (fit's profile owner)
    with pytest.raises((EmulationError, ProfileFormatError), match=says or "bytes_mem rate"):
        EmulatedModel.from_profile(load_bench_profile(str(p)))
    assert issubclass(EmulationError, BenchError)
