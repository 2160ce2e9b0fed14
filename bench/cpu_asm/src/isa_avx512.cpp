// AVX-512F (512-bit, 32 zmm registers). Compiled with -mavx512f; selected at run time from CPUID (and XCR0 opmask/
// ZMM state). Intensity: G=16 chains, A=8 accumulators (24 of 32 registers).
#include <immintrin.h>
#include "isa.hpp"
#include "kern.hpp"

namespace {
struct D {
  using T = double; using v = __m512d; static constexpr int L = 8;
  static v load(const T* p) { return _mm512_load_pd(p); }
  static void store(T* p, v a) { _mm512_store_pd(p, a); }
  static void stream(T* p, v a) { _mm512_stream_pd(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm512_setzero_pd(); }
  static v set1(T c) { return _mm512_set1_pd(c); }
  static v add(v a, v b) { return _mm512_add_pd(a, b); }
  static v fma(v a, v b, v c) { return _mm512_fmadd_pd(a, b, c); }
  static v fnma(v a, v b, v c) { return _mm512_fnmadd_pd(a, b, c); }
};
struct S {
  using T = float; using v = __m512; static constexpr int L = 16;
  static v load(const T* p) { return _mm512_load_ps(p); }
  static void store(T* p, v a) { _mm512_store_ps(p, a); }
  static void stream(T* p, v a) { _mm512_stream_ps(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm512_setzero_ps(); }
  static v add(v a, v b) { return _mm512_add_ps(a, b); }
  static v fma(v a, v b, v c) { return _mm512_fmadd_ps(a, b, c); }
  static v fnma(v a, v b, v c) { return _mm512_fnmadd_ps(a, b, c); }
};
struct I {
  using T = uint32_t; using v = __m512i; static constexpr int L = 16;
  static v load(const T* p) { return _mm512_load_si512(p); }
  static void store(T* p, v a) { _mm512_store_si512(p, a); }
  static v zero() { return _mm512_setzero_si512(); }
  static v add(v a, v b) { return _mm512_add_epi32(a, b); }
  static v mul(v a, v b) { return _mm512_mullo_epi32(a, b); }
};
struct X {  // 64-bit lanes for the load kernel: one vpternlogq folds two loaded vectors into an accumulator
  using T = uint64_t; using v = __m512i; static constexpr int L = 8;
  static v load(const T* p) { return _mm512_load_si512(p); }
  static void store(T* p, v a) { _mm512_store_si512(p, a); }
  static v zero() { return _mm512_setzero_si512(); }
  static v add(v a, v b) { return _mm512_add_epi64(a, b); }
  static v xor3(v a, v b, v c) { return _mm512_ternarylogic_epi64(a, b, c, 0x96); }
};
}  // namespace

ISA_TABLE(avx512, 64, D, S, I, X, 16, 8, 16, 8, 16, 8, 16, (&kern::int_chains<I, 16, 8, true>))
