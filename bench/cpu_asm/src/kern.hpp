// Generic kernel bodies, written once in C++ over a small vector-traits type V and instantiated per ISA
// (isa_avx512.cpp, isa_avx2.cpp, isa_sse2.cpp, isa_neon.hpp). Intrinsics, not hand-written assembly: GCC 12 emits
// the same instruction stream a .S file would (one load per vector, one vfnmadd/vfmadd per FMA, the Horner
// steps in registers; checked with objdump, see tests/bench_cpu/test_cpu_asm_code.py) and it keeps one source
// for x86-64 and AArch64.
//
// Kernels-as-data (likwid-bench .ptt style): the per-variant counts are DECLARED in kern_desc.hpp / the Python
// descriptors, and these bodies implement exactly that many operations:
//
//  intensity  One trip loads G vectors (G*L elements) and performs F vector FMAs, F >= G/2.
//             F <  G: "pairs" mode: P = G-F FMAs acc += x[2i]*x[2i+1] (two fresh loads each), the other G-2P
//                     vectors acc += x*x.                                      FMAs/trip = P + G-2P = F
//             F >= G: "chains" mode: Q = F/G, R = F%G; every vector y=x runs Q-1 (+1 if g<R) steps
//                     y = y - y*y (one vfnmadd, no constant register), then acc += y*y.   FMAs/trip = F
//             flops/element = 2F/G, bytes/element = sizeof(T): I = 2F/(G*sizeof(T)) flop/byte, exact.
//             The accumulators are flushed into a double every BLOCK trips (keeps float sums accurate).
//             Trips are walked as STREAMS interleaved streams (streams()) for memory-level parallelism.
//  intensity_nt  as intensity, plus a non-temporal store stream: see intensity_nt below.
//  int        One trip loads G int32 vectors; S steps of y[g] = y[g] OP y[(g+1)%G] (in place, g ascending,
//             OP = add or mul, wrapping mod 2^32), then acc += y[g].      int ops/trip = (S+1)*G
//  load       acc[j] ^= x[2j] ^ x[2j+1] over 64-bit words (read only)       bytes = 8 per element
//  rmw        x[g] = x[g] + c   (read-modify-write)                           bytes = 16 per element
//  store      x[g] = c          (write only; write-allocate doubles bus traffic below L1)
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "sums.hpp"

