"""The package as a user meets it: the console script, every subcommand loads, the native CPUID probe."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from archline.cli.main import SUBCOMMANDS


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_imports_and_has_help(name: str, run_cli) -> None:  # type: ignore[no-untyped-def]
    module, attr = SUBCOMMANDS[name].split(":")
    assert getattr(importlib.import_module(module), attr) is not None
    r = run_cli(name, "--help")
    assert r.exit_code == 0, r.stderr
    assert "Usage:" in r.stdout


def test_console_script_top_level_help() -> None:
    r = subprocess.run([sys.executable, "-m", "archline.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for name in SUBCOMMANDS:
        assert name in r.stdout


def test_unknown_command_is_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("no-such-command")
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr


def test_cpuid_probe_matches_proc_cpuinfo() -> None:
    from archline.bench.cpu_asm.cpu_features import cpu_features

    f = cpu_features()
    if f["arch"] != "x86_64":
        pytest.skip("x86-64 only check")
    flags = set()
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    assert f["sse2"] == ("sse2" in flags)
    assert f["avx2"] == ("avx2" in flags)
    assert f["fma"] == ("fma" in flags)
    assert f["avx512f"] == ("avx512f" in flags)
