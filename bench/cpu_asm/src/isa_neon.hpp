// AArch64 Advanced SIMD (NEON, 128-bit, 32 v registers). Intensity: G=16 chains (fmls: y = y - y*y), A=8
// accumulators (24 of 32 registers). Same kern.hpp bodies as x86-64; descriptor in variants.py ISAS["neon"].
#pragma once
#include <arm_neon.h>
#include "kern.hpp"

namespace neon {
// Non-temporal store of one q register: ACLE has no intrinsic for STNP, so inline asm stores the two 64-bit halves
// as a d-register pair (hi costs one dup; a q-register pair would need two vectors per call). "Ump" is GCC's
// load/store-pair address for an 8-byte operand (base + offset in the d-pair range), so consecutive stores share
// one base register; the two outputs tell GCC which 16 bytes are written, may_alias because out may be float.
typedef double alias_f64 __attribute__((may_alias));
inline void stnp_q(void* p, float64x2_t a) {
  alias_f64* d = static_cast<alias_f64*>(p);
  asm volatile("stnp %d[lo], %d[hi], %[m]"
               : [m] "=Ump"(d[0]), "=m"(d[1])
               : [lo] "w"(vget_low_f64(a)), [hi] "w"(vget_high_f64(a)));
}
// x86 needs sfence because its streaming stores are weakly ordered; on AArch64 every store is, and STNP is ordered
// like any other store, so the counterpart is a store-store barrier: the streamed results become visible before
// any later store (a done flag, a barrier) that another core may act on.
inline void store_fence() { asm volatile("dmb ishst" ::: "memory"); }

struct D {
  using T = double; using v = float64x2_t; static constexpr int L = 2;
  static v load(const T* p) { return vld1q_f64(p); }
  static void store(T* p, v a) { vst1q_f64(p, a); }
  static v zero() { return vdupq_n_f64(0.0); }
  static v set1(T c) { return vdupq_n_f64(c); }
  static v add(v a, v b) { return vaddq_f64(a, b); }
  static v fma(v a, v b, v c) { return vfmaq_f64(c, a, b); }   // c + a*b (fmla)
  static v fnma(v a, v b, v c) { return vfmsq_f64(c, a, b); }  // c - a*b (fmls)
  static void stream(T* p, v a) { stnp_q(p, a); }               // non-temporal store
  static void sfence() { store_fence(); }
};
struct S {
  using T = float; using v = float32x4_t; static constexpr int L = 4;
  static v load(const T* p) { return vld1q_f32(p); }
  static void store(T* p, v a) { vst1q_f32(p, a); }
  static v zero() { return vdupq_n_f32(0.0f); }
  static v add(v a, v b) { return vaddq_f32(a, b); }
  static v fma(v a, v b, v c) { return vfmaq_f32(c, a, b); }
  static v fnma(v a, v b, v c) { return vfmsq_f32(c, a, b); }
  static void stream(T* p, v a) { stnp_q(p, vreinterpretq_f64_f32(a)); }  // bit copy: lane order is kept
  static void sfence() { store_fence(); }
};
struct I {
  using T = uint32_t; using v = uint32x4_t; static constexpr int L = 4;
  static v load(const T* p) { return vld1q_u32(p); }
  static void store(T* p, v a) { vst1q_u32(p, a); }
  static v zero() { return vdupq_n_u32(0); }
  static v add(v a, v b) { return vaddq_u32(a, b); }
  static v mul(v a, v b) { return vmulq_u32(a, b); }
};
struct X {
  using T = uint64_t; using v = uint64x2_t; static constexpr int L = 2;
  static v load(const T* p) { return vld1q_u64(p); }
  static void store(T* p, v a) { vst1q_u64(p, a); }
  static v zero() { return vdupq_n_u64(0); }
  static v add(v a, v b) { return vaddq_u64(a, b); }
  static v xor3(v a, v b, v c) { return veorq_u64(veorq_u64(a, b), c); }  // EOR3 needs armv8.2-sha3
};
constexpr int G_FP = 16, A_FP = 8, G_INT = 16, A_INT = 8, G_LD = 16, A_LD = 8, G_ST = 16;
}  // namespace neon