namespace kern {

// Trip bodies are lambdas handed to streams()/blocked(); they must be inlined into the kernel's loop (GCC otherwise
// calls some of them out of line, spilling the closure and the y[] registers: seen once both prefetch variants
// were instantiated).
#define ALWAYS_INLINE __attribute__((always_inline))

constexpr std::size_t BLOCK = 512;  // trips between accumulator flushes

// Walk trips [0, trips) as STREAMS interleaved sequential streams (t, t + k, t + 2k, ..., k = trips / STREAMS, then
// the leftover trips): several streams per thread keep more DRAM requests and hardware-prefetch streams in flight
// (on Zen 3 in a VM one stream reads ~16 GB/s, two ~19, three ~22 per core). Each trip is still processed whole,
// so an element's role depends only on its position in its trip and the reference does not change.
constexpr std::size_t STREAMS = 3;
#ifndef KERN_NT_STREAMS
#define KERN_NT_STREAMS 4
#endif
// The nt kernel reads and writes: more read streams per core keep more lines in flight while its streamed stores
// drain (measured in benchmarks/cpu_vs_likwid.py; KERN_NT_STREAMS overrides it for experiments).
constexpr std::size_t NT_STREAMS = KERN_NT_STREAMS;

template <std::size_t NS = STREAMS, class F>
[[gnu::always_inline]] inline void streams(std::size_t t0, std::size_t t1, std::size_t k, std::size_t trips, F&& trip) {
  for (std::size_t t = t0; t < t1; ++t) {
#pragma GCC unroll 8
    for (std::size_t s = 0; s < NS; ++s) trip(t + s * k);
  }
  if (t1 == k)
    for (std::size_t t = NS * k; t < trips; ++t) trip(t);
}

// Software prefetch of the trip after ``p`` in memory (the same stream's next trip, processed STREAMS trips later).
// Only compute-heavy trips use it (PF): there a trip's FMAs outlast the reorder window, so the next trip's loads
// cannot be issued early, and the hardware streamer restarts at every 4 KiB page; a memory-bound trip is better
// left to the hardware prefetchers (measured: no gain there).
constexpr int PF_MIN_ROUNDS = 4;  // Horner rounds per trip from which a trip counts as compute-heavy
template <class V, int G>
[[gnu::always_inline]] inline void prefetch_next_trip(const typename V::T* p) {
  constexpr int lines = int(G * V::L * sizeof(typename V::T) / 64);
  const char* next = reinterpret_cast<const char*>(p + G * V::L);
#pragma GCC unroll 32
  for (int l = 0; l < (lines > 0 ? lines : 1); ++l) __builtin_prefetch(next + 64 * l, 0, 3);
}

template <class V>
inline double hsum_d(typename V::v a) {
  alignas(64) typename V::T t[V::L];
  V::store(t, a);
  double s = 0;
  for (int i = 0; i < V::L; ++i) s += double(t[i]);
  return s;
}

// ---- intensity: trips in blocks of BLOCK, fresh accumulators per block, flushed into a double after each --------
// always_inline: the loop must stay in chains<>/pairs<> themselves, where tests/bench_cpu/test_cpu_asm_code.py reads it
template <class V, int A, class Trip>
[[gnu::always_inline]] inline double blocked(std::size_t trips, Trip&& trip) {
  using v = typename V::v;
  sums::Neumaier total;  // blocks x A x L terms: compensated, so the error does not grow with the trip count
  const std::size_t half = trips / STREAMS;  // trips per stream
  std::size_t t = 0;
  do {
    v acc[A];
#pragma GCC unroll 32
    for (int a = 0; a < A; ++a) acc[a] = V::zero();
    const std::size_t end = (half - t < BLOCK / STREAMS) ? half : t + BLOCK / STREAMS;
    streams(t, end, half, trips, [&](std::size_t u) ALWAYS_INLINE { trip(u, acc); });
    t = end;
#pragma GCC unroll 32
    for (int a = 0; a < A; ++a) total.add(hsum_d<V>(acc[a]));
  } while (t < half);
  return total.value();
}

// chains mode: Q runtime, R compile time
template <class V, int G, int A, int R, bool PF>
double chains(const typename V::T* __restrict x, std::size_t trips, int Q) {
  using v = typename V::v;
  return blocked<V, A>(trips, [&](std::size_t u, v (&acc)[A]) ALWAYS_INLINE {
    const typename V::T* p = x + u * std::size_t(G * V::L);
    if constexpr (PF) prefetch_next_trip<V, G>(p);
    v y[G];
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) y[g] = V::load(p + g * V::L);
    for (int s = 1; s < Q; ++s) {
#pragma GCC unroll 32
      for (int g = 0; g < G; ++g) y[g] = V::fnma(y[g], y[g], y[g]);
    }
#pragma GCC unroll 32
    for (int g = 0; g < R; ++g) y[g] = V::fnma(y[g], y[g], y[g]);
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) acc[g % A] = V::fma(y[g], y[g], acc[g % A]);
  });
}

// pairs mode: P = G - F pairs
template <class V, int G, int A, int P>
double pairs(const typename V::T* __restrict x, std::size_t trips, int) {
  using v = typename V::v;
  return blocked<V, A>(trips, [&](std::size_t u, v (&acc)[A]) ALWAYS_INLINE {
    const typename V::T* p = x + u * std::size_t(G * V::L);
#pragma GCC unroll 32
    for (int i = 0; i < P; ++i)
      acc[i % A] = V::fma(V::load(p + (2 * i) * V::L), V::load(p + (2 * i + 1) * V::L), acc[i % A]);
#pragma GCC unroll 32
    for (int g = 2 * P; g < G; ++g) {
      const v y = V::load(p + g * V::L);
      acc[(g - P) % A] = V::fma(y, y, acc[(g - P) % A]);
    }
  });
}

