// CRC-32 throughput side by side: the RoCEv2 ICRC of a whole frame, crc32() (dispatching; its
// label says which path it chose), each kernel (slicing-by-8 table, PCLMULQDQ, VPCLMULQDQ on
// 256- and on 512-bit registers), zlib, and memcpy as the memory-bandwidth yardstick, with
// crc32_copy() beside it against a memcpy followed by crc32(). Every benchmark counts the same N bytes, so the GB/s columns compare
// directly; for the ICRC N is the payload (the ICRC also covers the 48 masked header bytes, which
// is exactly its per-packet overhead). NDNIC_CRC=table|pclmul|vpclmul256|vpclmul forces crc32()'s
// path.
#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "wire/crc32_clmul.h"
#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

constexpr int64_t kMinSize = 64;
constexpr int64_t kMaxSize = 4096;
// ~60 cases in the ~20 s a default run may take; at nanoseconds per call a fraction of a
// second is still millions of iterations.
constexpr double kMinTime = 0.05;

std::vector<uint8_t> random_bytes(size_t n) {
  std::mt19937 rng(42);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

void BM_icrc(benchmark::State& state) {
  const auto payload = random_bytes(size_t(state.range(0)));
  RocePacket p;
  p.bth.opcode = kRcSendOnly;
  p.payload = payload.data();
  p.payload_len = uint32_t(payload.size());
  std::vector<uint8_t> frame(frame_length(p));
  encode_frame(p, frame.data(), frame.size());
  const uint8_t* l3 = frame.data() + kEthHdrLen;
  const size_t ib_len = frame.size() - kEthHdrLen - kIpv4HdrLen - kUdpHdrLen - kIcrcLen;
  // The ICRC stored by the encoder is what the timed call must reproduce.
  uint32_t stored;
  std::memcpy(&stored, frame.data() + frame.size() - kIcrcLen, kIcrcLen);
  if (icrc_compute(l3, false, ib_len) != stored) {
    state.SkipWithError("icrc_compute disagrees with the encoder");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(icrc_compute(l3, false, ib_len));
  state.SetLabel(crc32_path());
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

uint32_t zlib(uint32_t c, const uint8_t* p, size_t n) { return uint32_t(::crc32(c, p, uInt(n))); }

uint32_t dispatching(uint32_t c, const uint8_t* p, size_t n) { return crc32(c, p, n); }
uint32_t table(uint32_t c, const uint8_t* p, size_t n) { return crc32_table(c, p, n); }
uint32_t clmul(uint32_t c, const uint8_t* p, size_t n) { return detail::crc32_clmul(c, p, n); }
uint32_t vpclmul(uint32_t c, const uint8_t* p, size_t n) { return detail::crc32_vpclmul(c, p, n); }
uint32_t vpclmul256(uint32_t c, const uint8_t* p, size_t n) { return detail::crc32_vpclmul256(c, p, n); }

using detail::CrcPath;

/// The shortest input a path's own kernels accept.
constexpr size_t min_len(CrcPath path) {
  return path == CrcPath::kVpclmul      ? detail::kVpclmulMinLen
         : path == CrcPath::kVpclmul256 ? detail::kVpclmul256MinLen
         : path == CrcPath::kPclmul     ? detail::kClmulMinLen
                                        : 0;
}

bool cpu_runs(benchmark::State& state, CrcPath needs) {
  if (needs > detail::crc_path_best()) {
    state.SkipWithError("this CPU lacks the instructions");
    return false;
  }
  if (size_t(state.range(0)) < min_len(needs)) {
    state.SkipWithError("shorter than the kernel accepts");
    return false;
  }
  return true;
}

/// Every CRC here must agree with zlib's before it is timed, and run only where the CPU can.
template <uint32_t (*F)(uint32_t, const uint8_t*, size_t), CrcPath kNeeds>
bool agrees_with_zlib(benchmark::State& state, const std::vector<uint8_t>& buf) {
  if (!cpu_runs(state, kNeeds)) return false;
  if (F(0, buf.data(), buf.size()) == zlib(0, buf.data(), buf.size())) return true;
  state.SkipWithError("CRC differs from zlib's");
  return false;
}

template <uint32_t (*F)(uint32_t, const uint8_t*, size_t), CrcPath kNeeds = CrcPath::kTable>
void BM_crc(benchmark::State& state) {
  const auto buf = random_bytes(size_t(state.range(0)));
  if (!agrees_with_zlib<F, kNeeds>(state, buf)) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(F(0, buf.data(), buf.size()));
  }
  if constexpr (F == dispatching) state.SetLabel(crc32_path());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}


/// A copy benchmark's source and destination: one allocation, both 64-byte aligned, 2 KiB apart
/// modulo 4 KiB. Left to the allocator they can sit a few bytes apart modulo 4 KiB, where loads
/// falsely alias the stores just before them (4K aliasing) and the figures time the placement
/// rather than the copy: a 4 KiB memcpy to 16 bytes past the source modulo 4 KiB took 170-240
/// ns on the AMD EPYC the crossovers were measured on, 43-55 ns at other distances.
class CopyBuffers {
 public:
  explicit CopyBuffers(size_t n) : n_(n), mem_(2 * round_up(n) + 4096 + 2048 + 64) {
    const auto a = reinterpret_cast<uintptr_t>(mem_.data());
    src_ = mem_.data() + (64 - a % 64) % 64;
    dst_ = src_ + round_up(n) + 2048;
    const auto bytes = random_bytes(n);
    std::memcpy(src_, bytes.data(), n);
  }
  const uint8_t* src() const { return src_; }
  uint8_t* dst() { return dst_; }
  size_t size() const { return n_; }
  bool copied() const { return std::memcmp(src_, dst_, n_) == 0; }

 private:
  static size_t round_up(size_t n) { return (n + 4095) / 4096 * 4096; }
  size_t n_;
  std::vector<uint8_t> mem_;
  uint8_t* src_;
  uint8_t* dst_;
};

void BM_memcpy(benchmark::State& state) {
  CopyBuffers b(size_t(state.range(0)));
  for (auto _ : state) {
    std::memcpy(b.dst(), b.src(), b.size());
    benchmark::ClobberMemory();
  }
  if (!b.copied()) state.SkipWithError("memcpy did not copy");
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// What the receive path does with a payload: copy it out and check its CRC.
uint32_t fused_copy(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) { return crc32_copy(c, d, s, n); }
uint32_t memcpy_then_crc(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  std::memcpy(d, s, n);
  return crc32(c, s, n);
}
uint32_t copy_clmul(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  return detail::crc32_copy_clmul(c, d, s, n);
}
uint32_t copy_vpclmul(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  return detail::crc32_copy_vpclmul(c, d, s, n);
}
uint32_t copy_vpclmul256(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  return detail::crc32_copy_vpclmul256(c, d, s, n);
}

/// A copy must copy and agree with zlib before it is timed.
template <uint32_t (*F)(uint32_t, uint8_t*, const uint8_t*, size_t), CrcPath kNeeds>
bool copy_is_right(benchmark::State& state, CopyBuffers& b) {
  if (!cpu_runs(state, kNeeds)) return false;
  if (F(0, b.dst(), b.src(), b.size()) == zlib(0, b.src(), b.size()) && b.copied()) return true;
  state.SkipWithError("copy differs from its source, or CRC from zlib's");
  return false;
}

template <uint32_t (*F)(uint32_t, uint8_t*, const uint8_t*, size_t), CrcPath kNeeds = CrcPath::kTable>
void BM_copy(benchmark::State& state) {
  CopyBuffers b(size_t(state.range(0)));
  if (!copy_is_right<F, kNeeds>(state, b)) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(F(0, b.dst(), b.src(), b.size()));
    benchmark::ClobberMemory();
  }
  if constexpr (F == fused_copy || F == memcpy_then_crc) state.SetLabel(crc32_path());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);
}

// Payload 0 is a header-only packet (ACK, READ request, atomics): the ICRC's fixed cost.
BENCHMARK(BM_icrc)->Arg(0)->Apply(sizes);
BENCHMARK(BM_crc<dispatching>)->Name("BM_crc32")->Apply(sizes);
BENCHMARK(BM_crc<vpclmul, CrcPath::kVpclmul>)->Name("BM_crc32_vpclmul")->Apply(sizes);
BENCHMARK(BM_crc<vpclmul256, CrcPath::kVpclmul256>)->Name("BM_crc32_vpclmul256")->Apply(sizes);
BENCHMARK(BM_crc<clmul, CrcPath::kPclmul>)->Name("BM_crc32_pclmul")->Apply(sizes);
BENCHMARK(BM_crc<table>)->Name("BM_crc32_table")->Apply(sizes);
BENCHMARK(BM_crc<zlib>)->Name("BM_zlib_crc32")->Apply(sizes);
BENCHMARK(BM_memcpy)->Apply(sizes);
BENCHMARK(BM_copy<fused_copy>)->Name("BM_crc32_copy")->Apply(sizes);
BENCHMARK(BM_copy<memcpy_then_crc>)->Name("BM_memcpy_crc32")->Apply(sizes);

// Where the fold starts to beat the table, which is what kClmulCrossover in wire/crc32.cc is
// set from. Each call is seeded with the previous result, so this measures latency, as in the
// ICRC where the header CRC seeds the payload CRC, not the overlapped throughput above.
template <uint32_t (*F)(uint32_t, const uint8_t*, size_t), CrcPath kNeeds = CrcPath::kTable>
void BM_chained(benchmark::State& state) {
  const auto buf = random_bytes(size_t(state.range(0)));
  if (!agrees_with_zlib<F, kNeeds>(state, buf)) return;
  uint32_t c = 0;
  for (auto _ : state) c = F(c, buf.data(), buf.size());
  benchmark::DoNotOptimize(c);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
void crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = int64_t(detail::kClmulMinLen); n <= 128; n += 8) b->Arg(n);
}
// Where the 512-bit fold starts to beat the 128-bit one (kVpclmulCrossover).
void wide_crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = int64_t(detail::kVpclmulMinLen); n <= 512; n += 32) b->Arg(n);
}
BENCHMARK(BM_chained<clmul, CrcPath::kPclmul>)->Name("BM_crossover_clmul")->Apply(crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_chained<table>)->Name("BM_crossover_table")->Apply(crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_chained<vpclmul, CrcPath::kVpclmul>)->Name("BM_crossover_vpclmul")->Apply(wide_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_chained<clmul, CrcPath::kPclmul>)->Name("BM_crossover_wide_clmul")->Apply(wide_crossover_sizes)->MinTime(kMinTime);
// And where the 256-bit fold starts to beat the 128-bit one (kVpclmul256Crossover).
void ymm_crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = int64_t(detail::kVpclmul256MinLen); n <= 256; n += 16) b->Arg(n);
}
BENCHMARK(BM_chained<vpclmul256, CrcPath::kVpclmul256>)->Name("BM_crossover_vpclmul256")->Apply(ymm_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_chained<clmul, CrcPath::kPclmul>)->Name("BM_crossover_ymm_clmul")->Apply(ymm_crossover_sizes)->MinTime(kMinTime);

