// AVX2 + FMA (256-bit, 16 ymm registers). Compiled with -mavx2 -mfma; selected at run time from CPUID.
// Intensity: G=12 chains (12 independent vfnmadd231pd per Horner step > 2 pipes x 4-cycle latency on Zen 3 /
// Skylake), A=4 accumulators: 16 registers. Load kernel: 16 loads into 8 accumulator chains per trip.
#include <immintrin.h>
#include "isa.hpp"
#include "kern.hpp"

namespace {
struct D {
  using T = double; using v = __m256d; static constexpr int L = 4;
  static v load(const T* p) { return _mm256_load_pd(p); }
  static void store(T* p, v a) { _mm256_store_pd(p, a); }
  static void stream(T* p, v a) { _mm256_stream_pd(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm256_setzero_pd(); }
  static v set1(T c) { return _mm256_set1_pd(c); }
  static v add(v a, v b) { return _mm256_add_pd(a, b); }
  static v fma(v a, v b, v c) { return _mm256_fmadd_pd(a, b, c); }    // a*b + c
  static v fnma(v a, v b, v c) { return _mm256_fnmadd_pd(a, b, c); }  // c - a*b
};
struct S {
  using T = float; using v = __m256; static constexpr int L = 8;
  static v load(const T* p) { return _mm256_load_ps(p); }
  static void store(T* p, v a) { _mm256_store_ps(p, a); }
  static void stream(T* p, v a) { _mm256_stream_ps(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm256_setzero_ps(); }
  static v add(v a, v b) { return _mm256_add_ps(a, b); }
  static v fma(v a, v b, v c) { return _mm256_fmadd_ps(a, b, c); }
  static v fnma(v a, v b, v c) { return _mm256_fnmadd_ps(a, b, c); }
};
struct I {
  using T = uint32_t; using v = __m256i; static constexpr int L = 8;
  static v load(const T* p) { return _mm256_load_si256(reinterpret_cast<const v*>(p)); }
  static void store(T* p, v a) { _mm256_store_si256(reinterpret_cast<v*>(p), a); }
  static v zero() { return _mm256_setzero_si256(); }
  static v add(v a, v b) { return _mm256_add_epi32(a, b); }
  static v mul(v a, v b) { return _mm256_mullo_epi32(a, b); }
};
struct X {
  using T = uint64_t; using v = __m256i; static constexpr int L = 4;
  static v load(const T* p) { return _mm256_load_si256(reinterpret_cast<const v*>(p)); }
  static void store(T* p, v a) { _mm256_store_si256(reinterpret_cast<v*>(p), a); }
  static v zero() { return _mm256_setzero_si256(); }
  static v add(v a, v b) { return _mm256_add_epi64(a, b); }
  static v xor3(v a, v b, v c) { return _mm256_xor_si256(_mm256_xor_si256(a, b), c); }
};
}  // namespace

ISA_TABLE(avx2, 32, D, S, I, X, 12, 4, 12, 4, 16, 8, 16, (&kern::int_chains<I, 12, 4, true>))
