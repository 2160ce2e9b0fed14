"""Counter imports for GPUs: Nsight Compute (ncu --csv, details and --page raw) and rocprof (v1 results.csv,
rocprofv3 counter_collection.csv), from fixtures in the tools' documented formats (tests/data/counters/)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from archline.formats.counters import CountersFormatError, read_counters

DATA = Path(__file__).resolve().parents[1] / "data" / "counters"
N = 1_048_576                   # daxpy elements per launch


def test_ncu_raw_page_exact_counts() -> None:
    daxpy, scale = read_counters("ncu", DATA / "ncu_raw.csv")
    assert (daxpy.name, scale.name) == ("daxpy", "scale_add")
    # two launches: dfma x 2 flops, dram 16 B read + 8 B written per element, lts in Mbyte (SI)
    assert daxpy.counts == {"flops_sp": 0.0, "flops_dp": 2 * 2 * N, "bytes_mem": 2 * 24 * N,
                            "bytes_l2": 2 * N, "bytes_l1": 2 * (33_554_432 - 26_214_400)}
    assert daxpy.time_s == pytest.approx(103e-6, rel=1e-12)
    assert scale.counts == {"flops_sp": 2 * 131_072, "flops_dp": 65_536, "bytes_mem": 524_288,
                            "bytes_l2": 786_432 - 524_288, "bytes_l1": 1_048_576 - 786_432}
    assert "2 launch(es) summed" in daxpy.notes and scale.source.startswith("ncu ")


def test_ncu_details_page_reads_the_same_launches_in_scaled_units() -> None:
    """The details page prints ncu's auto-scaled units (Mbyte, Kbyte, usecond) to 4 digits."""
    daxpy, scale = read_counters("ncu", DATA / "ncu_details.csv")
    assert daxpy.counts["flops_dp"] == 4 * N
    assert daxpy.counts["bytes_mem"] == pytest.approx(2 * (16.78e6 + 8.39e6), rel=1e-12)
    assert daxpy.counts["bytes_l2"] == pytest.approx(2 * (26.21e6 - 25.17e6), rel=1e-9)
    assert daxpy.time_s == pytest.approx(103e-6, rel=1e-12)
    assert scale.counts["bytes_mem"] == pytest.approx(524_280, rel=1e-12)
    assert scale.counts["flops_sp"] == 262_144 and scale.counts["flops_dp"] == 65_536


def test_rocprof_v1_results_wave64_and_kilobytes() -> None:
    daxpy, sscale = read_counters("rocprof", DATA / "rocprof_results.csv")
    assert daxpy.counts == {"flops_dp": 2 * (16_384 * 2 * 64), "flops_sp": 0.0, "int_ops": 2 * 32_768 * 64,
                            "bytes_mem": 2 * (16_384 + 8_192) * 1024}
    assert daxpy.time_s == pytest.approx(120e-6, rel=1e-9)
    assert sscale.counts["flops_dp"] == 1024 * 64 and sscale.counts["flops_sp"] == 1024 * 2 * 64
    assert sscale.time_s == pytest.approx(4e-6, rel=1e-9)


def test_rocprofv3_long_form_requests() -> None:
    (daxpy,) = read_counters("rocprof", DATA / "rocprofv3_counter_collection.csv")
    assert daxpy.counts == {"flops_dp": 2 * 16_384 * 2 * 64, "bytes_mem": 2 * (262_144 * 64 + 131_072 * 64),
                            "bytes_l2": 2 * 8_192 * 128}
    assert daxpy.time_s == pytest.approx(120e-6, rel=1e-9)
    assert any("wave64 assumed" in n for n in daxpy.notes)


@pytest.mark.parametrize(("tool", "body", "needle"), [
    ("ncu", '"a","b"\n"1","2"\n', "no ncu --csv header"),
    ("ncu", '"ID","Kernel Name","dram__bytes_read.sum"\n"","","byte"\n"0","k","12x"\n', "line 3: dram__bytes_read.sum"),
    ("ncu", '"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","12"\n', "line 2: expected the units row"),
    ("ncu", '"ID","Kernel Name","dram__bytes_read.sum"\n"","","furlong"\n"0","k","12"\n', "unknown unit 'furlong'"),
    ("ncu", '"ID","Kernel Name","sm__cycles_elapsed.sum"\n"","","cycle"\n"0","k","12"\n',
     "no flop or byte metric in this file"),
    ("rocprof", "Index,KernelName,SQ_INSTS_VALU_FMA_F64\n0,k\n", "line 2: 2 fields, the header has 3"),
    ("rocprof", "Index,Name,X\n", "no rocprof header"),
    ("rocprof", "Index,KernelName,GRBM_COUNT\n0,k,5\n", "no flop or byte counter in this file (counters: GRBM_COUNT)"),
])
def test_gpu_errors_name_file_line_and_what(tmp_path: Path, tool: str, body: str, needle: str) -> None:
    f = tmp_path / "export.csv"
    f.write_text(body)
    with pytest.raises(CountersFormatError) as e:
        read_counters(tool, f)
    assert needle in str(e.value) and str(f) in str(e.value)


