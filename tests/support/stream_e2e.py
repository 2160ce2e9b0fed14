"""End to end for the byte-stream meters: ``archline meter record`` on an emulator URL, ``bench run --emulate``
through a profile's meter, and the fit of what it measured."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from archline.bench.config.options import RunOptions
from archline.bench.run.session import run_once
from archline.cli.main import main
from archline.cli.meter import meter as meter_cli
from archline.formats.meters.samples_file import read_samples
from archline.powermon.emulator import register_device, unregister_device

CONSTANT = {0: (12.0, 5.0), 1: (3.3, 2.0)}


@contextmanager
def registered(name: str) -> Iterator[str]:
    register_device(name, lambda t_s: CONSTANT)
    try:
        yield name
    finally:
        unregister_device(name)


def record(kind: str, url: str, out: Path, *extra: str) -> tuple[int, dict[str, Any], Any, dict[str, Any]]:
    """(exit code as archline would give it, summary, samples, sidecar) of ``archline meter record --meter KIND:URL``
    (the click runner hands back the error that archline's main would turn into that code)."""
    res = CliRunner().invoke(meter_cli, ["record", "--meter", f"{kind}:{url}", "--channels", "0,1",
                                         "--duration", "0.4", "--out", str(out), *extra])
    summary = json.loads(res.stdout[: res.stdout.rindex("}") + 1])
    samples, meta = read_samples(out)
    code = res.exit_code if res.exception is None else getattr(res.exception, "exit_code", res.exit_code)
    return code, summary, samples, meta


def run_and_fit(options: RunOptions, out: Path) -> tuple[list[dict[str, str]], dict[str, float]]:
    res = run_once(options, out)
    assert res.failed == 0 and res.rows > 0
    with open(res.results, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows, fit(res.results)


def fit(path: Path) -> dict[str, float]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["fit", str(path), "--model", "basic", "--format", "json"])
    assert rc in (0, None), buf.getvalue()
    costs = json.loads(buf.getvalue())
    return {k: v["value"] for k, v in costs["coefficients"].items()}
