// pybind11 module _kernels: allocation with first-touch, pinned OpenMP threads, the timed region (measured here,
// slowest thread counts), the effective-clock probe, and the pointer chase. The arithmetic kernels live in
// kern.hpp, instantiated per ISA in isa_*.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <linux/perf_event.h>
#include <omp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "data.hpp"
#include "isa.hpp"
#include "clock_probe.hpp"
#include "sums.hpp"

namespace py = pybind11;
using probe::ClockSample;
using probe::add_chain_hz;
using probe::clock_sample;
using probe::now_s;

namespace {

// Each thread's probes before and after its region: the mean of each rate over both ends and all threads.
void put_clock(py::dict& d, const std::vector<ClockSample>& before, const std::vector<ClockSample>& after) {
  double add = 0, mul = 0, tsc = 0;
  std::vector<double> per_thread;
  const double k = 0.5 / double(before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    add += k * (before[i].add_hz + after[i].add_hz);
    mul += k * (before[i].mul_hz + after[i].mul_hz);
    tsc += k * (before[i].tsc_hz + after[i].tsc_hz);
    per_thread.push_back(0.5 * (before[i].add_hz + after[i].add_hz));
  }
  d["effective_clock_hz"] = add;  // the add chain: what cycles are counted in
  d["mul_chain_hz"] = mul;        // 0 where there is no second chain (AArch64)
  d["tsc_hz"] = tsc;              // 0 off x86-64
  d["thread_clock_hz"] = per_thread;
}

// perf's cycle counter over the add chain, when the kernel exposes it (often not in VMs): cycles per second and
// cycles per add (1.0 confirms the chain's latency directly). Returns {} with a reason otherwise.
py::dict perf_clock(int iters_log2) {
  py::dict d;
  perf_event_attr pe;
  std::memset(&pe, 0, sizeof(pe));
  pe.type = PERF_TYPE_HARDWARE;
  pe.size = sizeof(pe);
  pe.config = PERF_COUNT_HW_CPU_CYCLES;
  pe.disabled = 1;
  pe.exclude_kernel = 1;
  pe.exclude_hv = 1;
  const int fd = int(syscall(__NR_perf_event_open, &pe, 0, -1, -1, 0));
  if (fd < 0) {
    d["error"] = std::string("perf_event_open(cycles): ") + std::strerror(errno);
    return d;
  }
  const uint64_t iters = uint64_t(1) << iters_log2;
  ioctl(fd, PERF_EVENT_IOC_RESET, 0);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  const double t0 = now_s();
  const double add_hz = add_chain_hz(iters);
  const double t1 = now_s();
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  uint64_t cycles = 0;
  const bool ok = read(fd, &cycles, sizeof(cycles)) == ssize_t(sizeof(cycles));
  close(fd);
  if (!ok || cycles == 0) {
    d["error"] = "perf cycle counter read nothing";
    return d;
  }
  d["perf_hz"] = double(cycles) / (t1 - t0);
  d["cycles_per_add"] = double(cycles) / (16.0 * double(iters));
  d["add_hz"] = add_hz;
  return d;
}

void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// The OpenMP master is the Python thread: pinning it must not outlive the call.
struct AffinityGuard {
  cpu_set_t saved;
  bool ok;
  AffinityGuard() { ok = sched_getaffinity(0, sizeof(saved), &saved) == 0; }
  ~AffinityGuard() {
    if (ok) sched_setaffinity(0, sizeof(saved), &saved);
  }
};

const IsaTable* find_isa(const std::string& name) {
#if defined(__x86_64__)
  if (name == "avx512") return &isa_avx512;
  if (name == "avx2") return &isa_avx2;
  if (name == "sse2") return &isa_sse2;
  throw std::invalid_argument("unknown ISA '" + name + "' (compiled: avx512, avx2, sse2)");
#elif defined(__aarch64__)
  if (name == "neon") return &isa_neon;
  throw std::invalid_argument("unknown ISA '" + name + "' (compiled: neon)");
#endif
}

struct Mapping {
  void* ptr = nullptr;   // usable start (2 MiB aligned for large mappings, so THP can back it)
  void* base = nullptr;  // what munmap gets
  std::size_t bytes = 0;
  std::size_t mapped = 0;
  std::string pages = "4k";
};

Mapping map_bytes(std::size_t bytes, bool want_hugetlb) {
  Mapping m;
  m.bytes = bytes;
  constexpr std::size_t huge = 2u << 20;
  if (want_hugetlb) {
    std::size_t rb = (bytes + huge - 1) / huge * huge;
    void* p = mmap(nullptr, rb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      m.ptr = m.base = p;
      m.bytes = m.mapped = rb;
      m.pages = "hugetlb-2M";
      return m;
    }
  }
  const bool big = bytes >= huge;
  m.mapped = big ? bytes + huge : bytes;
  void* p = mmap(nullptr, m.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  m.base = p;
  m.ptr = big ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + huge - 1) / huge * huge) : p;
  if (big && madvise(m.ptr, bytes, MADV_HUGEPAGE) == 0) m.pages = "4k+thp-advised";
  return m;
}

