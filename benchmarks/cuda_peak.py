#!/usr/bin/env python3
"""Fractions of peak of archline's CUDA kernels on an NVIDIA GPU, at the SM clock NVML reads during each run.

    python3 benchmarks/cuda_peak.py [--device 0] [--json out.json]

Issue 6 targets (as gpu-benches reaches on the same class of card): FP32 and FP64 FMA >= 95 % of
SMs x FMA lanes per SM x 2 x measured SM clock; DRAM bandwidth >= 90 % of spec
(2 x memory clock x bus width, from the device properties). NOT YET RUN: written on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

warnings.filterwarnings("ignore")

# FMA lanes per SM (CUDA C Programming Guide, "Arithmetic Instructions" throughput table)
FP32_LANES = {70: 64, 75: 64, 80: 64, 86: 128, 87: 128, 89: 128, 90: 128, 100: 128, 120: 128}
FP64_LANES = {70: 32, 75: 2, 80: 32, 86: 2, 87: 2, 89: 2, 90: 64, 100: 64, 120: 2}


def best(spec_list: list[Any], device: str | None, min_time_s: float) -> tuple[float, float, dict[str, Any]]:
    from archline.bench.cuda.backend import CudaBackend

    b = CudaBackend()
    top: tuple[float, float, dict[str, Any]] = (0.0, 0.0, {})
    for spec in spec_list:
        pk = b.prepare(spec, device)
        try:
            r = pk.run(pk.reps_for(min_time_s))
        finally:
            pk.close()
        if not r.checksum_ok:
            print(f"  checksum FAILED for {spec.label}", file=sys.stderr)
            continue
        gf = r.counts.flops / r.time_s / 1e9
        gb = r.counts.bytes_total / r.time_s / 1e9
        print(f"  {spec.label}: {gf:9.1f} GFLOP/s {gb:8.1f} GB/s SM {r.extra.get('core_mhz', '?')} MHz",
              file=sys.stderr, flush=True)
        key = gb if spec.params.get("fma_per_elem", 1) <= 1 else gf
        if key > (top[1] if spec.params.get("fma_per_elem", 1) <= 1 else top[0]):
            top = (gf, gb, r.extra)
    return top


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json")
    ap.add_argument("--min-time", type=float, default=1.0)
    a = ap.parse_args()
    import cupy

    from archline.bench.gpu.cupy_runtime import pick_index
    from archline.bench.kernels import KernelSpec

    idx = pick_index(cupy, a.device, "CUDA")
    props = cupy.cuda.runtime.getDeviceProperties(idx)
    cc = props["major"] * 10 + props["minor"]
    sms = props["multiProcessorCount"]
    spec_gbs = 2 * props["memoryClockRate"] * 1e3 * props["memoryBusWidth"] / 8 / 1e9
    rows: list[dict[str, Any]] = []
    for prec, lanes in (("sp", FP32_LANES), ("dp", FP64_LANES)):
        specs = [KernelSpec("cuda", "intensity", prec, "mem", {"fma_per_elem": f, "chains": c, "vector_width": w,
                                                               "working_set_bytes": 256 << 20})
                 for f in (128, 256) for c in (2, 4) for w in (1, 2)]
        gf, _, ex = best(specs, a.device, a.min_time)
        mhz = float(ex.get("core_mhz", 0.0))
        peak = sms * lanes.get(cc, 0) * 2 * mhz * 1e6 / 1e9 if mhz else float("nan")
        rows.append({"metric": f"{prec}_fma_gflops", "value": gf, "peak_at_clock": peak, "sm_mhz": mhz,
                     "fraction": gf / peak if peak == peak and peak else float("nan"), "target": 0.95})
    bw_specs = [KernelSpec("cuda", "intensity", "sp", "mem", {"fma_per_elem": 0.5, "vector_width": w,
                                                              "chains": c}) for w in (2, 4) for c in (1, 2, 4)]
    _, gb, ex = best(bw_specs, a.device, a.min_time)
    rows.append({"metric": "dram_gbps", "value": gb, "peak_at_clock": spec_gbs, "mem_mhz": ex.get("mem_mhz"),
                 "fraction": gb / spec_gbs, "target": 0.90})
    for r in rows:
        ok = "met" if r["fraction"] >= r["target"] else "NOT MET"
        print(f"{r['metric']:16s} {r['value']:10.1f} of {r['peak_at_clock']:10.1f} = {r['fraction']:6.1%} "
              f"(target {r['target']:.0%}) {ok}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
                       "cc": cc, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
