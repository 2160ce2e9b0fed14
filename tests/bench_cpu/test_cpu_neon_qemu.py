"""AArch64 NEON kernels: cross-built with aarch64-linux-gnu-g++ (-static) and run under qemu-aarch64; their
checksums and declared counts are compared with the same Python references as the x86-64 kernels."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm.variants import (
    ISAS,
    PERIOD,
    cache_counts,
    int_counts,
    intensity_counts,
    intensity_nt_counts,
)

SRC = Path(__file__).resolve().parents[2] / "bench" / "cpu_asm" / "src"
CXX = "aarch64-linux-gnu-g++"
QEMU = "qemu-aarch64"
V = ISAS["neon"]


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which(CXX) is None:
        pytest.skip(f"{CXX} not installed (Debian: apt install g++-aarch64-linux-gnu)")
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} not installed (Debian: apt install qemu-user)")
    exe = tmp_path_factory.mktemp("neon") / "neon_harness"
    subprocess.run([CXX, "-std=c++17", "-O2", "-static", "-ffp-contract=off", "-march=armv8-a", "-I", str(SRC),
                    "-o", str(exe), str(SRC / "neon_harness.cpp")], check=True, capture_output=True, timeout=180)
    return exe


def _run(exe: Path, kind: str, n: int, knob: int, reps: int, seed: int = 1) -> dict:
    out = subprocess.run([QEMU, str(exe), kind, str(n), str(knob), str(seed), str(reps), str(PERIOD)],
                         check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)


def test_descriptor_matches_harness(harness: Path) -> None:
    d = _run(harness, "intensity_dp", V.g_fp * 2, V.g_fp, 1)
    assert (d["g"], d["lanes"]) == (V.g_fp, V.lanes("dp"))
    d = _run(harness, "intensity_sp", V.g_fp * 4, V.g_fp, 1)
    assert (d["g"], d["lanes"]) == (V.g_fp, V.lanes("sp"))
    for precision in ("dp", "sp"):
        d = _run(harness, f"intensity_nt_{precision}", V.g_fp * V.lanes(precision), V.g_fp, 1)
        assert (d["g"], d["lanes"]) == (V.g_fp, V.lanes(precision))


@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_neon_intensity(harness: Path, precision: str) -> None:
    lanes = V.lanes(precision)
    n = V.g_fp * lanes * 10
    for f in [*range(V.g_fp // 2, V.g_fp, 3), V.g_fp, V.g_fp + 1, V.g_fp + 7, 5 * V.g_fp + 15, 40 * V.g_fp]:
        d = _run(harness, f"intensity_{precision}", n, f, 2)
        c = intensity_counts(V, precision, n, f)
        assert d["flops"] == c.flops and d["bytes"] == c.bytes_mem
        exp = 2 * ref.intensity_checksum(precision, 1, n, V.g_fp, lanes, f)
        assert d["checksum_f"] == pytest.approx(exp, rel=ref.intensity_rel_tol(precision, V.g_fp, V.a_fp, lanes, f, n))


@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_neon_intensity_nt(harness: Path, precision: str) -> None:
    """stnp store stream: the sum of the written array against the reference, the declared counts exactly."""
    lanes, g = V.lanes(precision), V.g_fp
    n = g * lanes * 7                          # 7 trips: the interleaved streams and a leftover trip
    # F = G/2 (H = F - G/2 = 0 Horner steps), H = 1, H = G (whole rounds only), H = 2G + 9 and 15G + 13
    for f in (g // 2, g // 2 + 1, g // 2 + g, 3 * g + 1, 16 * g + 5):
        d = _run(harness, f"intensity_nt_{precision}", n, f, 2)
        c = intensity_nt_counts(V, precision, n, f)
        assert (d["flops"], d["bytes"], d["bus_bytes"]) == (c.flops, c.bytes_mem, c.bus_bytes)
        # the array is rewritten identically every rep: the checksum of 2 reps is the one-rep reference
        exp = ref.intensity_nt_checksum(precision, 1, n, g, lanes, f)
        assert d["checksum_f"] == pytest.approx(exp, rel=ref.intensity_nt_rel_tol(precision, g, f, n)), (precision, f)


@pytest.mark.parametrize("op", ["add", "mul"])
def test_neon_int(harness: Path, op: str) -> None:
    lanes = V.lanes("int32")
    n = V.g_int * lanes * 6
    for steps in (0, 1, 5, 20):
        d = _run(harness, f"int_{op}", n, steps, 3)
        assert d["int_ops"] == int_counts(n, steps).int_ops and d["bytes"] == 4 * n
        assert d["checksum_u"] == (3 * ref.int_checksum(op, 1, n, V.g_int, lanes, steps)) & 0xFFFFFFFF


@pytest.mark.parametrize("mode", ["load", "rmw", "store"])
def test_neon_cache(harness: Path, mode: str) -> None:
    n = V.g_ld * V.lanes("dp") * 8
    d = _run(harness, mode, n, 0, 4)
    c = cache_counts(mode, n, "l2")
    assert d["bytes"] == c.bytes_l2 and d["bus_bytes"] == c.bus_bytes
    if mode == "load":   # the harness fills raw words with period PERIOD > n: no word repeats in the buffer
        assert n < PERIOD
        assert d["checksum_u64"] == (4 * ref.load_xor_checksum(1, n, V.g_ld, V.lanes("dp"), 1)) % 2**64
        return
    s0 = ref.cache_sum(1, n)
    want = {"rmw": s0 + 4 * n, "store": 4.0 * n}[mode]
    assert d["checksum_f"] == want
