// SSE2 baseline (128-bit, 16 xmm, no FMA). An "FMA" here is mulpd + addpd/subpd (two roundings), still counted as
// 2 flops like the papers count a multiply-add. G=8 chains, A=4. SSE2 has no 32-bit lane multiply (pmulld is
// SSE4.1), so int32 mul is not offered on this variant.
#include <emmintrin.h>
#include "isa.hpp"
#include "kern.hpp"

namespace {
struct D {
  using T = double; using v = __m128d; static constexpr int L = 2;
  static v load(const T* p) { return _mm_load_pd(p); }
  static void store(T* p, v a) { _mm_store_pd(p, a); }
  static void stream(T* p, v a) { _mm_stream_pd(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm_setzero_pd(); }
  static v set1(T c) { return _mm_set1_pd(c); }
  static v add(v a, v b) { return _mm_add_pd(a, b); }
  static v fma(v a, v b, v c) { return _mm_add_pd(_mm_mul_pd(a, b), c); }
  static v fnma(v a, v b, v c) { return _mm_sub_pd(c, _mm_mul_pd(a, b)); }
};
struct S {
  using T = float; using v = __m128; static constexpr int L = 4;
  static v load(const T* p) { return _mm_load_ps(p); }
  static void store(T* p, v a) { _mm_store_ps(p, a); }
  static void stream(T* p, v a) { _mm_stream_ps(p, a); }  // non-temporal store
  static void sfence() { _mm_sfence(); }
  static v zero() { return _mm_setzero_ps(); }
  static v add(v a, v b) { return _mm_add_ps(a, b); }
  static v fma(v a, v b, v c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static v fnma(v a, v b, v c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }
};
struct I {
  using T = uint32_t; using v = __m128i; static constexpr int L = 4;
  static v load(const T* p) { return _mm_load_si128(reinterpret_cast<const v*>(p)); }
  static void store(T* p, v a) { _mm_store_si128(reinterpret_cast<v*>(p), a); }
  static v zero() { return _mm_setzero_si128(); }
  static v add(v a, v b) { return _mm_add_epi32(a, b); }
};
struct X {
  using T = uint64_t; using v = __m128i; static constexpr int L = 2;
  static v load(const T* p) { return _mm_load_si128(reinterpret_cast<const v*>(p)); }
  static void store(T* p, v a) { _mm_store_si128(reinterpret_cast<v*>(p), a); }
  static v zero() { return _mm_setzero_si128(); }
  static v add(v a, v b) { return _mm_add_epi64(a, b); }
  static v xor3(v a, v b, v c) { return _mm_xor_si128(_mm_xor_si128(a, b), c); }
};
}  // namespace

ISA_TABLE(sse2, 16, D, S, I, X, 8, 4, 8, 4, 16, 8, 16, nullptr)
