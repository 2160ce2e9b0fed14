"""Counter imports for CPUs: ``perf stat -x,`` (plain, -r, -I; <not supported>/<not counted>; multiplexing) and
likwid-perfctr -O CSV (TABLE blocks, multiplexed groups), from fixtures in the tools' documented formats; and the
real exports under tests/data/real/perf and tests/data/real/likwid (class TestRealCpuExports: every file read or
refused, two files per tool checked by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archline.fit.io.counters import CountersFormatError, read_counters
from archline.fit.io.counters.perf import event_key

DATA = Path(__file__).resolve().parents[1] / "data" / "counters"


def test_perf_intel_flops_lines_and_notes() -> None:
    (c,) = read_counters("perf", DATA / "perf_intel.csv")
    assert c.counts == {"flops_dp": 1_048_576 + 4 * 524_288, "flops_sp": 0.0,
                        "bytes_mem": (262_144 + 131_072) * 64, "bytes_l3": (1_000_000 + 200_000 - 393_216) * 64}
    assert c.time_s == pytest.approx(2.5e-3, rel=1e-12)
    assert c.scaled, "LLC events ran 50% of the time: perf's scaled counts are estimates"
    text = " | ".join(c.notes)
    assert "fp_arith_inst_retired.512b_packed_double: not supported" in text
    assert "l1-dcache-load-misses: not counted" in text and "llc-loads ran 50.00%" in text
    assert "not used by the model: cycles" in text and c.count_rel_err == pytest.approx(0.5)


def test_perf_repeat_variance_field_and_amd_flops() -> None:
    (c,) = read_counters("perf", DATA / "perf_amd_repeat.csv")
    assert c.counts == {"flops_dp": 3_500_000, "flops_sp": 250_000}
    assert c.time_s == pytest.approx(2e-3, rel=1e-12) and not c.scaled


def test_perf_intervals_summed_and_precisionless_event_said() -> None:
    (c,) = read_counters("perf", DATA / "perf_interval.csv")
    assert c.counts == {"flops_dp": 500_000}
    assert c.time_s == pytest.approx(2.400310234, rel=1e-12)
    assert any("no precision" in n for n in c.notes) and any("some intervals" in n for n in c.notes)


def test_perf_event_names() -> None:
    assert event_key("cpu_core/fp_arith_inst_retired.scalar_double/u") == "fp_arith_inst_retired.scalar_double"
    assert event_key("uncore_imc_0/cas_count_read/") == "cas_count_read"
    assert event_key("LLC-loads:u") == "llc-loads"


def test_perf_memory_controller_mib(tmp_path: Path) -> None:
    f = tmp_path / "imc.csv"
    f.write_text("1.50,MiB,uncore_imc_0/cas_count_read/,1000,100.00,,\n0.50,MiB,uncore_imc_1/cas_count_write/,"
                 "1000,100.00,,\n5,,LLC-load-misses,1000,100.00,,\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"bytes_mem": 2.0 * 2**20}, "the controllers' bytes win over LLC misses (no double count)"


def test_likwid_groups_summed_over_threads_and_scaled() -> None:
    (c,) = read_counters("likwid", DATA / "likwid_flops_mem.csv")
    assert c.name == "program"
    # FLOPS_DP: 2 threads x (1000 + 4 x 500000 + 8 x 250000); MEM: 6 boxes x (100000 + 50000) lines x 64 B;
    # each group ran 0.25 s of 0.5 s: x 2
    assert c.counts == {"flops_dp": 2 * 2 * (1000 + 4 * 500_000 + 8 * 250_000), "bytes_mem": 2 * 6 * 150_000 * 64}
    assert c.time_s == 0.5 and c.scaled
    assert c.raw["FLOPS_DP:FP_ARITH_INST_RETIRED_SCALAR_DOUBLE"] == 2000


def test_likwid_marker_regions_one_row_each(tmp_path: Path) -> None:
    rows = ["STRUCT,Info,3,", "CPU name:,AMD EPYC,,", "CPU type:,AMD K19 (Zen3) architecture,,",
            "CPU clock:,2.45 GHz,,"]
    for region, flops in (("solve", 8000), ("setup", 100)):
        rows += [f"TABLE,Region {region},Group 1 Raw,FLOPS_SP,1", "Region Info,HWThread 0,,",
                 "RDTSC Runtime [s],0.125000,,", "call count,4,,", "Event,Counter,HWThread 0,",
                 f"RETIRED_SSE_AVX_FLOPS_ALL,PMC2,{flops},",
                 f"TABLE,Region {region},Group 1 Metric,FLOPS_SP,1", "Metric,HWThread 0,,",
                 "Runtime (RDTSC) [s],0.125,,"]
    f = tmp_path / "regions.csv"
    f.write_text("\n".join(rows) + "\n")
    solve, setup = read_counters("likwid", f)
    assert (solve.name, solve.counts, solve.time_s) == ("solve", {"flops_sp": 8000}, 0.125)
    assert setup.counts == {"flops_sp": 100} and not solve.scaled


@pytest.mark.parametrize(("tool", "body", "needle"), [
    ("perf", "12,,cycles,5\n", "line 1: 4 fields"),
    ("perf", "<not supported>,,fp_arith_inst_retired.scalar_double,0,100.00,,\n", "not supported"),
    ("perf", "abc,,fp_arith_inst_retired.scalar_double,10,100.00,,\n", "line 1: fp_arith_inst_retired"),
    ("perf", "# started\n12,furlong,duration_time,1,100.00,,\n", "line 2: unit of duration_time"),
    ("likwid", "Group 1: FLOPS_DP\n| Event | Counter |\n", "group FLOPS_DP: no event rows"),
    ("likwid", "likwid-perfctr: command not found\n", "no likwid-perfctr table"),
    ("likwid", "TABLE,Group 1 Raw,FLOPS_DP,3,\nEvent,Counter,HWThread 0,\nX,PMC0,1,\n", "announces 3 rows"),
    ("likwid", "TABLE,Group 1 Raw,FLOPS_DP,1,\nfoo,bar\n", "line 2: expected the header"),
    ("likwid", "TABLE,Group 1 Raw,BRANCH,1,\nEvent,Counter,HWThread 0,\nBR_INST_RETIRED,PMC0,5,\n", "no event"),
])
def test_cpu_errors_name_file_line_and_what(tmp_path: Path, tool: str, body: str, needle: str) -> None:
    f = tmp_path / "export.csv"
    f.write_text(body)
    with pytest.raises(CountersFormatError) as e:
        read_counters(tool, f)
    assert needle in str(e.value) and str(f) in str(e.value)


def test_unknown_tool() -> None:
    with pytest.raises(CountersFormatError, match="unknown counter tool 'vtune'"):
        read_counters("vtune", DATA / "perf_intel.csv")
