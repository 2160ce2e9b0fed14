"""Counter exports whose numbers overflow on unit scaling, or whose kernels took no time, are refused with one
line naming the file and the count (breaker 25, item 8), never an inf or NaN energy with exit 0."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from archline.formats.counters import CountersFormatError, read_counters

NCU = Path(__file__).resolve().parents[1] / "data" / "counters" / "ncu_raw.csv"


def _variant(tmp_path: Path, column: str, unit: str | None, value: str) -> Path:
    lines = NCU.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    k = rows[0].index(column)
    if unit is not None:
        rows[1][k] = unit
    for r in rows[2:]:
        r[k] = value
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    out = tmp_path / "ncu.csv"
    out.write_text("\n".join(lines[:start]) + "\n" + buf.getvalue())
    return out


def test_a_count_that_overflows_is_refused(tmp_path: Path) -> None:
    f = _variant(tmp_path, "dram__bytes_read.sum", "Mbyte", "1e308")
    with pytest.raises(CountersFormatError, match=r"bytes_mem.*overflow"):
        read_counters("ncu", f)


def test_a_kernel_that_took_no_time_is_refused(tmp_path: Path) -> None:
    f = _variant(tmp_path, "gpu__time_duration.sum", None, "0")
    with pytest.raises(CountersFormatError, match="time"):
        read_counters("ncu", f)


def test_predict_says_so_in_one_line(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    f = _variant(tmp_path, "dram__bytes_read.sum", "Mbyte", "1e308")
    r = run_cli("predict", "--counters", str(f), "--tool", "ncu", "--costs", "gtx580")
    assert r.exit_code == 2 and "inf" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_export_as_written_still_reads() -> None:
    assert [c.name for c in read_counters("ncu", NCU)]


def test_rocprof_wave_size_zero_is_refused(tmp_path: Path) -> None:
    """Breaker 25 item 17: wave_size 0 would count every VALU flop as 0."""
    text = NCU.with_name("rocprof_results.csv").read_text()
    assert ",64,0x0," in text
    f = tmp_path / "results.csv"
    f.write_text(text.replace(",64,0x0,", ",0,0x0,"))
    with pytest.raises(CountersFormatError, match="wave_size is 0"):
        read_counters("rocprof", f)


def test_likwid_without_a_memory_group_says_dram_is_not_counted(tmp_path: Path) -> None:
    text = NCU.with_name("likwid_flops_mem.csv").read_text()
    cut = text[: text.index("TABLE,Group 2 Raw")]
    f = tmp_path / "flops_only.csv"
    f.write_text(cut)
    (c,) = read_counters("likwid", f)
    assert "bytes_mem" not in c.counts and any("DRAM bytes not counted" in n for n in c.notes)
