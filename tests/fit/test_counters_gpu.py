"""Counter imports for GPUs: Nsight Compute (ncu --csv, details and --page raw) and rocprof (v1 results.csv,
rocprofv3 counter_collection.csv), from fixtures in the tools' documented formats (tests/data/counters/)."""

from __future__ import annotations

from pathlib import Path

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
    ("ncu", '"ID","Kernel Name","sm__cycles_elapsed.sum"\n"","","cycle"\n"0","k","12"\n', "none of the metrics"),
    ("rocprof", "Index,KernelName,SQ_INSTS_VALU_FMA_F64\n0,k\n", "line 2: 2 fields, the header has 3"),
    ("rocprof", "Index,Name,X\n", "no rocprof header"),
    ("rocprof", "Index,KernelName,GRBM_COUNT\n0,k,5\n", "none of the counters archline reads"),
])
def test_gpu_errors_name_file_line_and_what(tmp_path: Path, tool: str, body: str, needle: str) -> None:
    f = tmp_path / "export.csv"
    f.write_text(body)
    with pytest.raises(CountersFormatError) as e:
        read_counters(tool, f)
    assert needle in str(e.value) and str(f) in str(e.value)