// The same for the fused copies against a memcpy followed by the same path's CRC kernel
// (kCopy*Crossover). Throughput, not latency: the memcpy is off the CRC's dependency chain, so
// what the fused copy saves is load and store bandwidth, not latency.
uint32_t memcpy_vpclmul(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  std::memcpy(d, s, n);
  return detail::crc32_vpclmul(c, s, n);
}
uint32_t memcpy_clmul(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  std::memcpy(d, s, n);
  return detail::crc32_clmul(c, s, n);
}
uint32_t memcpy_table(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  std::memcpy(d, s, n);
  return crc32_table(c, s, n);
}
void wide_copy_crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = 64; n <= 512; n += 64) b->Arg(n);
}
void copy_crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = 16; n < 64; n += 16) b->Arg(n);
  wide_copy_crossover_sizes(b);
}
BENCHMARK(BM_copy<copy_vpclmul, CrcPath::kVpclmul>)->Name("BM_crossover_copy_vpclmul")->Apply(wide_copy_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_copy<memcpy_vpclmul, CrcPath::kVpclmul>)->Name("BM_crossover_copy_memcpy_vpclmul")->Apply(wide_copy_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_copy<copy_vpclmul256, CrcPath::kVpclmul256>)->Name("BM_crossover_copy_vpclmul256")->Apply(copy_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_copy<copy_clmul, CrcPath::kPclmul>)->Name("BM_crossover_copy_clmul")->Apply(copy_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_copy<memcpy_clmul, CrcPath::kPclmul>)->Name("BM_crossover_copy_memcpy_clmul")->Apply(copy_crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_copy<memcpy_table>)->Name("BM_crossover_copy_memcpy_table")->Apply(copy_crossover_sizes)->MinTime(kMinTime);

}  // namespace
}  // namespace ndnic::wire
