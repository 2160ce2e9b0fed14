"""Counter imports for GPUs: Nsight Compute (ncu --csv, details and --page raw) and rocprof (v1 results.csv,
rocprofv3 counter_collection.csv), from fixtures in the tools' documented formats (tests/data/counters/)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from archline.fit.io.counters import CountersFormatError, read_counters

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
