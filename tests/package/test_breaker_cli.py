"""Cases a hostile tester found (issue 22's before-resolve review), kept as regression tests: closed and full
standard streams, figures to pipes, numbers a machine cannot have, labels that must travel, checks before work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "results" / "sample"
RESULTS = next(iter(sorted(SAMPLE.glob("*.csv"))))
COSTS = SAMPLE / "gtx580.costs.json"


def _sh(cmd: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    exe = f"{sys.executable} -m archline.cli"
    return subprocess.run(["bash", "-c", cmd.replace("archline", exe)], cwd=cwd, capture_output=True, timeout=120)


@pytest.mark.parametrize(("redirect", "code"), [(">&-", 0), ("2>&-", 2), ("2>/dev/full", 2),
                                                (">/dev/full 2>/dev/full", 7)])
def test_closed_or_full_standard_streams_keep_the_exit_code(tmp_path: Path, redirect: str, code: int) -> None:
    cmd = "archline model show gtx580 --format json" if "full 2" in redirect else \
        "archline platforms list" if redirect == ">&-" else "archline fit nonexistent.csv"
    r = _sh(f"{cmd} {redirect}; echo rc=$?", tmp_path)
    assert r.stdout.decode().strip().endswith(f"rc={code}"), r
    assert b"Traceback" not in r.stderr


def test_no_raw_python_warning_reaches_the_user(tmp_path: Path) -> None:
    lines = RESULTS.read_text().splitlines(keepends=True)
    small = tmp_path / "h10.csv"
    small.write_text("".join(lines[:11]))
    r = _sh(f"archline fit {small}", tmp_path)
    err = r.stderr.decode()
    assert "Warning:" not in err and "warnings.warn" not in err, err
    assert all(ln.startswith("archline: ") for ln in err.splitlines() if ln.strip()), err


def test_a_figure_is_written_to_a_pipe_and_a_fifo(tmp_path: Path) -> None:
    r = _sh("archline plot gtx580 --out /dev/stdout | wc -c", tmp_path)
    assert r.returncode == 0 and int(r.stdout.decode().split()[0]) > 10000, r
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    r = _sh(f"archline model plot gtx580 --out {fifo}", tmp_path)
    t.join(60)
    assert r.returncode == 0, r.stderr
    assert got and got[0][:8] == b"\x89PNG\r\n\x1a\n" and fifo.is_fifo()


@pytest.mark.parametrize("where", ["costs", "profile"])
def test_a_value_in_pj_without_its_unit_is_refused(tmp_path: Path, run_cli: Callable[..., Any], where: str) -> None:
    if where == "costs":
        d = json.loads(COSTS.read_text())
        d["coefficients"]["eps_mem"].pop("unit")
        d["coefficients"]["eps_mem"]["value"] = 512.9
        f = tmp_path / "nu.json"
        f.write_text(json.dumps(d))
    else:
        text = (REPO / "fit" / "platforms" / "gtx580.toml").read_text()
        f = tmp_path / "mine.toml"
        import re

        f.write_text(re.sub(r"(?m)^eps_mem\s*=.*$", "eps_mem = { value = 513 }", text, count=1))
        assert "eps_mem = { value = 513 }" in f.read_text()
    r = run_cli("model", "show", str(f), "--format", "json")
    assert r.exit_code == 2 and "eps_mem" in r.stderr and "not a real machine's" in r.stderr, r.stderr
    assert r.stdout == ""


def test_fit_points_carry_the_emulated_label(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    pts = tmp_path / "pts.csv"
    assert run_cli("fit", str(RESULTS), "--points", str(pts)).exit_code == 0
    header, first = pts.read_text().splitlines()[:2]
    k = header.split(",").index("emulated")
    assert first.split(",")[k] == "true"          # results/sample is an emulated GTX 580 run


def test_compare_checks_its_figure_before_any_work(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    a = tmp_path / "s.csv"
    a.write_bytes(RESULTS.read_bytes())
    (tmp_path / "cmp.png").symlink_to(a)
    r = run_cli("compare", str(a), "--by", "run", "--figure", str(tmp_path / "cmp.png"))
    assert r.exit_code == 2 and "is an input" in r.stderr and r.stdout == ""
    assert a.read_bytes() == RESULTS.read_bytes()


@pytest.mark.parametrize(("body", "needle"), [
    ("name,time_s,flops_sp,bytes_mem,bytes_mem\napp,1.0,1e9,1e9,5e12\n", "appears more than once"),
    ("name,time_s,flops_sp,bytes_mem\napp,0,1e9,1e9\n", "must be positive"),
])
def test_predict_refuses_a_counts_file_it_would_misread(tmp_path: Path, run_cli: Callable[..., Any], body: str,
                                                        needle: str) -> None:
    f = tmp_path / "p.csv"
    f.write_text(body)
    r = run_cli("predict", str(f), "--costs", str(COSTS), "--format", "json")
    assert r.exit_code == 2 and needle in r.stderr and r.stdout == "", r.stderr


def test_control_characters_from_data_or_names_are_shown_escaped(tmp_path: Path,
                                                                 run_cli: Callable[..., Any]) -> None:
    import csv

    rows = list(csv.reader(RESULTS.open()))
    k = rows[0].index("platform")
    for r in rows[1:]:
        r[k] = "gtx\x1b]0;pwned\x07580"
    f = tmp_path / "esc.csv"
    with f.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    r = run_cli("fit", str(f), "--model", "basic")
    assert r.exit_code == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "gtx\\x1b]0;pwned\\x07580" in r.stdout
    out = tmp_path / "a\nb.png"
    r = run_cli("model", "plot", "gtx580", "--out", str(out))
    assert r.exit_code == 0 and out.exists()
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("wrote")] == [f"wrote {tmp_path}/a\\nb.png"]


def test_issue27_commands_show_the_reading_and_refuse_an_empty_item(run_cli: Callable[..., Any]) -> None:
    r = run_cli("bound", "fft", "--fast-memory", "512K", "--fft-bound", "half")
    assert r.exit_code == 0 and "[0.5*log2(S) flop/word]" in r.stdout and "/ (0.5*log2(S))" in r.stdout
    r = run_cli("bound", "fft", "--fast-memory", "512K")
    assert "[log2(S) flop/word]" in r.stdout and "0.5*" not in r.stdout
    r = run_cli("tradeoff", "fermi-sample", "--f", "1,,2")
    assert r.exit_code == 2 and "--f" in r.stderr and r.stdout == ""


def test_a_new_name_under_dev_is_a_file_not_a_stream(tmp_path: Path) -> None:
    from archline.common.outputs import is_stream

    assert is_stream("/dev/null") and not is_stream("/dev/no-such-archline-output.png")


def test_a_ceiling_without_pi0_says_so(tmp_path: Path) -> None:
    from archline.fit.analyses.s4.power_roofline import ceilings_from_platform
    from archline.fit.platforms.profiles import load_platform

    (roof,) = ceilings_from_platform(load_platform("titan"))       # the Titan profile has no pi0 (S1 Table 6)
    assert "without pi0" in roof.label