REAL = Path(__file__).resolve().parents[1] / "data" / "real"
#: every real file (tests/data/real/{ncu,rocprof}, origins in SOURCES.md): the kernels read (their names, or how
#: many), or the refusal's reason (true of the file). A file added later fails here until its outcome is stated.
REAL_OUTCOME: dict[str, list[str] | int | str] = {
    "ncu/a100_gemm_details_thousands.csv": ["void randomInit<float>", "void gemm_v0<float>"],
    "ncu/a100_share_tile_failed_kernel.csv": ["void randomInit<float>", "void gemm_v0<float>"],
    "ncu/ampere_conv2d_ragged_rules.csv": ["void implicit_convolve_sgemm<float, float, (int)128, (int)5, (int)5, "
                                           "(int)3, (int)3, (int)3, (int)1, (bool)0, (bool)0, (bool)1>"],
    "ncu/ampere_interpolate_kernel_time.csv": ["ampere_sgemm_32x32_sliced1x4_tn",
                                               "void splitKreduce_kernel<float, float, float, float>"],
    "ncu/ampere_conv2d_roofline_rules_only.csv": "no flop or byte metric in this file (only rule results: "
                                                 "SOLFPRoofline (SpeedOfLight_RooflineChart))",
    "ncu/b200_page_raw_time_only.csv": "no flop or byte metric in this file (time (gpu__time_duration.sum) among "
                                       "its 464 metrics)",
    "ncu/a100_summary_per_kernel_metrics.csv": ["kernel_B", "kernel_A"],
    "ncu/a100_summary_per_kernel_timing.csv": "no flop or byte metric in this file (time (gpu__time_active.avg) among "
                                              "its 1 metrics",
    "ncu/a100_summary_per_kernel_events.csv": "no flop or byte metric in this file (its 1 metrics: "
                                              "smsp__thread_inst_executed.sum",
    "ncu/no_kernels_profiled.csv": "ncu said: ==ERROR== The application returned an error code (2). / "
                                   "==WARNING== No kernels were profiled.",
    "ncu/a100_sgemm_details_thousands.csv": ["void randomInit<float>", "void gemm_v1<float>"],
    "ncu/a100_cutlass_gemm_tensor_pipe.csv": 4,       # CUTLASS and cuBLAS fp16 GEMMs: tensor pipe named, not charged
    "ncu/ncu_err_nvgpuctrperm.csv": "ncu said: ==ERROR== Error: ERR_NVGPUCTRPERM - The user does not have "
                                    "permission to access NVIDIA GPU Performance Counters",
    "rocprof/gfx936_v1_results_per_instance.csv": ["_Z6k_readILi1EEvPKDv4_fmPf", "_Z7k_writeILi1EEvPDv4_fmf",
                                                   "_Z6k_copyILi1EEvPKDv4_fPS0_m", "_Z11k_mmac_bf16ILi8EEviPf",
                                                   "_Z9k_fma_f32ILi16EEviPf", "_Z6k_exp2ILi8EEviPf",
                                                   "_Z10k_lds_readiPf"],
    "rocprof/mi200_omniperf_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi200_omniperf_dispatch_0_1_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi200_omniperf_sq_pmc_perf.csv": ["vecCopy"],        # SQ block only: int ops, no flop, no bytes
    "rocprof/mi100_omniperf_tcc_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi300x_omniperf_tcc_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi300a_omniperf_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi100_omniperf2022_tcc_v1_results.csv": 167,        # mixbench: 167 kernels, one dispatch each
    "rocprof/mi300x_omniperf_pmc_perf.csv": ["vecCopy"],
    "rocprof/mi200_omniperf_timestamps.csv": "no flop or byte counter in this file (no counter columns: a kernel "
                                             "trace, time only)",
    "rocprof/rocprofv3_docs_counter_collection.csv": "no flop or byte counter in this file (counters: SQ_WAVES)",
    "rocprof/rocprofv3_docs_kernel_trace.csv": "no flop or byte counter in this file (no counter columns: a kernel "
                                               "trace, time only)",
    "rocprof/rocprofv3_issue57_counter_collection.csv": "no flop or byte counter in this file (counters: "
                                                        "MemUnitBusy)",
}


def _real_files() -> list[str]:
    return sorted(f"{p.parent.name}/{p.name}" for tool in ("ncu", "rocprof") for p in (REAL / tool).iterdir()
                  if p.is_file())


def _read(rel: str) -> list[Any]:
    return read_counters(rel.split("/", 1)[0], REAL / rel)