enum class Kind { intensity_dp, intensity_sp, intensity_nt_dp, intensity_nt_sp, int_add, int_mul, load, rmw, store };

Kind parse_kind(const std::string& k) {
  if (k == "intensity_dp") return Kind::intensity_dp;
  if (k == "intensity_sp") return Kind::intensity_sp;
  if (k == "intensity_nt_dp") return Kind::intensity_nt_dp;
  if (k == "intensity_nt_sp") return Kind::intensity_nt_sp;
  if (k == "int_add") return Kind::int_add;
  if (k == "int_mul") return Kind::int_mul;
  if (k == "load") return Kind::load;
  if (k == "rmw") return Kind::rmw;
  if (k == "store") return Kind::store;
  throw std::invalid_argument("unknown kernel kind '" + k + "'");
}

// A streaming kernel over n elements split into per-thread ranges of whole trips.
class Stream {
 public:
  Stream(const std::string& kind, const std::string& isa, std::size_t n_elems, std::vector<int> cpus, uint64_t seed,
         std::size_t period)
      : kind_(parse_kind(kind)), isa_(find_isa(isa)), n_(n_elems), cpus_(std::move(cpus)), seed_(seed),
        period_(period) {
    if (cpus_.empty()) throw std::invalid_argument("need at least one cpu");
    if (period_ == 0) throw std::invalid_argument("period must be > 0");
    if (kind_ == Kind::int_mul && !isa_->int_mul)
      throw std::invalid_argument(std::string("int32 multiply is not available on ") + isa_->name);
    const int vb = isa_->vec_bytes;
    switch (kind_) {
      case Kind::intensity_dp: case Kind::intensity_nt_dp: esize_ = 8; lanes_ = vb / 8; g_ = isa_->g_fp; break;
      case Kind::intensity_sp: case Kind::intensity_nt_sp: esize_ = 4; lanes_ = vb / 4; g_ = isa_->g_fp; break;
      case Kind::int_add: case Kind::int_mul: esize_ = 4; lanes_ = vb / 4; g_ = isa_->g_int; break;
      case Kind::load: esize_ = 8; lanes_ = vb / 8; g_ = isa_->g_ld; break;
      case Kind::rmw: case Kind::store: esize_ = 8; lanes_ = vb / 8; g_ = isa_->g_st; break;
    }
    const std::size_t trip = std::size_t(g_) * lanes_;
    if (n_ == 0 || n_ % trip != 0)
      throw std::invalid_argument("n_elems must be a positive multiple of " + std::to_string(trip));
    const std::size_t trips = n_ / trip;
    const std::size_t nt = cpus_.size();
    if (trips < nt) throw std::invalid_argument("fewer trips than threads");
    for (std::size_t t = 0; t <= nt; ++t) bounds_.push_back(trips * t / nt);
    map_ = map_bytes(n_ * esize_, false);
    if (is_nt()) out_ = map_bytes(n_ / 2 * esize_, false);  // G/2 result vectors per trip of G loaded
    init();
  }
  ~Stream() { close(); }
  void close() {
    if (map_.base) munmap(map_.base, map_.mapped);
    map_.base = nullptr;
    map_.ptr = nullptr;
    if (out_.base) munmap(out_.base, out_.mapped);
    out_.base = nullptr;
    out_.ptr = nullptr;
  }
  bool is_nt() const { return kind_ == Kind::intensity_nt_dp || kind_ == Kind::intensity_nt_sp; }