template <class V, int G, int A, std::size_t... R>
double intensity_dispatch(const typename V::T* x, std::size_t trips, int F, std::index_sequence<R...>) {
  using fn = double (*)(const typename V::T*, std::size_t, int);
  static constexpr fn ch[] = {&chains<V, G, A, int(R), false>...};
  static constexpr fn ch_pf[] = {&chains<V, G, A, int(R), true>...};
  static constexpr fn pr[] = {&pairs<V, G, A, (int(R) == 0 ? 1 : (int(R) > G / 2 ? G / 2 : int(R)))>...};  // pr[P], P in 1..G/2
  if (F >= G) return (F / G >= PF_MIN_ROUNDS ? ch_pf : ch)[F % G](x, trips, F / G);
  const int P = G - F;
  if (P < 1 || P > G / 2) return -1.0;  // caller validates F >= G/2
  return pr[P](x, trips, F);
}

template <class V, int G, int A>
double intensity(const typename V::T* x, std::size_t trips, int F) {
  return intensity_dispatch<V, G, A>(x, trips, F, std::make_index_sequence<G>{});
}

// ---- intensity with a non-temporal store stream ("nt") ----------------------------------------------------------
// One trip loads G vectors, writes G/2 result vectors with streaming stores (no write-allocate: bus bytes = counted
// bytes) and performs F vector FMAs, F >= G/2: H = F - G/2 Horner steps y = y - y*y spread over the G vectors
// (H/G each, +1 for the first H%G), then G/2 FMAs out[j] = y[2j]*y[2j+1] + y[2j] (every loaded value reaches the
// written array). bytes/element = 1.5 sizeof(T) (1 read + 1/2 written), flops/element = 2F/G:
// I = 4F/(3 G sizeof(T)); at F = G/2 that is stream's triad (2 flops per 2 loads + 1 store).
template <class V, int G, int R, bool PF>
void nt_trips(const typename V::T* __restrict x, typename V::T* __restrict out, std::size_t trips, int Q) {
  using v = typename V::v;
  const std::size_t k = trips / NT_STREAMS;
  streams<NT_STREAMS>(0, k, k, trips, [&](std::size_t u) ALWAYS_INLINE {
    const typename V::T* p = x + u * std::size_t(G * V::L);
    typename V::T* o = out + u * std::size_t((G / 2) * V::L);
    if constexpr (PF) prefetch_next_trip<V, G>(p);
    v y[G];
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) y[g] = V::load(p + g * V::L);
    for (int s = 0; s < Q; ++s) {
#pragma GCC unroll 32
      for (int g = 0; g < G; ++g) y[g] = V::fnma(y[g], y[g], y[g]);
    }
#pragma GCC unroll 32
    for (int g = 0; g < R; ++g) y[g] = V::fnma(y[g], y[g], y[g]);
#pragma GCC unroll 32
    for (int j = 0; j < G / 2; ++j) V::stream(o + j * V::L, V::fma(y[2 * j], y[2 * j + 1], y[2 * j]));
  });
  V::sfence();
}

template <class V, int G, std::size_t... R>
void intensity_nt_dispatch(const typename V::T* x, typename V::T* out, std::size_t trips, int F,
                           std::index_sequence<R...>) {
  using fn = void (*)(const typename V::T*, typename V::T*, std::size_t, int);
  static constexpr fn tab[] = {&nt_trips<V, G, int(R), false>...};
  static constexpr fn tab_pf[] = {&nt_trips<V, G, int(R), true>...};
  const int H = F - G / 2;
  if (H < 0) return;  // caller validates F >= G/2
  (H / G >= PF_MIN_ROUNDS ? tab_pf : tab)[H % G](x, out, trips, H / G);
}

template <class V, int G>
void intensity_nt(const typename V::T* x, typename V::T* out, std::size_t trips, int F) {
  intensity_nt_dispatch<V, G>(x, out, trips, F, std::make_index_sequence<G>{});
}

