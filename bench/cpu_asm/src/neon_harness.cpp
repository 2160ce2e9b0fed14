// Stand-alone AArch64 harness for the NEON kernels: cross-built with aarch64-linux-gnu-g++ -static and run under
// qemu-aarch64 by tests/bench_cpu/test_cpu_neon_qemu.py. One thread; prints one JSON line with the checksum and
// the counts the kernel declares, which the test compares with the Python reference and variants.py.
//   usage: neon_harness KIND N_ELEMS KNOB SEED REPS PERIOD
//   KIND: intensity_dp intensity_sp intensity_nt_dp intensity_nt_sp int_add int_mul load rmw store
// intensity_nt_*: the checksum is the sum of the streamed output array (n/2 elements, rewritten identically every
// rep, so not scaled by REPS), as module.cpp reports it for x86-64.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "data.hpp"
#include "isa_neon.hpp"

using namespace neon;

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s KIND N_ELEMS KNOB SEED REPS PERIOD\n", argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  const std::size_t n = std::strtoull(argv[2], nullptr, 10);
  const int knob = std::atoi(argv[3]);
  const uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  const long reps = std::atol(argv[5]);
  const std::size_t period = std::strtoull(argv[6], nullptr, 10);
  int g = 0, lanes = 0, esize = 0;
  const bool nt = kind == "intensity_nt_dp" || kind == "intensity_nt_sp";
  const bool fp_dp = kind == "intensity_dp" || kind == "intensity_nt_dp";
  const bool fp_sp = kind == "intensity_sp" || kind == "intensity_nt_sp";
  if (fp_dp) { g = G_FP; lanes = D::L; esize = 8; }
  else if (fp_sp) { g = G_FP; lanes = S::L; esize = 4; }
  else if (kind == "int_add" || kind == "int_mul") { g = G_INT; lanes = I::L; esize = 4; }
  else if (kind == "load") { g = G_LD; lanes = D::L; esize = 8; }
  else if (kind == "rmw" || kind == "store") { g = G_ST; lanes = D::L; esize = 8; }
  else { std::fprintf(stderr, "unknown kind %s\n", kind.c_str()); return 2; }
  const std::size_t trip = std::size_t(g) * lanes;
  if (n == 0 || n % trip || reps <= 0 || period == 0 || period % trip) {
    std::fprintf(stderr, "n must be a positive multiple of %zu, reps > 0, period a multiple of the trip\n", trip);
    return 2;
  }
  if (kind.rfind("intensity", 0) == 0 && 2 * knob < g) { std::fprintf(stderr, "F below G/2\n"); return 2; }
  void* buf = std::aligned_alloc(64, (n * esize + 63) / 64 * 64);
  // G/2 result vectors per trip of G loaded; n is a multiple of the trip, so n/2 is a whole number of vectors
  void* out = nt ? std::aligned_alloc(64, (n / 2 * esize + 63) / 64 * 64) : nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t z = data::raw(seed, i, period);
    if (fp_dp) static_cast<double*>(buf)[i] = data::dp(z);
    else if (fp_sp) static_cast<float*>(buf)[i] = data::sp(z);
    else if (esize == 4) static_cast<uint32_t*>(buf)[i] = data::i32(z);
    else if (kind == "load") static_cast<uint64_t*>(buf)[i] = z;
    else static_cast<double*>(buf)[i] = data::cache(z);
  }
  const std::size_t trips = n / trip;
  double cs_d = 0;
  uint32_t cs_u = 0;
  uint64_t cs_u64 = 0;  // load: reps x the sum of the accumulators' XORs, mod 2^64
  uint64_t flops = 0, int_ops = 0, bytes = 0, bus = 0;
  for (long r = 0; r < reps; ++r) {
    if (kind == "intensity_dp") cs_d += kern::intensity<D, G_FP, A_FP>(static_cast<double*>(buf), trips, knob);
    else if (kind == "intensity_sp") cs_d += kern::intensity<S, G_FP, A_FP>(static_cast<float*>(buf), trips, knob);
    else if (kind == "intensity_nt_dp")
      kern::intensity_nt<D, G_FP>(static_cast<double*>(buf), static_cast<double*>(out), trips, knob);
    else if (kind == "intensity_nt_sp")
      kern::intensity_nt<S, G_FP>(static_cast<float*>(buf), static_cast<float*>(out), trips, knob);
    else if (kind == "int_add") cs_u += kern::int_chains<I, G_INT, A_INT, false>(static_cast<uint32_t*>(buf), trips, knob);
    else if (kind == "int_mul") cs_u += kern::int_chains<I, G_INT, A_INT, true>(static_cast<uint32_t*>(buf), trips, knob);
    else if (kind == "load") cs_u64 += kern::load_xor<X, G_LD>(static_cast<uint64_t*>(buf), trips, 1);
    else if (kind == "rmw") kern::rmw<D, G_ST>(static_cast<double*>(buf), trips, 1.0);
    else kern::store<D, G_ST>(static_cast<double*>(buf), trips, double(r + 1));
  }
  // Declared counts per repetition (kernels as data), for the test to compare with variants.py.
  // nt: n elements read + n/2 streamed (no write-allocate, so bus bytes = counted bytes)
  if (nt) { flops = n * 2 * uint64_t(knob) / g; bytes = n * esize * 3 / 2; bus = bytes; }
  else if (kind.rfind("intensity", 0) == 0) { flops = n * 2 * uint64_t(knob) / g; bytes = n * esize; bus = bytes; }
  else if (esize == 4) { int_ops = n * uint64_t(knob + 1); bytes = n * 4; bus = bytes; }
  else if (kind == "load") { bytes = n * 8; bus = bytes; }
  else if (kind == "rmw") { bytes = n * 16; bus = bytes; }
  else { bytes = n * 8; bus = 2 * bytes; }
  if (kind == "rmw" || kind == "store") {
    cs_d = 0;
    for (std::size_t i = 0; i < n; ++i) cs_d += static_cast<double*>(buf)[i];
  }
  // the same bounded-error read-back as module.cpp (sums.hpp)
  if (kind == "intensity_nt_dp") cs_d = sums::block_sum(static_cast<double*>(out), n / 2).value();
  else if (kind == "intensity_nt_sp") cs_d = sums::block_sum(static_cast<float*>(out), n / 2).value();
  std::printf("{\"kind\": \"%s\", \"g\": %d, \"lanes\": %d, \"checksum_f\": %.17g, \"checksum_u\": %" PRIu32
              ", \"checksum_u64\": %" PRIu64 ", \"flops\": %" PRIu64 ", \"int_ops\": %" PRIu64 ", \"bytes\": %" PRIu64
              ", \"bus_bytes\": %" PRIu64 "}\n",
              kind.c_str(), g, lanes, cs_d, cs_u, cs_u64, flops, int_ops, bytes, bus);
  std::free(out);
  std::free(buf);
  return 0;
}