  std::size_t trip_elems() const { return std::size_t(g_) * lanes_; }

  py::dict run(long reps, int knob) {
    if (!map_.ptr) throw std::invalid_argument("kernel is closed");
    if (reps <= 0) throw std::invalid_argument("reps must be > 0");
    const int nt = int(cpus_.size());
    std::vector<double> t_thread(nt), part_d(nt, 0.0);
    std::vector<ClockSample> clk0(nt), clk1(nt);
    std::vector<uint32_t> part_u(nt, 0);
    std::vector<uint64_t> part_u64(nt, 0);
    const std::size_t trip = trip_elems();
    {
      py::gil_scoped_release release;
      AffinityGuard guard;
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num();
        pin(cpus_[t]);
        const std::size_t b0 = bounds_[t], b1 = bounds_[t + 1], trips = b1 - b0;
        char* base = static_cast<char*>(map_.ptr) + b0 * trip * esize_;
        char* obase = out_.ptr ? static_cast<char*>(out_.ptr) + b0 * (trip / 2) * esize_ : nullptr;
        clk0[t] = clock_sample();
        double acc_d = 0;
        uint32_t acc_u = 0;
        uint64_t acc_u64 = 0;
#pragma omp barrier
        const double t0 = now_s();
        double comp = 0;  // Kahan compensation: reps x the same per-rep checksum stays within ~2 ulp
        auto add_d = [&](double v) {
          const double y = v - comp;
          const double sum = acc_d + y;
          comp = (sum - acc_d) - y;
          acc_d = sum;
        };
        if (kind_ == Kind::load) acc_u64 = isa_->load(reinterpret_cast<uint64_t*>(base), trips, reps);
        for (long r = 0; r < reps && kind_ != Kind::load; ++r) {
          switch (kind_) {
            case Kind::intensity_dp: add_d(isa_->intensity_dp(reinterpret_cast<double*>(base), trips, knob)); break;
            case Kind::intensity_sp: add_d(isa_->intensity_sp(reinterpret_cast<float*>(base), trips, knob)); break;
            case Kind::intensity_nt_dp:
              isa_->intensity_nt_dp(reinterpret_cast<double*>(base), reinterpret_cast<double*>(obase), trips, knob);
              break;
            case Kind::intensity_nt_sp:
              isa_->intensity_nt_sp(reinterpret_cast<float*>(base), reinterpret_cast<float*>(obase), trips, knob);
              break;
            case Kind::int_add: acc_u += isa_->int_add(reinterpret_cast<uint32_t*>(base), trips, knob); break;
            case Kind::int_mul: acc_u += isa_->int_mul(reinterpret_cast<uint32_t*>(base), trips, knob); break;
            case Kind::load: break;  // ran above, all reps in one call
            case Kind::rmw: isa_->rmw(reinterpret_cast<double*>(base), trips, 1.0); break;
            case Kind::store: isa_->store(reinterpret_cast<double*>(base), trips, double(r + 1)); break;
          }
        }
        const double t1 = now_s();
        clk1[t] = clock_sample();
        t_thread[t] = t1 - t0;
        part_d[t] = acc_d;
        part_u[t] = acc_u;
        part_u64[t] = acc_u64;
      }
    }
    if (kind_ == Kind::rmw) total_rmw_ += reps;
    if (kind_ == Kind::store) last_store_ = double(reps);
    sums::Neumaier sum_d;
    uint32_t sum_u = 0;
    uint64_t sum_u64 = 0;  // the load kernel's per-thread totals, added mod 2^64
    for (int t = 0; t < nt; ++t) {
      sum_d.add(part_d[t]);
      sum_u += part_u[t];
      sum_u64 += part_u64[t];
    }
    py::dict d;
    d["time_s"] = *std::max_element(t_thread.begin(), t_thread.end());
    d["thread_time_s"] = t_thread;
    put_clock(d, clk0, clk1);
    if (kind_ == Kind::int_add || kind_ == Kind::int_mul) d["checksum"] = py::int_(sum_u);
    else if (kind_ == Kind::load) d["checksum"] = py::int_(sum_u64);
    else if (kind_ == Kind::rmw || kind_ == Kind::store) d["checksum"] = buffer_sum();
    else if (is_nt()) d["checksum"] = out_sum();  // the written array (same every rep), not the returned sums
    else d["checksum"] = sum_d.value();
    d["pages"] = map_.pages;
    return d;
  }

  // Sum of the buffer in double (exact for the cache kernels' data: every partial sum of multiples of 2^-12 far
  // below 2^41 is exact, in any order).
  double buffer_sum() const { return threaded_sum(map_.ptr, trip_elems(), 8); }

  // Sum of the streamed output array (after the run's sfence; read back outside the timed region), with the bounded
  // error of sums::block_sum: the nt checksum's tolerance no longer depends on luck at large sizes.
  double out_sum() const {
    if (!out_.ptr) throw std::invalid_argument("no output array");
    return threaded_sum(out_.ptr, trip_elems() / 2, esize_);
  }

  // Each thread sums its own range (first-touched by it) with sums::block_sum; the partials are added compensated.
  double threaded_sum(const void* base, std::size_t per_trip, int esize) const {
    const int nt = int(cpus_.size());
    std::vector<sums::Neumaier> part(nt);
    AffinityGuard guard;
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num();
      pin(cpus_[t]);
      const std::size_t i0 = bounds_[t] * per_trip, i1 = bounds_[t + 1] * per_trip;
      if (esize == 8) part[t] = sums::block_sum(static_cast<const double*>(base) + i0, i1 - i0);
      else part[t] = sums::block_sum(static_cast<const float*>(base) + i0, i1 - i0);
    }
    sums::Neumaier s;
    for (const auto& x : part) s.add(x);
    return s.value();
  }

  std::string pages() const { return map_.pages; }

 private:
  void init() {
    const int nt = int(cpus_.size());
    const std::size_t trip = trip_elems();
    AffinityGuard guard;
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num();
      pin(cpus_[t]);  // first touch by the thread that will use the pages
      if (out_.ptr)
        std::memset(static_cast<char*>(out_.ptr) + bounds_[t] * (trip / 2) * esize_, 0,
                    (bounds_[t + 1] - bounds_[t]) * (trip / 2) * esize_);
      const std::size_t i0 = bounds_[t] * trip;
      std::size_t j = i0 % period_;  // i % period, advanced without a division per element
      for (std::size_t i = i0; i < bounds_[t + 1] * trip; ++i, j = (j + 1 == period_) ? 0 : j + 1) {
        const uint64_t z = data::splitmix64(seed_ + uint64_t(j));
        switch (kind_) {
          case Kind::intensity_dp: case Kind::intensity_nt_dp: static_cast<double*>(map_.ptr)[i] = data::dp(z); break;
          case Kind::intensity_sp: case Kind::intensity_nt_sp: static_cast<float*>(map_.ptr)[i] = data::sp(z); break;
          case Kind::int_add: case Kind::int_mul: static_cast<uint32_t*>(map_.ptr)[i] = data::i32(z); break;
          case Kind::load: static_cast<uint64_t*>(map_.ptr)[i] = z; break;  // all 64 bits random: XOR checksum
          case Kind::rmw: case Kind::store: static_cast<double*>(map_.ptr)[i] = data::cache(z); break;
        }
      }
    }
  }

  Kind kind_;
  const IsaTable* isa_;
  std::size_t n_;
  std::vector<int> cpus_;
  uint64_t seed_;
  std::size_t period_;
  int esize_ = 8, lanes_ = 1, g_ = 1;
  std::vector<std::size_t> bounds_;
  Mapping map_;
  Mapping out_;  // intensity_nt: the streamed result array (n/2 elements)
  long total_rmw_ = 0;
  double last_store_ = 0;
};