class TestRealNcuRocprof:
    """Engineer N's corpus: real ncu and rocprof exports from public repositories and issues, unedited."""

    @pytest.mark.parametrize("rel", _real_files())
    def test_every_real_file_reads_or_is_refused_for_its_reason(self, rel: str) -> None:
        assert rel in REAL_OUTCOME, f"{rel}: state what it reads to (or why it is refused) in REAL_OUTCOME"
        want = REAL_OUTCOME[rel]
        if isinstance(want, str):
            with pytest.raises(CountersFormatError) as e:
                _read(rel)
            msg = str(e.value)
            assert want in msg and rel.split("/", 1)[1] in msg and "\n" not in msg
            return
        got = _read(rel)
        assert (len(got) if isinstance(want, int) else [c.name for c in got]) == want
        for c in got:
            assert c.counts and all(math.isfinite(v) and v >= 0 for v in c.counts.values())
            assert (c.time_s is not None and c.time_s > 0) or any("no measured time" in n for n in c.notes)

    def test_ncu_sm_prefix_metrics_in_kernel_time_layout(self) -> None:
        """ncu 2022 (a "Kernel Time" column), NERSC's sm__ spelling, thousands separators, time in nsecond."""
        sgemm, reduce = _read("ncu/ampere_interpolate_kernel_time.csv")
        # sgemm: fadd 6,144 + fmul 8,192 + 2 x ffma 65,536 = 145,408; dram__bytes.sum 512; lts__t_bytes.sum 233,856
        # - 512 = 233,344; l1tex__t_bytes.sum 384 is below lts: 0 (noted); gpu__time_duration.sum 7,488 nsecond
        assert sgemm.counts == {"flops_sp": 145_408, "flops_dp": 0.0, "bytes_mem": 512, "bytes_l2": 233_344,
                                "bytes_l1": 0.0}
        assert sgemm.time_s == pytest.approx(7_488e-9, rel=1e-12)
        assert any("below lts__t_bytes.sum" in n for n in sgemm.notes)
        # splitKreduce: fadd 12 + fmul 4 = 16; dram 256; lts 142,208 - 256 = 141,952; 4,224 ns
        assert reduce.counts == {"flops_sp": 16, "flops_dp": 0.0, "bytes_mem": 256, "bytes_l2": 141_952,
                                 "bytes_l1": 0.0}
        assert reduce.time_s == pytest.approx(4_224e-9, rel=1e-12)

    def test_ncu_ragged_rule_rows_shared_memory_and_cycle_time(self) -> None:
        """A 15-column header (Rule Name, Rule Type, Rule Description) over 13-field metric rows; 2 rule rows."""
        (conv,) = _read("ncu/ampere_conv2d_ragged_rules.csv")
        # 2 x ffma 524,288 + fmul 16,384 = 1,064,960; dram 66,048; lts 877,856 - 66,048 = 811,808; l1tex 344,064 is
        # below lts: 0; shared wavefronts 8,640 x 128 B = 1,105,920; hfma 20,480 x 2 = 40,960 fp16 flops not charged
        assert conv.counts == {"flops_sp": 1_064_960, "flops_dp": 0.0, "bytes_shared": 1_105_920,
                               "bytes_mem": 66_048, "bytes_l2": 811_808, "bytes_l1": 0.0}
        assert "40960 half-precision flops read but not charged (no fp16 cost in the model)" in conv.notes
        # sm__cycles_elapsed.avg 6,387.24 cycle / sm__cycles_elapsed.avg.per_second 959,621,505.52 cycle/second
        assert conv.time_s == pytest.approx(6_387.24 / 959_621_505.52, rel=1e-12)
        assert "time_s from sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second" in conv.notes

    def test_ncu_thousands_separators_and_launches_summed(self) -> None:
        init, gemm = _read("ncu/a100_gemm_details_thousands.csv")
        # gemm_v0 (ID 2): ffma "34,359,738,368,000.00" x 2; dram "4,394,965,922,944.00"; lts
        # 13,077,104,026,080 - dram = 8,682,138,103,136; l1tex 171,805,402,726,400 - lts = 158,728,298,700,320
        assert gemm.counts == {"flops_sp": 68_719_476_736_000, "flops_dp": 0.0, "bytes_mem": 4_394_965_922_944,
                               "bytes_l2": 8_682_138_103_136, "bytes_l1": 158_728_298_700_320}
        assert gemm.time_s == pytest.approx(28_293_058_736.76 / 764_999_997.55, rel=1e-12)
        # randomInit, IDs 0 and 1: ffma 838,860,800 x 2 flops x 2 launches; dram 5,318,969,728 + 5,419,659,136
        assert init.counts["flops_sp"] == 3_355_443_200 and init.counts["bytes_mem"] == 10_738_628_864
        assert "2 launch(es) summed" in init.notes

    def test_ncu_per_kernel_summary_sectors_and_parts(self) -> None:
        """--print-summary per-kernel (no ID; Invocations, Minimum, Maximum, Average) with sector metrics."""
        kernel_b, _ = _read("ncu/a100_summary_per_kernel_metrics.csv")
        # Average x Invocations (100) x 32 B: dram__sectors_read.sum 402,339.36 (write 0.00) = 1,287,485,952;
        # L2: lts__t_sectors_op_{read 563,533.63, write 127.02, atom 0, red 2,706,852.00} = 3,270,512.65 sectors
        # = 10,465,640,480 B, less DRAM = 9,178,154,528; shared wavefronts op_ld 83,411.23 + op_st 82,944.00 =
        # 166,355.23 x 100 x 128 B = 2,129,346,944; L1 global ld 375,000.00 + st 0 sectors (1.2e9 B) < L2: 0
        assert kernel_b.counts == pytest.approx({"bytes_mem": 1_287_485_952, "bytes_l2": 9_178_154_528,
                                                 "bytes_shared": 2_129_346_944, "bytes_l1": 0.0}, rel=1e-12)
        assert kernel_b.time_s is None
        assert "100 launch(es) summed (ncu's per-kernel summary: Average x Invocations)" in kernel_b.notes
        assert "dram__bytes_read.sum = dram__sectors_read.sum x 32 B" in kernel_b.notes

    def test_ncu_error_lines_are_named_in_the_notes(self) -> None:
        for c in _read("ncu/a100_share_tile_failed_kernel.csv"):
            assert any('Failed to profile "gemm_shared_tile"' in n for n in c.notes), c.notes

    def test_rocprof_omniperf_mi200_requests_hits_and_int(self) -> None:
        (copy,) = _read("rocprof/mi200_omniperf_pmc_perf.csv")
        # TCC_EA_RDREQ_sum 131,080 (no 32B) x 64 = 8,389,120; TCC_EA_WRREQ_sum 131,072, all 64B: 8,388,608;
        # TCC_HIT_sum 73,037 x 128 = 9,348,736; SQ_INSTS_VALU_INT32 114,688 x wave 64 = 7,340,032; no F32/F64 VALU
        assert copy.counts == {"flops_sp": 0.0, "flops_dp": 0.0, "int_ops": 7_340_032, "bytes_mem": 16_777_728,
                               "bytes_l2": 9_348_736}
        # End_Timestamp - Start_Timestamp: 1,411,987,252,082,105 - 1,411,987,252,061,945 = 20,160 ns
        assert copy.time_s == pytest.approx(20_160e-9, rel=1e-9)

    def test_rocprof_omniperf_mi300x_ea0_names_and_128_byte_reads(self) -> None:
        (copy,) = _read("rocprof/mi300x_omniperf_pmc_perf.csv")
        # per dispatch: 128 x TCC_BUBBLE_sum 65,536 + 64 x (TCC_EA0_RDREQ_sum - 65,536) + TCC_EA0_WRREQ_64B_sum
        # 131,072 x 64; RDREQ 65,767, 65,767, 65,756: 3 x (8,388,608 + 8,388,608) + 64 x (231 + 231 + 220)
        assert copy.counts["bytes_mem"] == 3 * 16_777_216 + 64 * 682 == 50_375_296
        # TCC_HIT_sum 66,160 + 65,536 + 65,536 = 197,232 x 128; (INT32 49,152 + INT64 32,768) x 64 x 3
        assert copy.counts["bytes_l2"] == 25_245_696 and copy.counts["int_ops"] == 15_728_640
        assert copy.time_s == pytest.approx((16_160 + 13_680 + 14_160) * 1e-9, rel=1e-9)

    def test_rocprof_v1_templated_names_and_exact_stamps(self) -> None:
        """rocprof v1 on an MI100 (2022): "void benchmark_func<float, 256, 8u, 0u>(float, float*) [clone .kd]"."""
        got = {c.name: c for c in _read("rocprof/mi100_omniperf2022_tcc_v1_results.csv")}
        k = got["void benchmark_func<float, 256, 8u, 0u>"]
        # line 4: TCC_EA_RDREQ_sum 2,101,790 x 64 B (no 32B, no writes); TCC_HIT_sum 423 x 128 B
        assert k.counts == {"bytes_mem": 134_514_560, "bytes_l2": 54_144}
        # EndNs 12,075,177,954,570,549 - BeginNs 12,075,177,954,432,950 = 137,599 ns (past 2**53: exact as ints)
        assert k.time_s == pytest.approx(137_599e-9, rel=1e-12)

    def test_rocprof_v1_per_instance_counters_summed(self) -> None:
        read, *_ = _read("rocprof/gfx936_v1_results_per_instance.csv")
        # TCC_EA_RDREQ[0..31]: 32 x 524,288 + (3+2+4+1+0+1+6+5+0+1+4+5+0+0+5+9+0+0+4+9+1+3+4+4+1+2+5+4+5+0+7+4 = 99)
        # = 16,777,315 requests x 64 B (TCC_EA_RDREQ_32B all 0); no WRREQ in the file: writes not counted (noted)
        assert read.counts == {"bytes_mem": 64 * 16_777_315}
        assert "TCC_EA_WRREQ not in this file: DRAM writes not counted" in read.notes
        assert read.time_s == pytest.approx((782_810_283_036_421 - 782_810_282_185_861) * 1e-9, rel=1e-9)

    def test_ncu_rule_columns_of_2025_over_shorter_rows(self, tmp_path: Path) -> None:
        """The issue's shape (made here, not a real file): 20 columns in the header, 16 fields in metric rows."""
        head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
                "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
        ident = ["0", "1", "a.out", "h", "k(double*)", "1", "7", "(256, 1, 1)", "(4096, 1, 1)", "0", "10.0"]
        rows = [head, [*ident, "Command line profiler metrics", "dram__bytes_read.sum", "Mbyte", "1.05", ""],
                [*ident, "Command line profiler metrics", "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
                 "inst", "1,048,576", ""],
                [*ident, "GPU Speed Of Light Throughput", "Duration", "us", "12.34", ""],
                [*ident, "SpeedOfLight", "", "", "", "SOLBottleneck", "OPT", "low utilization", "global", "50"]]
        f = tmp_path / "ncu2025.csv"
        f.write_text("".join(",".join(f'"{c}"' for c in r) + "\n" for r in rows))
        (k,) = read_counters("ncu", f)
        assert k.counts == {"flops_dp": 2 * 1_048_576, "bytes_mem": 1.05e6}
        assert k.time_s == pytest.approx(12.34e-6, rel=1e-12)


