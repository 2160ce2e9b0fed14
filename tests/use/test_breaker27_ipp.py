"""Breaker 27 items 6-10 and 16: `archline ipp fit / validate / microbench` and IPP GPU files.

Rows files are strict CSV (a column named twice, a ragged row: one line naming the file and the line, exit 2);
a power above 1 MW (``archline.fit.io.costs_units.implausible``) is refused in rows and GPU files; the footer, the
--help and docs/analyses.md quote what S3 (Hong & Kim, ISCA 2010) prints: §6.1 2.5% (Fig. 7) and 9.18% (Fig. 9),
§6.3 (Fig. 12) 2.7% and 8.94%."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "analyses.md"


def _rows(run_cli: Callable[..., Any], tmp_path: Path, *args: str) -> Path:
    r = run_cli("ipp", "microbench", *args)
    assert r.exit_code == 0, r.stderr
    p = tmp_path / "rows.csv"
    p.write_text(r.stdout)
    return p


def _refused(run_cli: Callable[..., Any], *args: str) -> str:
    r = run_cli(*args)
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    return str(r.stderr)


def test_item6_docs_quote_the_validate_result(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Item 6: the docs' number for `ipp validate` on `microbench --noise 0.03 --seed 2` is what it prints."""
    rows = _rows(run_cli, tmp_path, "--noise", "0.03", "--seed", "2")
    r = run_cli("ipp", "validate", str(rows))
    assert r.exit_code == 0, r.stderr
    got = re.search(r"geometric-mean error (\d+\.\d+)%", r.stdout)
    assert got is not None
    doc = DOCS.read_text()
    m = re.search(r"on `microbench --noise 0\.03 --seed 2` it is (\d+\.\d+)%", doc)
    assert m is not None and m.group(1) == got.group(1) == "1.74"


def test_item7_paper_numbers_in_footer_help_and_docs(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Item 7: S3 §6.1 prints 2.5% (microbenchmarks, Fig. 7) and 9.18% (GPGPU kernels, Fig. 9); §6.3 with IPP's
    predicted times (Fig. 12) 2.7% and 8.94%. Footer, --help and docs say the same, with the figure."""
    rows = _rows(run_cli, tmp_path)
    out = run_cli("ipp", "validate", str(rows)).stdout
    helptext = " ".join(run_cli("ipp", "validate", "--help").stdout.split())
    doc = DOCS.read_text()
    for text in (out, helptext, doc):
        for s in ("§6.1", "2.5%", "Fig. 7", "9.18%", "Fig. 9", "§6.3", "Fig. 12", "2.7%", "8.94%"):
            assert s in text, (s, text[:200])
    assert "Fig. 12 / §6.3: 2.7% and 8.94% (kernels)" not in doc


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item8_column_named_twice(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines(keepends=True)
    dup = tmp_path / "dup.csv"
    dup.write_text(lines[0].replace("rate_reg", "rate_fp") + "".join(lines[1:]))
    err = _refused(run_cli, "ipp", sub, str(dup))
    assert "dup.csv, line 1" in err and "rate_fp" in err and "twice" in err


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item9_ragged_rows(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines()
    more = tmp_path / "r.csv"
    more.write_text("\n".join([lines[0], lines[1] + ",extra", *lines[2:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(more))
    assert "r.csv, line 2" in err and "more" in err
    fewer = tmp_path / "s.csv"
    fewer.write_text("\n".join([*lines[:2], lines[2].rsplit(",", 1)[0], *lines[3:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(fewer))
    assert "s.csv, line 3" in err and "fewer" in err


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item10_power_above_1mw_refused(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines()
    f = lines[1].split(",")
    f[1] = "1e308"
    big = tmp_path / "big.csv"
    big.write_text("\n".join([lines[0], ",".join(f), *lines[2:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(big))
    assert "big.csv, line 2" in err and "gpu_power_w" in err and "real machine" in err
    f[1] = "999999"   # at most 1 MW: accepted
    big.write_text("\n".join([lines[0], ",".join(f), *lines[2:]]) + "\n")
    assert run_cli("ipp", sub, str(big)).exit_code == 0


@pytest.mark.parametrize(("old", "new", "key"), [
    ("idle_power_w = 83.0", "idle_power_w = 1e308", "idle_power_w"),
    ("max_power_w = 52.0", "max_power_w = 52e9", "max_power_w"),
])
def test_item16_gpu_file_power_above_1mw_refused(run_cli: Callable[..., Any], tmp_path: Path, old: str, new: str,
                                                 key: str) -> None:
    text = run_cli("ipp", "gpu", "gtx280").stdout
    assert old in text
    g = tmp_path / "g.toml"
    g.write_text(text.replace(old, new, 1))
    err = _refused(run_cli, "ipp", "microbench", "--gpu", str(g))
    assert "g.toml" in err and key in err and "real machine" in err
    g.write_text(text)
    assert run_cli("ipp", "microbench", "--gpu", str(g)).exit_code == 0
