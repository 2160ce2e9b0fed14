// CPU feature detection: what this CPU *and* its OS can execute.
// An ISA counts only if the CPU reports it (CPUID / HWCAP) and the OS saves its registers (XCR0).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

namespace py = pybind11;

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

static py::dict features() {
  uint32_t r[4];
  cpuid(0, 0, r);
  const uint32_t max_leaf = r[0];
  char vendor[13] = {0};
  std::memcpy(vendor + 0, &r[1], 4);
  std::memcpy(vendor + 4, &r[3], 4);
  std::memcpy(vendor + 8, &r[2], 4);

  cpuid(1, 0, r);
  const uint32_t ecx1 = r[2], edx1 = r[3];
  const bool osxsave = ecx1 & (1u << 27);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;  // opmask + ZMM hi256 + hi16

  uint32_t ebx7 = 0;
  if (max_leaf >= 7) {
    cpuid(7, 0, r);
    ebx7 = r[1];
  }

  char brand[49] = {0};
  cpuid(0x80000000u, 0, r);
  if (r[0] >= 0x80000004u) {
    for (uint32_t i = 0; i < 3; ++i) {
      cpuid(0x80000002u + i, 0, r);
      std::memcpy(brand + 16 * i, r, 16);
    }
  }

  py::dict d;
  d["arch"] = "x86_64";
  d["vendor"] = std::string(vendor);
  d["brand"] = std::string(brand);
  d["sse2"] = bool(edx1 & (1u << 26));
  d["avx"] = bool(ecx1 & (1u << 28)) && os_ymm;
  d["fma"] = bool(ecx1 & (1u << 12)) && os_ymm;
  d["avx2"] = bool(ebx7 & (1u << 5)) && os_ymm;
  d["avx512f"] = bool(ebx7 & (1u << 16)) && os_zmm;
  d["avx512dq"] = bool(ebx7 & (1u << 17)) && os_zmm;
  d["avx512bw"] = bool(ebx7 & (1u << 30)) && os_zmm;
  d["avx512vl"] = bool(ebx7 & (1u << 31)) && os_zmm;
  d["neon"] = false;
  d["xcr0"] = xcr0;
  return d;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <asm/hwcap.h>

static py::dict features() {
  const unsigned long hw = getauxval(AT_HWCAP);
  py::dict d;
  d["arch"] = "aarch64";
  d["vendor"] = "";
  d["brand"] = "";
  d["neon"] = bool(hw & HWCAP_ASIMD);
  d["fp"] = bool(hw & HWCAP_FP);
  for (const char* k : {"sse2", "avx", "fma", "avx2", "avx512f", "avx512dq", "avx512bw", "avx512vl"}) d[k] = false;
  return d;
}
#else
static py::dict features() {
  py::dict d;
  d["arch"] = "unknown";
  return d;
}
#endif

PYBIND11_MODULE(_cpuid, m) {
  m.doc() = "CPU feature detection through CPUID/XGETBV (x86-64) or HWCAP (AArch64).";
  m.def("features", &features, "ISA features this CPU and OS can execute, as a dict of bools plus identification strings.");
}