// ---- int32 add / mul chains ----------------------------------------------------------------------------------
template <class V, int G, int A, bool MUL>
uint32_t int_chains(const uint32_t* __restrict x, std::size_t trips, int S) {
  using v = typename V::v;
  v acc[A];
#pragma GCC unroll 32
  for (int a = 0; a < A; ++a) acc[a] = V::zero();
  streams(0, trips / STREAMS, trips / STREAMS, trips, [&](std::size_t t) ALWAYS_INLINE {
    const uint32_t* p = x + t * std::size_t(G * V::L);
    v y[G];
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) y[g] = V::load(p + g * V::L);
    for (int s = 0; s < S; ++s) {
#pragma GCC unroll 32
      for (int g = 0; g < G; ++g) {
        if constexpr (MUL) y[g] = V::mul(y[g], y[(g + 1) % G]);
        else y[g] = V::add(y[g], y[(g + 1) % G]);
      }
    }
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) acc[g % A] = V::add(acc[g % A], y[g]);
  });
  uint32_t s = 0;
  for (int a = 0; a < A; ++a) {
    alignas(64) uint32_t t[V::L];
    V::store(t, acc[a]);
    for (int i = 0; i < V::L; ++i) s += t[i];
  }
  return s;
}

// ---- cache kernels ---------------------------------------------------------------------------------------------
// load: every loaded 64-bit word reaches the checksum through XOR, two loaded vectors per accumulator update
// (acc[j] ^= x[2j] ^ x[2j+1]: one vpternlogq on AVX-512). A float add per load needs one vector-ALU op per load and
// stopped at ~0.8x of likwid's load_avx512 on Golden Cove (two 512-bit loads but only two 512-bit ALU ports per
// cycle); the pairwise XOR needs half of that. Each rep's XOR is added (mod 2^64) into a running total, so the
// checksum is reps x sum over accumulator lanes of their XOR: it does not cancel over an even number of reps, and
// (with data that do not repeat inside the buffer) every word of every rep counts. All reps run in one call so the
// accumulators stay in registers. Six interleaved streams (96 loads per loop iteration on AVX-512): on Golden Cove
// L1 read reached 0.957-0.968x likwid's load_avx512 against 0.953x with three, 0.92x with four or eight and 0.91x with
// one (benchmarks/cpu_vs_likwid.py, 9-11 paired rounds each); DRAM read is unchanged (33.4 against 32.3 GB/s).
constexpr std::size_t LOAD_STREAMS = 6;
template <class X, int G>
uint64_t load_xor(const uint64_t* __restrict x, std::size_t trips, long reps) {
  using v = typename X::v;
  constexpr int A = G / 2;
  v acc[A], tot[A];
#pragma GCC unroll 32
  for (int a = 0; a < A; ++a) tot[a] = X::zero();
  for (long r = 0; r < reps; ++r) {
#pragma GCC unroll 32
    for (int a = 0; a < A; ++a) acc[a] = X::zero();
    streams<LOAD_STREAMS>(0, trips / LOAD_STREAMS, trips / LOAD_STREAMS, trips, [&](std::size_t t) ALWAYS_INLINE {
      const uint64_t* p = x + t * std::size_t(G * X::L);
#pragma GCC unroll 32
      for (int j = 0; j < A; ++j) acc[j] = X::xor3(acc[j], X::load(p + 2 * j * X::L), X::load(p + (2 * j + 1) * X::L));
    });
#pragma GCC unroll 32
    for (int a = 0; a < A; ++a) tot[a] = X::add(tot[a], acc[a]);
  }
  uint64_t s = 0;
  for (int a = 0; a < A; ++a) {
    alignas(64) uint64_t lanes[X::L];
    X::store(lanes, tot[a]);
    for (int i = 0; i < X::L; ++i) s += lanes[i];
  }
  return s;
}

template <class V, int G>
void rmw(double* __restrict x, std::size_t trips, double c) {
  const typename V::v cv = V::set1(c);
  for (std::size_t t = 0; t < trips; ++t) {
    double* p = x + t * std::size_t(G * V::L);
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) V::store(p + g * V::L, V::add(V::load(p + g * V::L), cv));
  }
}

template <class V, int G>
void store(double* __restrict x, std::size_t trips, double c) {
  const typename V::v cv = V::set1(c);
  for (std::size_t t = 0; t < trips; ++t) {
    double* p = x + t * std::size_t(G * V::L);
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) V::store(p + g * V::L, cv);
  }
}

}  // namespace kern
