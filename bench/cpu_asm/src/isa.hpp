// One table per compiled ISA: the descriptor numbers (vectors per trip G, accumulators A) next to the entry points.
#pragma once
#include <cstddef>
#include <cstdint>

struct IsaTable {
  const char* name;
  int vec_bytes;
  int g_fp, a_fp;    // intensity: vectors per trip, accumulator registers
  int g_int, a_int;  // int32 chains
  int g_ld, a_ld;    // load (read-only) kernel
  int g_st;          // rmw / store kernels
  double (*intensity_dp)(const double*, std::size_t trips, int fma_per_trip);
  double (*intensity_sp)(const float*, std::size_t trips, int fma_per_trip);
  uint32_t (*int_add)(const uint32_t*, std::size_t trips, int steps);
  uint32_t (*int_mul)(const uint32_t*, std::size_t trips, int steps);  // nullptr: not in this ISA
  uint64_t (*load)(const uint64_t*, std::size_t trips, long reps);  // all reps in one call (kern::load_xor)
  void (*rmw)(double*, std::size_t trips, double c);
  void (*store)(double*, std::size_t trips, double c);
  // intensity with a non-temporal store stream: G/2 streamed result vectors per trip (kern::intensity_nt)
  void (*intensity_nt_dp)(const double*, double*, std::size_t trips, int fma_per_trip);
  void (*intensity_nt_sp)(const float*, float*, std::size_t trips, int fma_per_trip);
};

#define ISA_TABLE(NAME, VB, D, S, I, X, GFP, AFP, GINT, AINT, GLD, ALD, GST, MULFN)                              \
  extern const IsaTable isa_##NAME = {#NAME, VB, GFP, AFP, GINT, AINT, GLD, ALD, GST,                              \
                                &kern::intensity<D, GFP, AFP>, &kern::intensity<S, GFP, AFP>,                \
                                &kern::int_chains<I, GINT, AINT, false>, MULFN,                              \
                                &kern::load_xor<X, GLD>, &kern::rmw<D, GST>, &kern::store<D, GST>,     \
                                &kern::intensity_nt<D, GFP>, &kern::intensity_nt<S, GFP>};

#if defined(__x86_64__)
extern const IsaTable isa_avx512;
extern const IsaTable isa_avx2;
extern const IsaTable isa_sse2;
#elif defined(__aarch64__)
extern const IsaTable isa_neon;
#endif
