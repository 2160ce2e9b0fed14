// Core-clock probes from dependency chains of known latency (no pybind11 here, so
// tests/bench_cpu/test_cpu_asm_code.py can compile this header alone and read the loops it emits).
#pragma once
#include <time.h>

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace probe {

inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// ---- clock probes ------------------------------------------------------------------------------------------------
// The core clock from dependency chains of known latency: chain length / seconds = cycles per second.
// * reg-reg add: 1 cycle on every x86-64 and AArch64 core. The register operand matters: Golden Cove and later fold
//   chains of add-immediate in the renamer (an `add $1` chain ran at ~8 per cycle, i.e. "21 GHz").
// * x86-64 imul r64,r64: 3 cycles on every core since Core 2 and Zen 1 (Agner Fog's tables; Intel/AMD optimisation
//   manuals). A second, independent reading: no renamer folds a multiply, so the two agree unless one is wrong.
//   AArch64 has no multiply of one latency on every core, so there the second source is perf or cpufreq (Python).
// The TSC rate (x86-64) is measured alongside: a fixed nominal rate, not the core clock under turbo.
struct ClockSample {
  double add_hz = 0, mul_hz = 0, tsc_hz = 0;
};

inline double add_chain_hz(uint64_t iters, double* tsc_hz = nullptr) {
  uint64_t x = 0, n = iters;
  const uint64_t one = 1;
#if defined(__x86_64__)
  const uint64_t c0 = __rdtsc();
#endif
  const double t0 = now_s();
#if defined(__x86_64__)
  __asm__ volatile(
      "1:\n\t"
      "add %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\t"
      "add %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\t"
      "add %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\t"
      "add %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\tadd %2, %0\n\t"
      "dec %1\n\tjnz 1b\n"
      : "+r"(x), "+r"(n)
      : "r"(one)
      : "cc");
#elif defined(__aarch64__)
  __asm__ volatile(
      "1:\n\t"
      "add %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\t"
      "add %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\t"
      "add %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\t"
      "add %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\tadd %0, %0, %2\n\t"
      "subs %1, %1, #1\n\tb.ne 1b\n"
      : "+r"(x), "+r"(n)
      : "r"(one)
      : "cc");
#endif
  const double t1 = now_s();
#if defined(__x86_64__)
  if (tsc_hz) *tsc_hz = double(__rdtsc() - c0) / (t1 - t0);
#else
  if (tsc_hz) *tsc_hz = 0;
#endif
  return double(x) / (t1 - t0);  // x = 16 * iters adds
}

inline double mul_chain_hz(uint64_t iters) {
#if defined(__x86_64__)
  uint64_t y = 3, n = iters;
  const double t0 = now_s();
  __asm__ volatile(
      "1:\n\t"
      "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
      "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
      "dec %1\n\tjnz 1b\n"
      : "+r"(y), "+r"(n)::"cc");
  const double t1 = now_s();
  return 3.0 * 8.0 * double(iters) / (t1 - t0);
#else
  (void)iters;
  return 0;  // no multiply of one latency on every AArch64 core
#endif
}

// Best of three short trials per chain: being descheduled or interrupted only ever makes a chain look slower, so the
// fastest trial is the one nobody disturbed (on a loaded 2-vCPU VM single trials disagreed by more than 20%).
inline ClockSample clock_sample(uint64_t iters = 1u << 15) {
  ClockSample c;
  for (int trial = 0; trial < 3; ++trial) {
    double tsc = 0;
    const double add = add_chain_hz(iters, &tsc);
    if (add > c.add_hz) {
      c.add_hz = add;
      c.tsc_hz = tsc;
    }
    c.mul_hz = std::max(c.mul_hz, mul_chain_hz(iters / 2));
  }
  return c;
}

}  // namespace probe