# --- issue 35 (breaker's hostile files, made here: hand-made, not real exports) ---------------------------------

_HEAD = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
         "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
_FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
_DUR = "gpu__time_duration.sum"


def _ncu(tmp_path: Path, rows: list[tuple[str, ...]], name: str = "k(float*)", head: list[str] | None = None,
         encoding: str = "utf-8") -> Path:
    """A details page: rows of (ID, process, metric, unit, value[, kernel])."""
    out = [head or _HEAD]
    for r in rows:
        ident, pid, metric, unit, value = r[:5]
        kernel = r[5] if len(r) > 5 else name
        out.append([ident, pid, "app", "h", kernel, "1", "7", "(256, 1, 1)", "(4096, 1, 1)", "0", "8.0",
                    "Command line profiler metrics", metric, unit, value])
    f = tmp_path / "ncu.csv"
    f.write_text("".join(",".join(f'"{c}"' for c in r) + "\n" for r in out), encoding=encoding)
    return f


def _launch(ident: str, pid: str, dram_b: str, dur_us: str, ffma: str = "100") -> list[tuple[str, ...]]:
    return [(ident, pid, "dram__bytes_read.sum", "byte", dram_b), (ident, pid, _DUR, "usecond", dur_us),
            (ident, pid, _FFMA, "inst", ffma)]


