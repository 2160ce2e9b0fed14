"""Counter imports for CPUs: ``perf stat -x,`` (plain, -r, -I; <not supported>/<not counted>; multiplexing) and
likwid-perfctr -O CSV (TABLE blocks, multiplexed groups), from fixtures in the tools' documented formats; and the
real exports under tests/data/real/perf and tests/data/real/likwid (class TestRealCpuExports: every file read or
refused, two files per tool checked by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archline.formats.counters import CountersFormatError, read_counters
from archline.formats.counters.perf import event_key

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


REAL = Path(__file__).resolve().parents[1] / "data" / "real"
#: the real files archline refuses, with the words of the reason (true of the file: see SOURCES.md)
REFUSED = {
    "rapl_validation_stream.perf.1": "perf stat's table output",  # perf stat without -x,
    "likwid-optimization_L3_128.log": "group L3",                  # L2_LINES_IN_ALL, L2_TRANS_L2_WB only
    "likwid_readme_L2.txt": "group L2",                            # L1D_REPLACEMENT, L1D_M_EVICT only
}


def _real(tool: str) -> list[Path]:
    return sorted(p for p in (REAL / tool).iterdir() if p.is_file())


class TestRealCpuExports:
    """Every real perf / likwid-perfctr file (tests/data/real/SOURCES.md): read, or refused in one line naming the
    file and a reason true of it; a file added later is read or refused the same way."""

    @pytest.mark.parametrize("path", [*_real("perf"), *_real("likwid")], ids=lambda p: p.name)
    def test_read_or_refused_for_its_reason(self, path: Path) -> None:
        tool = path.parent.name
        if path.name in REFUSED:
            with pytest.raises(CountersFormatError) as e:
                read_counters(tool, path)
            text = str(e.value)
            assert REFUSED[path.name] in text and str(path) in text and "\n" not in text
            return
        try:
            found = read_counters(tool, path)
        except CountersFormatError as e:                 # a file added later without its expected reason here
            assert str(path) in str(e) and "\n" not in str(e)
            pytest.fail(f"{path.name} is refused ({e}): add it to REFUSED with its reason, or read it")
        for c in found:
            assert c.counts or c.energy_j is not None or c.time_s, "a read program has counts, energy or time"
            assert c.time_s is None or c.time_s > 0

    def test_perf_energy_and_wall_time_by_hand(self) -> None:
        # perf stat -a -e instructions,cycles,ref-cycles,power/energy-pkg/,cpu-clock -x, (2 sockets, 32 CPUs):
        # 2263.95,Joules,power/energy-pkg/ -> 2263.95 J; 1443020.41,msec,cpu-clock,...,31.999,CPUs utilized
        # -> wall = 1443.02041 s / 31.999 = 45.0958 s (the energy's own /sec metric: 2263.95 / 1443.02 = 1.569)
        (c,) = read_counters("perf", REAL / "perf" / "cloudlab_PerfStat.linux_mcd_qps200000_iter0.csv")
        assert c.counts == {} and c.energy_j == pytest.approx(2263.95, rel=1e-12)
        assert c.time_s == pytest.approx(1443020.41e-3 / 31.999, rel=1e-12)
        assert "power/energy-pkg/" in c.energy_source and not c.scaled

    def test_perf_interval_cgroup_multiplexed_flops_by_hand(self) -> None:
        # issue 35's file: -I 1000 -G task_test_min, one interval; flops_dp = 6335375 x 1 (scalar_double)
        # + 0 x 2 + 0 x 4 + 0 x 8; flops_sp = 0; the events ran 32.52-34.22% of the time: +-(1 - 0.3252) = 67.48%
        (c,) = read_counters("perf", REAL / "perf" / "cpu-bops_readme_bops_x86_test_min.txt")
        assert c.counts == {"flops_dp": 6_335_375.0, "flops_sp": 0.0}
        assert c.scaled and c.count_rel_err == pytest.approx(1 - 0.3252, rel=1e-12)
        text = " | ".join(c.notes)
        assert "scalar_double ran 34.22% of the time" in text and "cgroup task_test_min" in text
        assert c.time_s is None and "no measured time" in text

    def test_perf_time_alone_is_read(self) -> None:
        # -C 0-30 -e instructions,cycles,ref-cycles,cpu-clock: 1087626.11 ms / 30.999 CPUs utilized = 35.0858 s
        (c,) = read_counters("perf", REAL / "perf" / "cloudlab_PerfStat.Ins.Overhead.linux_silo_iter0.csv")
        assert c.counts == {} and c.energy_j is None
        assert c.time_s == pytest.approx(1087626.11e-3 / 30.999, rel=1e-12)
        assert "no flop, memory or energy event: only the time is read" in c.notes
        # -A -a -I 1000, tab-separated, 64 CPUs: duration_time printed once per interval (CPU0); its 10 values
        # (1001047559 ns, ...) sum to 10001503519 ns
        (h,) = read_counters("perf", REAL / "perf" / "hperf_perf_result.tsv")
        assert h.counts == {} and h.time_s == pytest.approx(10.001503519, rel=1e-12)
        assert "-I: 10 intervals summed" in h.notes and any("imc/event=0x04,umask=0x0f/" in n for n in h.notes)

    def test_perf3_two_field_llc_bytes_by_hand(self) -> None:
        # perf 3.x value,event lines: bytes_mem = LLC-load-misses 79486 x 64 = 5087104 B;
        # bytes_l3 = (LLC-loads 2845364 + LLC-stores 2757204 - 79486) x 64 = 5523082 x 64 = 353477248 B;
        # time = task-clock 59978.957348 ms (CPU time: a single spinning thread)
        (c,) = read_counters("perf", REAL / "perf" / "firmament_cpu_spin.60s.hogun-baseline-0.perf")
        assert c.counts == {"bytes_mem": 5_087_104.0, "bytes_l3": 353_477_248.0}
        assert c.time_s == pytest.approx(59.978957348, rel=1e-12)
        assert any("CPU time" in n for n in c.notes) and any("perf 3.x" in n for n in c.notes)

    def test_likwid_text_two_runs_mem_dp_and_flops_dp_by_hand(self) -> None:
        # two likwid-perfctr runs (MEM_DP, then FLOPS_DP) of one program, AMD Zen 2, marker regions:
        # <function_a>: RETIRED_SSE_AVX_FLOPS_ALL 200000000 in both -> flops_dp 2e8;
        # bytes_mem = (DRAM_CHANNEL_0 6386432 + DRAM_CHANNEL_1 6385763) x 64 = 817420480 B (0.8174 GB: its metric);
        # time = (0.093733 + 0.094029) / 2 = 0.093881 s
        regions = {c.name: c for c in read_counters("likwid", REAL / "likwid" / "pm_gpu_number_crunching_likwid.out")}
        assert list(regions) == ["<init_datastructures>", "<function_a>"]
        a = regions["<function_a>"]
        assert a.counts == {"flops_dp": 200_000_000.0, "bytes_mem": 817_420_480.0}
        assert a.time_s == pytest.approx(0.093881, rel=1e-12)
        # <init_datastructures>: flops (12 + 10) / 2 = 11; bytes (12638820 + 12637860) x 64 = 1617707520
        assert regions["<init_datastructures>"].counts == {"flops_dp": 11.0, "bytes_mem": 1_617_707_520.0}
        assert not any(n.startswith("no memory event") for n in a.notes), "MEM_DP's run counted the bytes"

    def test_likwid_text_flops_sp_and_a_gpu_region_left_out_by_hand(self) -> None:
        # saxpy_cpu, FLOPS_SP, Cascade Lake: 111 x 1 (SCALAR_SINGLE) + 0 x 4 + 25000000 x 8 (256B) + 0 x 16
        # = 200000111 flops; RDTSC Runtime 0.090796 s; saxpy_gpu has only NVIDIA SMSP_* events
        (c,) = read_counters("likwid", REAL / "likwid" / "likwid_jl_saxpy.out")
        assert c.name == "saxpy_cpu" and c.counts == {"flops_sp": 200_000_111.0}
        assert c.time_s == pytest.approx(0.090796, rel=1e-12)
        assert any("region 'saxpy_gpu' left out" in n and "SMSP_SASS" in n for n in c.notes)

    def test_likwid_csv_core_columns_by_hand(self) -> None:
        # likwid 4 -O, "Core 3" columns, marker regions: multMatMat_NAO_OTIM FP_ARITH_INST_RETIRED_SCALAR_DOUBLE
        # 4194314 x 1 (the packed events 0) = 4194314 flops; time from the place printing it with the most digits:
        # Region Info's RDTSC Runtime 0.001908 (the Metric table's 0.0019); for multMatVet the Metric table's
        # 1.548999e-05 (the Region Info's 0.000015)
        found = {c.name: c for c in read_counters("likwid", REAL / "likwid" / "likwid-optimization_FLOPS_DP_128.log")}
        assert found["multMatMat_NAO_OTIM"].counts == {"flops_dp": 4_194_314.0}
        assert found["multMatMat_NAO_OTIM"].time_s == pytest.approx(0.001908, rel=1e-12)
        assert found["multMatVet_NAO_OTIM"].time_s == pytest.approx(1.548999e-05, rel=1e-12)


def test_perf_multiplexed_under_the_threshold_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "thin.csv"        # perf's documented -x, line; the event ran 8% of the time (< 10%)
    f.write_text("1000,,fp_arith_inst_retired.scalar_double,80,8.00,,\n1000000,ns,duration_time,1000000,100.00,,\n")
    with pytest.raises(CountersFormatError, match=r"scalar_double ran 8.00% of the time .*below 10% running"):
        read_counters("perf", f)


def test_perf_per_core_columns_and_energy_ram_added(tmp_path: Path) -> None:
    f = tmp_path / "per_core.csv"    # --per-core -I: interval, core id, CPUs in it, then the event line
    f.write_text("1.0,S0-D0-C0,2,100,,fp_arith_inst_retired.256b_packed_double,10,100.00,,\n"
                 "1.0,S0-D0-C1,2,50,,fp_arith_inst_retired.256b_packed_double,10,100.00,,\n"
                 "1.0,S0,1,3.5,Joules,power/energy-pkg/,10,100.00,,\n1.0,S0,1,0.5,Joules,power/energy-ram/,10,100.00,,\n"
                 "1.0,S0,1,0.25,Joules,power/energy-cores/,10,100.00,,\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"flops_dp": (100 + 50) * 4}
    assert c.energy_j == 4.0, "package + DRAM; the cores lie inside the package"


def test_perf_per_thread_ids_and_metric_only_lines(tmp_path: Path) -> None:
    f = tmp_path / "per_thread.csv"   # --per-thread: comm-pid first; perf >= 5.x adds metric-only lines
    f.write_text("worker-a-101,1000,,fp_arith_inst_retired.scalar_double,100,100.00,,\n"
                 "worker-a-101,,,,,,,0.40,insn per cycle\n"
                 "worker-b-202,3000,,fp_arith_inst_retired.scalar_double,100,100.00,,\n"
                 "worker-b-202,100.00,msec,task-clock,100,100.00,0.5,CPUs utilized\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"flops_dp": 4000.0}
    assert c.time_s == pytest.approx(0.2, rel=1e-12), "100 ms of CPU time at 0.5 CPUs utilized: 0.2 s wall"
    assert any(n.startswith("--per-thread") for n in c.notes)


DERIVED = Path(__file__).resolve().parents[1] / "data" / "derived"   # hand-made (READMEs there say how)


@pytest.mark.parametrize(("name", "needle"), [
    ("loc.csv", "decimal comma"), ("loc2.csv", "decimal comma"), ("loc3.csv", "decimal comma"),   # issue 35 #1
    ("loc4.csv", "LC_ALL=C"), ("loc5.csv", "LC_ALL=C"),
    ("intel_new.csv", "fp_arith_inst_retired.vector (1e+09) counts vector instructions of every width"),   # #7
    ("cg5.csv", "scalar_double ran 5.00% of the time"), ("cg6.csv", "scalar_double ran 5.00% of the time"),   # #3
    ("mux.csv", "line 2: percentage of fp_arith_inst_retired.scalar_double"),                    # #11
    ("llc3.csv", "llc-load-misses (2e+07) exceed llc-loads (1e+07)"),
    ("enhi.csv", "12.5 J in 0.001 s is 1.25e+04 W"), ("enraw.csv", "line 1: power/energy-pkg/ in '', not Joules"),
    ("cut1.csv", "ends in the middle of line 3"), ("cut4.csv", "ends in the middle of line 3"),  # #13
    ("js.json", "line 1: perf stat -j's JSON output"),                                          # #14
    ("cache.csv", "scalar_double ran 5.00% of the time"),
])
def test_perf_breaker_files_refused_for_their_reason(name: str, needle: str) -> None:
    with pytest.raises(CountersFormatError) as e:
        read_counters("perf", DERIVED / "perf" / name)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_perf_percentage_above_100_refused(tmp_path: Path) -> None:
    f = tmp_path / "pct.csv"
    f.write_text("1000,,fp_arith_inst_retired.scalar_double,10,150.00,,\n")
    with pytest.raises(CountersFormatError, match=r"ran 150.00% of the time: a share of the run is 0 to 100%"):
        read_counters("perf", f)


def test_perf_runs_concatenated_are_averaged() -> None:
    # cloudlab mcd.md's three runs: energy (485.05 + 475.98 + 481.46) / 3 = 480.83 J; wall time the mean of
    # 450266.06 / 32.000, 450796.67 / 32.000, 450215.65 / 32.001 (ms / CPUs utilized)
    (c,) = read_counters("perf", DERIVED / "perf" / "memc3.csv")
    assert c.energy_j == pytest.approx(480.83, rel=1e-12)
    walls = [450.26606 / 32.0, 450.79667 / 32.0, 450.21565 / 32.001]
    assert c.time_s == pytest.approx(sum(walls) / 3, rel=1e-12)
    assert any(n.startswith("3 runs of perf stat") for n in c.notes)
    # one -I run twice: the mean of the two is the one run's 595.11 J, its 30 intervals
    (i,) = read_counters("perf", DERIVED / "perf" / "int2.csv")
    (one,) = read_counters("perf", REAL / "perf" / "peakler_kepler_idle_c220g1_energy_pkg_I1000.csv")
    assert i.energy_j == pytest.approx(595.11, rel=1e-12) and one.energy_j == pytest.approx(595.11, rel=1e-12)
    assert "-I: 30 intervals summed in each run" in i.notes and "-I: 30 intervals summed" in one.notes
    # an event printed twice in one interval: the mean of its lines (5e8), not their sum
    (d,) = read_counters("perf", DERIVED / "perf" / "dupI.csv")
    assert d.counts["flops_dp"] == 500_000_000 and d.time_s == 1.0
    assert any("printed more than once" in n for n in d.notes)


def test_perf_intervals_missing_an_event_are_left_out() -> None:
    # duration_time in intervals 1-3, the flop event in 1-2, LLC-load-misses in 1: only interval 1 is read
    (c,) = read_counters("perf", DERIVED / "perf" / "Imiss.csv")
    assert c.counts == {"flops_dp": 1e9, "bytes_mem": 1e6 * 64} and c.time_s == 1.0
    assert any("in only 2" in n and "in only 1 of 3 intervals" in n and "only the 1 intervals" in n for n in c.notes)
    # CPU-BOPs' README: interval 2 cut off before its flop lines: interval 1's 8693488 flops, said so
    (r,) = read_counters("perf", REAL / "perf" / "cpu-bops_readme_ramp_test.txt")
    assert r.counts["flops_dp"] == 8_693_488 and r.count_rel_err == pytest.approx(1 - 0.3315, rel=1e-12)
    assert any("of 2 intervals" in n for n in r.notes) and not any("intervals summed" in n for n in r.notes)


def test_perf_flop_event_families() -> None:
    (a,) = read_counters("perf", DERIVED / "perf" / "amd3.csv")       # .all is the sum of the parts: 600, not 1200
    assert a.counts == {"flops_dp": 600.0} and any("is the sum of its dp/sp parts" in n for n in a.notes)


def test_perf_intel_scalar_without_precision(tmp_path: Path) -> None:
    f = tmp_path / "scalar.csv"
    f.write_text("700,,fp_arith_inst_retired.scalar,10,100.00,,\n0,,fp_arith_inst_retired.vector,10,100.00,,\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"flops_dp": 700.0} and any("gives no precision" in n for n in c.notes)


def test_perf_columns_cgroup_number_cache_cluster_semicolon_raw(tmp_path: Path) -> None:
    f = tmp_path / "cg.csv"          # -G 1000: the cgroup's name is a number; 50% running
    f.write_text("500,,fp_arith_inst_retired.scalar_double,1000,1000000000,50.00,,\n"
                 "2000.0,msec,task-clock,1000,1000000000,100.00,2.000,CPUs utilized\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"flops_dp": 500.0} and c.count_rel_err == 0.5 and c.time_s == 1.0
    assert "-G: cgroup 1000 (counts summed over them)" in c.notes
    (cl,) = read_counters("perf", DERIVED / "perf" / "cls.csv")    # --per-cluster: id and CPU count taken off
    assert cl.counts == {"flops_dp": 500_000_000.0}
    (n,) = read_counters("perf", REAL / "perf" / "netdata_issue3232_x_semicolon.csv")   # -x';' -A, 8 CPUs
    walls = [1002.070440, 1002.110830, 1002.109677, 1002.110049, 1002.143965, 1002.187700, 1002.189881]
    assert n.time_s == pytest.approx(max(max(walls) / 0.997, 1002.238780 / 0.998) * 1e-3, rel=1e-12)
    (r,) = read_counters("perf", DERIVED / "perf" / "rawenc.csv")   # the commas inside the encoding
    assert "not used by the model: cpu/event=0xc7,umask=0x01/" in r.notes and not any("-G" in x for x in r.notes)


def test_perf_imc_lines_without_unit_and_llc_under_multiplexing(tmp_path: Path) -> None:
    f = tmp_path / "imc.csv"
    f.write_text("100.00,,uncore_imc/cas_count_read/,10,100.00,,\n")
    (c,) = read_counters("perf", f)
    assert c.counts == {"bytes_mem": 6400.0}, "no unit: 64-byte lines"
    g = tmp_path / "llc.csv"
    g.write_text("10,,LLC-loads,10,50.00,,\n20,,LLC-load-misses,10,100.00,,\n")
    (d,) = read_counters("perf", g)
    assert d.counts["bytes_l3"] == 0.0 and any("exceed llc-loads" in n for n in d.notes)


def test_perf_notes_true_of_the_file() -> None:
    (nc,) = read_counters("perf", DERIVED / "perf" / "nc2.csv")
    assert any(n.startswith("the flop and memory events were not counted") for n in nc.notes)
    assert not any(n.startswith("no flop, memory or energy event") for n in nc.notes)
    (fo,) = read_counters("perf", DERIVED / "perf" / "fonly.csv")
    assert any(n.startswith("no memory event") for n in fo.notes) and fo.time_s is None
    (p,) = read_counters("perf", DERIVED / "perf" / "psys.csv")
    assert p.energy_j == 10.0 and "psys" in p.energy_source
    (r,) = read_counters("perf", DERIVED / "perf" / "ram.csv")
    assert r.energy_j is None and any("is the DRAM's energy, not the package's" in n for n in r.notes)


def test_likwid_runtime_from_the_event_table() -> None:
    for name in ("lkcustom.txt", "lk1g.txt"):     # 1.400006e-03 in the Event table; 0.0014 in lk1g's Metric table
        (c,) = read_counters("likwid", DERIVED / "likwid" / name)
        assert c.time_s == pytest.approx(1.400006e-3, rel=1e-12) and not any("no measured" in n for n in c.notes)
    # FLOPS_DP 1 s, MEM 3 s: flops (1e6 x (2 + 1 + 4)) x 4/1, bytes 2e6 x 64 x 4/3; +-(1 - 1/4)
    (g,) = read_counters("likwid", DERIVED / "likwid" / "lk2g.txt")
    assert g.counts == pytest.approx({"flops_dp": 28e6, "bytes_mem": 2e6 * 64 * 4 / 3}, rel=1e-12)
    assert g.time_s == 4.0 and g.count_rel_err == pytest.approx(0.75)
    (o,) = read_counters("likwid", DERIVED / "likwid" / "lkOc.csv")
    assert o.time_s == 2.0


def test_likwid_group_multiplexed_under_10_percent_refused_and_energy_read() -> None:
    with pytest.raises(CountersFormatError, match=r"group FLOPS_DP ran 0.05 s of 1 s \(5.00%, multiplexed\)"):
        read_counters("likwid", DERIVED / "likwid" / "lk2g5.txt")
    (c,) = read_counters("likwid", DERIVED / "likwid" / "lkO.csv")
    assert c.energy_j == 60.0 and "PWR_PKG_ENERGY + PWR_DRAM_ENERGY" in c.energy_source


def test_likwid_group_naming_no_precision(tmp_path: Path) -> None:
    f = tmp_path / "custom.txt"      # AMD's precisionless flops in a custom event set (likwid-perfctr -g EVENT:PMC)
    f.write_text("Group 1: Custom\n| Event | Counter | HWThread 0 |\n| Runtime (RDTSC) [s] | TSC | 1.0e-01 |\n"
                 "| RETIRED_SSE_AVX_FLOPS_ALL | PMC0 | 5000 |\n")
    (c,) = read_counters("likwid", f)
    assert c.counts == {"flops_dp": 5000.0} and c.time_s == 0.1
    assert "RETIRED_SSE_AVX_FLOPS_ALL in group Custom, which names no precision: counted as flops_dp" in c.notes
    assert not any("the precision of group" in n for n in c.notes)
