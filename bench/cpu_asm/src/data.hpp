// Buffer contents shared by the Python module and the AArch64 qemu harness (reference.py regenerates them).
#pragma once
#include <cstddef>
#include <cstdint>

namespace data {

inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline uint64_t raw(uint64_t seed, std::size_t i, std::size_t period) { return splitmix64(seed + uint64_t(i % period)); }
// intensity dp: exact doubles in [0.5, 1)
inline double dp(uint64_t z) { return 0.5 + double(z >> 12) * 0x1p-53; }
// intensity sp: exact floats in [0.5, 1)
inline float sp(uint64_t z) { return 0.5f + float(uint32_t(z >> 41)) * 0x1p-24f; }
// int32 chains: odd (products stay odd, never collapse to 0)
inline uint32_t i32(uint64_t z) { return uint32_t(z >> 32) | 1u; }
// cache kernels: multiples of 2^-12 in [0.5, 1): every partial sum below 2^41 is exact in double
inline double cache(uint64_t z) { return 0.5 + double(z >> 53) * 0x1p-12; }

}  // namespace data