class TestHostileNcu:
    """Issue 35's breaker (findings 1-5, 8, 13, 16-20): each case built here as the breaker's file had it."""

    def test_launches_of_two_processes_both_summed(self, tmp_path: Path) -> None:
        """#1: ID "0" in process 1 (1000 B, 10 us) and in process 2 (7000 B, 70 us): both, not the first."""
        (k,) = read_counters("ncu", _ncu(tmp_path, _launch("0", "1", "1000", "10") + _launch("0", "2", "7000", "70")))
        assert k.counts == {"flops_sp": 400.0, "bytes_mem": 8000.0}
        assert k.time_s == pytest.approx(80e-6, rel=1e-12)
        assert "2 launch(es) of 2 processes summed" in k.notes

    def test_raw_page_launches_of_two_processes(self, tmp_path: Path) -> None:
        f = tmp_path / "raw.csv"
        f.write_text('"ID","Process ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum"\n'
                     '"","","","byte","usecond"\n"0","111","k(float*)","1000","10"\n"0","222","k(float*)","7000","70"\n')
        (k,) = read_counters("ncu", f)
        assert k.counts == {"bytes_mem": 8000.0} and k.time_s == pytest.approx(80e-6, rel=1e-12)

    def test_summary_rows_of_two_launch_shapes_and_two_processes(self, tmp_path: Path) -> None:
        """#2: one kernel, 14 launches of one shape (4.10 MB, 2.94 us, 1,048,576 ffma) and 3 of another (10 KB,
        1 us, 8,192 ffma): 14 x 2.94 + 3 x 1 = 44.16 us, 14 x 4.1e6 + 3 x 1e4 = 5.743e7 B, 2 x (14 x 1,048,576 +
        3 x 8,192) = 29,409,280 flops."""
        head = ["Process ID", "Process Name", "Host Name", "Kernel Name", "Block Size", "Grid Size", "Device", "CC",
                "Invocations", "Section Name", "Metric Name", "Metric Unit", "Minimum", "Maximum", "Average"]

        def rows(pid: str, block: str, n: str, b: tuple[str, str], t: str, ffma: str) -> list[list[str]]:
            base = [pid, "app", "h", "saxpy(float, float*)", block, "(4096, 1, 1)", "0", "11.0", n,
                    "Command line profiler metrics"]
            return [[*base, "dram__bytes_read.sum", b[1], b[0], b[0], b[0]], [*base, _DUR, "usecond", t, t, t],
                    [*base, _FFMA, "inst", ffma, ffma, ffma]]
        body = [head, *rows("1", "(256, 1, 1)", "14", ("4.10", "Mbyte"), "2.94", "1,048,576"),
                *rows("1", "(128, 1, 1)", "3", ("10", "Kbyte"), "1", "8,192")]
        f = tmp_path / "summary.csv"
        f.write_text("".join(",".join(f'"{c}"' for c in r) + "\n" for r in body))
        (k,) = read_counters("ncu", f)
        assert k.time_s == pytest.approx(44.16e-6, rel=1e-12)
        assert k.counts == pytest.approx({"flops_sp": 29_409_280, "bytes_mem": 5.743e7}, rel=1e-12)
        assert any(n.startswith("17 launch(es) summed") and "2 launch shapes" in n for n in k.notes)
        body = [head, *rows("1", "(256, 1, 1)", "1,024", ("4.00", "Mbyte"), "1.5", "1,000"),
                *rows("2", "(256, 1, 1)", "1,024", ("4.00", "Mbyte"), "1.5", "1,000")]
        f.write_text("".join(",".join(f'"{c}"' for c in r) + "\n" for r in body))
        (k,) = read_counters("ncu", f)
        assert k.counts["bytes_mem"] == pytest.approx(2 * 1024 * 4e6, rel=1e-12)      # the second process too
        assert k.time_s == pytest.approx(2 * 1024 * 1.5e-6, rel=1e-12)

    @pytest.mark.parametrize("value", ["n/a", ""])
    def test_a_missing_value_is_named_never_zero(self, tmp_path: Path, value: str) -> None:
        """#3: an "n/a" or empty ffma in launch 0 of 2: the total is launch 1's, said so."""
        rows = _launch("0", "1", "1000", "5", value) + _launch("1", "1", "1000", "5")
        (k,) = read_counters("ncu", _ncu(tmp_path, rows))
        assert k.counts["flops_sp"] == 200.0
        assert f"{_FFMA} has no value (n/a or empty) in 1 launch(es): not counted there, so its total is low" \
            in k.notes

    def test_every_value_missing_is_refused_saying_so(self, tmp_path: Path) -> None:
        f = _ncu(tmp_path, [("0", "1", "dram__bytes_read.sum", "byte", "n/a"), ("0", "1", _DUR, "usecond", "5")])
        with pytest.raises(CountersFormatError, match=r"dram__bytes_read.sum with no value \(n/a or empty\) in "
                                                      r"every launch") as e:
            read_counters("ncu", f)
        assert "other kernels" not in str(e.value)

    @pytest.mark.parametrize(("metric", "unit", "needle"), [
        (_DUR, "cycle", "unit 'cycle' is not a unit of time"),
        ("Duration", "cycle", "unit 'cycle' is not a unit of time"),
        (_DUR, "", "no unit (a time needs one)"),
        (_DUR, "Kbyte", "unit 'Kbyte' is not a unit of time"),
        ("dram__bytes_read.sum", "usecond", "unit 'usecond' is not a unit of bytes"),
        (_FFMA, "Mbyte", "unit 'Mbyte' is not a unit of count"),
        ("sm__cycles_elapsed.avg.per_second", "", "no unit (a frequency needs one)"),
    ])
    def test_a_unit_of_the_wrong_dimension_is_refused(self, tmp_path: Path, metric: str, unit: str,
                                                      needle: str) -> None:
        """#4: a time in cycles or bytes, bytes in microseconds, an instruction count in Mbyte: refused."""
        rows = [("0", "1", "dram__bytes.sum", "byte", "1000"), ("0", "1", metric, unit, "10")]
        with pytest.raises(CountersFormatError, match=re.escape(metric) + ".*" + re.escape(needle.split(" is")[0])):
            read_counters("ncu", _ncu(tmp_path, rows))

    def test_raw_page_with_a_blank_units_row_is_refused(self, tmp_path: Path) -> None:
        f = tmp_path / "raw.csv"
        f.write_text('"ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum"\n"","","",""\n'
                     '"0","k","2.00","1500000"\n')
        with pytest.raises(CountersFormatError, match=r"line 2: unit of dram__bytes_read.sum: no unit \(a byte count"):
            read_counters("ncu", f)

    @pytest.mark.parametrize("value", ["117,34", "27,59", "1,0000", "1,000,00", "27.595.520"])
    def test_a_decimal_comma_is_refused(self, tmp_path: Path, value: str) -> None:
        """#5: "117,34" usecond was read as 11734 us; a comma that does not group 3 digits is a decimal comma, and
        "27.595.520" (thousands grouped by '.') is the same locale."""
        rows = [("0", "1", _DUR, "usecond", value), ("0", "1", "dram__bytes.sum", "byte", "1000")]
        with pytest.raises(CountersFormatError, match=r"(decimal comma|groups thousands with '\.').*LC_ALL=C"):
            read_counters("ncu", _ncu(tmp_path, rows))

    @pytest.mark.parametrize(("rows", "needle"), [
        ([*_launch("0", "1", "1000", "10"), ("0", "1", "dram__bytes_read.sum", "byte", "5000")],
         "dram__bytes_read.sum = 5000 given twice (1000)"),
        ([("0", "1", _DUR, "nsecond", "1000"), ("0", "1", _FFMA, "inst", "100"),
          ("0", "1", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "300")],
         f"sm__sass_thread_inst_executed_op_ffma_pred_on.sum = 300 given beside {_FFMA} (100)"),
        ([("0", "1", _DUR, "nsecond", "1000"), ("0", "1", "dram__sectors_read.sum", "sector", "10"),
          ("0", "1", "dram__bytes_read.sum", "byte", "9999")],
         "dram__bytes_read.sum = 9999 given beside dram__sectors_read.sum (320)"),
    ])
    def test_conflicting_values_for_one_launch_are_refused(self, tmp_path: Path, rows: list[tuple[str, ...]],
                                                          needle: str) -> None:
        """#8: one rule: a metric given twice for one launch (same ID and process; two spellings) is taken once
        when the values agree, refused when they do not."""
        with pytest.raises(CountersFormatError) as e:
            read_counters("ncu", _ncu(tmp_path, rows))
        assert needle in str(e.value) and "ID 0, process 1" in str(e.value)

    def test_agreeing_spellings_taken_once_and_said(self, tmp_path: Path) -> None:
        """#8, #17: sectors x 32 B equal to the bytes metric: counted once, the bytes spelling kept; no note about
        sm__/smsp__ in a file without them."""
        rows = [("0", "1", _DUR, "nsecond", "1000"), ("0", "1", "dram__sectors_read.sum", "sector", "10"),
                ("0", "1", "dram__bytes_read.sum", "byte", "320")]
        (k,) = read_counters("ncu", _ncu(tmp_path, rows))
        assert k.counts["bytes_mem"] == 320.0
        assert "dram__sectors_read.sum and dram__bytes_read.sum both given, equal: counted once" in k.notes
        assert not any("sm__ and smsp__" in n for n in k.notes)

    def test_gpu_time_duration_avg_is_a_time(self, tmp_path: Path) -> None:
        """#13: gpu__time_duration.avg (one launch: the same as .sum) is read as gpu__time_active.avg is."""
        rows = [("0", "1", "dram__bytes_read.sum", "byte", "1000"),
                ("0", "1", "gpu__time_duration.avg", "usecond", "5")]
        (k,) = read_counters("ncu", _ncu(tmp_path, rows))
        assert k.time_s == pytest.approx(5e-6, rel=1e-12) and "time_s from gpu__time_duration.avg" in k.notes

    def test_two_exports_joined_read_as_one_saying_so(self, tmp_path: Path) -> None:
        """#16: the header repeated (two logs concatenated) was read as a kernel named 'Kernel Name'."""
        second = _ncu(tmp_path, _launch("0", "2", "7000", "70")).read_text()
        f = _ncu(tmp_path, _launch("0", "1", "1000", "10"))
        f.write_text(f.read_text() + "==PROF== Disconnected\n" + second)
        (k,) = read_counters("ncu", f)
        assert k.name == "k" and k.counts["bytes_mem"] == 8000.0
        assert "the header repeats at line 6 (two exports joined): read as one file" in k.notes

    def test_overloads_kept_apart_and_operator_named(self, tmp_path: Path) -> None:
        """#20: k(float*) and k(double*) are two kernels (full names shown where the short one is shared);
        operator()(float*) is 'operator()', not 'operator'."""
        rows = [(*r, "k(float*)") for r in _launch("0", "1", "1000", "10")] + \
               [(*r, "k(double*)") for r in _launch("1", "1", "3000", "30")] + \
               [(*r, "ns::F::operator()(float*)") for r in _launch("2", "1", "5000", "50")]
        got = read_counters("ncu", _ncu(tmp_path, rows))
        assert [(c.name, c.counts["bytes_mem"]) for c in got] == [("k(float*)", 1000.0), ("k(double*)", 3000.0),
                                                                  ("ns::F::operator()", 5000.0)]

    def test_the_suggested_metric_list_runs_as_pasted(self, tmp_path: Path) -> None:
        """#18: the refusal's ncu command spells the metrics out (a shell brace list is not expanded by ncu)."""
        with pytest.raises(CountersFormatError) as e:
            read_counters("ncu", _ncu(tmp_path, [("0", "1", _DUR, "usecond", "5")]))
        command = str(e.value).split("collect with ")[1]
        assert "{" not in command and _FFMA in command and "dmul" in command

    def test_utf16_export_named(self, tmp_path: Path) -> None:
        """#19: a UTF-16 save (Windows' "Unicode") was called binary."""
        f = _ncu(tmp_path, _launch("0", "1", "1000", "10"), encoding="utf-16")
        with pytest.raises(CountersFormatError, match=r"is UTF-16 text .*re-save it as UTF-8"):
            read_counters("ncu", f)

    @pytest.mark.parametrize("tool", ["perf", "likwid", "rocprof"])
    def test_an_ncu_file_given_as_another_tool_is_named(self, tmp_path: Path, tool: str) -> None:
        """#20: --tool perf on an ncu file gave a meaningless note, --tool rocprof 'no rocprof header'."""
        with pytest.raises(CountersFormatError, match=rf"looks like an ncu export .*not {tool}'s: give --tool ncu"):
            read_counters(tool, _ncu(tmp_path, _launch("0", "1", "1000", "10")))

    def test_tensor_pipe_instructions_named_not_charged(self) -> None:
        """#11: CUTLASS's fp16 GEMM on an A100 (real): sm__inst_executed_pipe_tensor.sum named in the notes."""
        got = {c.name: c for c in _read("ncu/a100_cutlass_gemm_tensor_pipe.csv")}
        gemm = got["ampere_s16816gemm_fp16_256x128_ldg8_stages_64x3_nn"]
        assert "flops_sp" not in gemm.counts
        assert any(n.startswith("sm__inst_executed_pipe_tensor.sum = 4.1943e+09 tensor-core instructions read "
                                "but not charged") for n in gemm.notes)