// ---- pointer chase ---------------------------------------------------------------------------------------------
template <int C>
void chase_steps(void** p[], std::size_t steps) {
  void** q[C];
  for (int c = 0; c < C; ++c) q[c] = p[c];
  std::size_t s = 0;
  for (; s + 4 <= steps; s += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
#pragma GCC unroll 32
      for (int c = 0; c < C; ++c) q[c] = static_cast<void**>(*q[c]);
    }
  }
  for (; s < steps; ++s)
    for (int c = 0; c < C; ++c) q[c] = static_cast<void**>(*q[c]);
  for (int c = 0; c < C; ++c) p[c] = q[c];
}

class Chase {
 public:
  // order: the cyclic visiting order of the nodes (node k lives at byte k*stride); chains start at evenly spaced
  // positions of that cycle, so they never meet.
  Chase(py::array_t<uint64_t, py::array::c_style | py::array::forcecast> order, std::size_t stride, int chains,
        int cpu, bool hugetlb)
      : stride_(stride), chains_(chains), cpu_(cpu) {
    auto o = order.unchecked<1>();
    n_ = std::size_t(o.shape(0));
    if (n_ < 2) throw std::invalid_argument("need at least 2 nodes");
    if (stride_ < sizeof(void*) || stride_ % sizeof(void*)) throw std::invalid_argument("bad stride");
    if (chains_ < 1 || chains_ > 32 || (chains_ & (chains_ - 1))) throw std::invalid_argument("chains: 1,2,4..32");
    if (n_ % std::size_t(chains_)) throw std::invalid_argument("nodes must be a multiple of chains");
    AffinityGuard guard;
    pin(cpu_);
    map_ = map_bytes(n_ * stride_, hugetlb);
    char* base = static_cast<char*>(map_.ptr);
    std::memset(base, 0, n_ * stride_);  // first touch on the measuring cpu
    for (std::size_t j = 0; j < n_; ++j) {
      const uint64_t a = o(j), b = o((j + 1) % n_);
      if (a >= n_ || b >= n_) throw std::invalid_argument("order entry out of range");
      *reinterpret_cast<void**>(base + a * stride_) = base + b * stride_;
    }
    for (int c = 0; c < chains_; ++c) pos_.push_back(reinterpret_cast<void**>(base + o(c * (n_ / chains_)) * stride_));
  }
  ~Chase() { close(); }
  void close() {
    if (map_.base) munmap(map_.base, map_.mapped);
    map_.base = nullptr;
    map_.ptr = nullptr;
  }

