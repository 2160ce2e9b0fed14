// Read-back sums whose rounding error does not grow with the element count (shared by module.cpp, kern.hpp and the
// AArch64 qemu harness). A plain sequential double sum of n positive terms is off by up to (n-1)u relative; at
// 3.75 GiB (n ~ 1.7e8) its random-walk part alone reached the checksum tolerance, so checksums failed on rounding.
//
// Error bounds (u = 2^-53, all terms >= 0, first order in u), used by reference.py's tolerances:
//   Neumaier::add ... value()   compensated sum of any count B of terms: |err| <= 2u |S| + 4B u^2 |S|
//   block_sum(p, n)             8 lanes x 8 terms per 64-element block (7u), lanes combined as a tree (3u), blocks
//                               into a Neumaier sum (2u):  |err| <= 12u |S| + 4(n/64) u^2 |S|   (READBACK_ULPS below)
#pragma once
#include <cmath>
#include <cstddef>

namespace sums {

constexpr int READBACK_ULPS = 12;  // block_sum's first-order bound in units of u; reference.py mirrors it

// Neumaier's variant of Kahan summation: exact compensation whichever operand is larger.
struct Neumaier {
  double s = 0, c = 0;
  void add(double x) {
    const double t = s + x;
    c += (std::fabs(s) >= std::fabs(x)) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  void add(const Neumaier& o) {
    add(o.s);
    add(o.c);
  }
  double value() const { return s + c; }
};

// Sum of n values of T (float or double) in double: 64-element blocks summed by 8 independent lanes (the loop
// vectorises and is not latency bound), each block added to a compensated total.
template <class T>
Neumaier block_sum(const T* p, std::size_t n) {
  Neumaier total;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 8; ++k)
      for (int l = 0; l < 8; ++l) lane[l] += double(p[i + 8 * k + l]);
    total.add(((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])));
  }
  for (; i < n; ++i) total.add(double(p[i]));
  return total;
}

}  // namespace sums