_V3 = ("Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,Kernel_Id,Kernel_Name,"
       "Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,Counter_Name,"
       "Counter_Value,Start_Timestamp,End_Timestamp\n")


def _v3(tmp_path: Path, counters: list[tuple[str, str]], pid: str = "1", dispatch: str = "1",
        more: str = "") -> Path:
    f = tmp_path / "counter_collection.csv"
    f.write_text(_V3 + "".join(f'1,{dispatch},"Agent 1",1,{pid},1,1048576,10,"saxpy",64,0,0,8,0,16,"{n}",{v},1000,'
                               "2000\n" for n, v in counters) + more)
    return f


class TestHostileRocprof:
    """Issue 35's breaker (findings 3, 6-9, 11, 12) on rocprof files, made here."""

    def test_write_requests_are_64_bytes_unless_the_64b_counter_says_otherwise(self, tmp_path: Path) -> None:
        """#6: a copy of 16,777,216 floats (rocprof v1 on an MI100, from a public tutorial's metrics_copy.csv):
        TCC_EA_WRREQ_sum 1,048,576 and RDREQ_sum 1,057,241 x 64 B = 134,772,288 B (was 101,217,856: writes x 32)."""
        f = tmp_path / "metrics_copy.csv"
        f.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,fbar,sig,obj,"
                     "TCC_EA_WRREQ_sum,TCC_EA_RDREQ_sum\n0,\"copy_kernel(float*, float*, int, int) [clone .kd]\",0,"
                     "0,0,94670,94673,16777216,1024,0,0,4,24,0,0x0,0x7faee2c09880,1048576.0000000000,"
                     "1057241.0000000000\n")
        (copy,) = read_counters("rocprof", f)
        assert copy.counts == {"bytes_mem": 134_772_288}
        assert any(n.startswith("TCC_EA_WRREQ_64B not in this file: each write request taken as 64 B")
                   for n in copy.notes)

    @pytest.mark.parametrize("counters", [
        [("TCC_HIT", "40"), ("TCC_HIT_sum", "40")],
        [("TCC_HIT[0]", "10"), ("TCC_HIT[1]", "30"), ("TCC_HIT_sum", "40")],
        [("TCC_HIT_sum", "40"), ("TCC_HIT_sum", "40")],
    ])
    def test_a_counter_given_whole_and_as_sum_counted_once(self, tmp_path: Path,
                                                          counters: list[tuple[str, str]]) -> None:
        """#7, #8: rocprofv3 long form: TCC_HIT and TCC_HIT_sum (or its instances, or the same line twice) in one
        dispatch are one count of 40 x 128 B, not 80."""
        (k,) = read_counters("rocprof", _v3(tmp_path, [("SQ_INSTS_VALU_FMA_F32", "1"), *counters]))
        assert k.counts["bytes_l2"] == 40 * 128

    @pytest.mark.parametrize(("counters", "needle"), [
        ([("FETCH_SIZE", "40"), ("FETCH_SIZE", "50")], "FETCH_SIZE = 50 given twice for one dispatch"),
        ([("TCC_HIT", "40"), ("TCC_HIT_sum", "50")], "TCC_HIT = 40 and TCC_HIT_sum = 50 in one dispatch"),
    ])
    def test_conflicting_counts_refused(self, tmp_path: Path, counters: list[tuple[str, str]], needle: str) -> None:
        with pytest.raises(CountersFormatError, match=re.escape(needle)):
            read_counters("rocprof", _v3(tmp_path, counters))

    def test_dispatches_of_two_processes_timed_each(self, tmp_path: Path) -> None:
        """#9: dispatch 1 of process 1 and dispatch 1 of process 2: counts and times both summed (1 us each)."""
        f = _v3(tmp_path, [("FETCH_SIZE", "10")])
        f.write_text(f.read_text() + '1,1,"Agent 1",1,2,2,1048576,10,"saxpy",64,0,0,8,0,16,"FETCH_SIZE",10,1000,2000\n')
        (k,) = read_counters("rocprof", f)
        assert k.counts == {"bytes_mem": 20 * 1024} and k.time_s == pytest.approx(2e-6, rel=1e-12)
        assert "2 dispatch(es) of 2 processes summed" in k.notes
        assert "WRITE_SIZE not in this file: DRAM writes not counted" in k.notes       # #12

    def test_half_precision_mfma_and_rdna_l2_named(self, tmp_path: Path) -> None:
        """#11, #12: MFMA F16/BF16 ops and RDNA's GL2C_EA requests are named, not silently dropped."""
        (k,) = read_counters("rocprof", _v3(tmp_path, [("SQ_INSTS_VALU_MFMA_MOPS_F64", "10"),
                                                      ("SQ_INSTS_VALU_MFMA_MOPS_F16", "10"),
                                                      ("GL2C_EA_RDREQ_64B_sum", "1000")]))
        assert k.counts == {"flops_dp": 5120.0}
        assert any(n.startswith("SQ_INSTS_VALU_MFMA_MOPS_F16 = 10 (5120 half-precision flops) read but not "
                                "charged") for n in k.notes)
        assert any("GL2C_EA_RDREQ_64B_sum" in n and "not counted" in n for n in k.notes)

    def test_an_empty_value_is_named(self, tmp_path: Path) -> None:
        """#3: an empty Counter_Value is missing, said so, never 0."""
        (k,) = read_counters("rocprof", _v3(tmp_path, [("SQ_INSTS_VALU_FMA_F32", "1.6384e+04"), ("FETCH_SIZE", "")]))
        assert "FETCH_SIZE has no value in 1 dispatch(es): not counted there, so its total is low" in k.notes

    def test_rocprof_file_given_as_ncu_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(CountersFormatError, match=r"looks like a rocprof export .*give --tool rocprof"):
            read_counters("ncu", _v3(tmp_path, [("FETCH_SIZE", "10")]))

    def test_omniperf_mi200_two_dispatches_hand_checked(self) -> None:
        """A real omniperf run (MI200 vecCopy, dispatches 0 and 1), checked by hand: requests x 64 B (the 64B
        counter equals WRREQ), TCC_HIT x 128 B, INT32 x wave 64, End - Start per dispatch."""
        (k,) = _read("rocprof/mi200_omniperf_dispatch_0_1_pmc_perf.csv")
        # RDREQ 131,081 + 131,073; WRREQ (all 64B) 131,072 + 91,078: (262,154 + 222,150) x 64 = 30,995,456
        assert k.counts == {"flops_sp": 0.0, "flops_dp": 0.0, "int_ops": 2 * 114_688 * 64,
                            "bytes_mem": 30_995_456, "bytes_l2": (73_417 + 69_917) * 128}
        # (1,412,189,920,601,635 - ...581,155) + (...636,515 - ...620,835) = 20,480 + 15,680 ns
        assert k.time_s == pytest.approx(36_160e-9, rel=1e-12)