  // reps x steps dependent steps per chain (steps 0: a whole cycle, n / chains); checksum = node index where each
  // chain stands. A rep shorter than the cycle keeps a memory-sized chase short; the walk goes on where it stopped,
  // so every step still lands on a node not visited since the last lap.
  py::dict run(long reps, std::size_t steps) {
    if (!map_.ptr) throw std::invalid_argument("kernel is closed");
    if (reps <= 0) throw std::invalid_argument("reps must be > 0");
    if (steps == 0) steps = n_ / std::size_t(chains_);
    double t0, t1;
    std::vector<ClockSample> c0(1), c1(1);
    {
      py::gil_scoped_release release;
      AffinityGuard guard;
      pin(cpu_);
      c0[0] = clock_sample();
      t0 = now_s();
      for (long r = 0; r < reps; ++r) {
        switch (chains_) {
          case 1: chase_steps<1>(pos_.data(), steps); break;
          case 2: chase_steps<2>(pos_.data(), steps); break;
          case 4: chase_steps<4>(pos_.data(), steps); break;
          case 8: chase_steps<8>(pos_.data(), steps); break;
          case 16: chase_steps<16>(pos_.data(), steps); break;
          case 32: chase_steps<32>(pos_.data(), steps); break;
        }
      }
      t1 = now_s();
      c1[0] = clock_sample();
    }
    std::vector<uint64_t> where;
    for (auto* p : pos_) where.push_back(uint64_t((reinterpret_cast<char*>(p) - static_cast<char*>(map_.ptr)) / stride_));
    py::dict d;
    d["time_s"] = t1 - t0;
    d["thread_time_s"] = std::vector<double>{t1 - t0};
    put_clock(d, c0, c1);
    d["checksum"] = where;
    d["pages"] = map_.pages;
    return d;
  }

 private:
  std::size_t stride_, n_ = 0;
  int chains_, cpu_;
  Mapping map_;
  std::vector<void**> pos_;
};

py::dict isa_info(const std::string& name) {
  const IsaTable* t = find_isa(name);
  py::dict d;
  d["name"] = t->name;
  d["vec_bytes"] = t->vec_bytes;
  d["g_fp"] = t->g_fp;
  d["a_fp"] = t->a_fp;
  d["g_int"] = t->g_int;
  d["a_int"] = t->a_int;
  d["g_ld"] = t->g_ld;
  d["a_ld"] = t->a_ld;
  d["g_st"] = t->g_st;
  d["int_mul"] = t->int_mul != nullptr;
  return d;
}

}  // namespace

PYBIND11_MODULE(_kernels, m) {
  m.doc() = "archline cpu_asm kernels: intensity (sp/dp), int32 chains, cache load/rmw/store, pointer chase.";
  m.def("compiled_isas", []() { return std::vector<std::string>{"avx512", "avx2", "sse2"}; });
  m.def("isa_info", &isa_info);
  m.def("clock_sample", [](int cpu) {
    AffinityGuard guard;
    pin(cpu);
    py::dict d;
    std::vector<ClockSample> c{clock_sample(1u << 18)};
    put_clock(d, c, c);
    return d;
  }, py::arg("cpu") = -1, "add-chain, imul-chain and TSC rates (Hz) on one cpu");
  m.def("perf_clock", [](int cpu) {
    AffinityGuard guard;
    pin(cpu);
    return perf_clock(20);
  }, py::arg("cpu") = -1, "perf cycle counter over the add chain: perf_hz, cycles_per_add, or error");
  m.def("readback_sum", [](py::array_t<double, py::array::c_style | py::array::forcecast> a) {
    return sums::block_sum(a.data(), std::size_t(a.size())).value();
  }, "the checksum read-back sum (sums::block_sum) over a float64 array");
  m.attr("READBACK_ULPS") = sums::READBACK_ULPS;
  m.def("max_threads", []() { return omp_get_num_procs(); });
  py::class_<Stream>(m, "Stream")
      .def(py::init<const std::string&, const std::string&, std::size_t, std::vector<int>, uint64_t, std::size_t>(),
           py::arg("kind"), py::arg("isa"), py::arg("n_elems"), py::arg("cpus"), py::arg("seed"), py::arg("period"))
      .def("run", &Stream::run, py::arg("reps"), py::arg("knob") = 0)
      .def("buffer_sum", &Stream::buffer_sum)
      .def("out_sum", &Stream::out_sum)
      .def("close", &Stream::close)
      .def_property_readonly("pages", &Stream::pages)
      .def_property_readonly("trip_elems", &Stream::trip_elems);
  py::class_<Chase>(m, "Chase")
      .def(py::init<py::array_t<uint64_t, py::array::c_style | py::array::forcecast>, std::size_t, int, int, bool>(),
           py::arg("order"), py::arg("stride"), py::arg("chains"), py::arg("cpu"), py::arg("hugetlb"))
      .def("run", &Chase::run, py::arg("reps"), py::arg("steps") = 0)
      .def("close", &Chase::close);
}
