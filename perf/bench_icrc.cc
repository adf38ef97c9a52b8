// CRC-32 throughput side by side: the RoCEv2 ICRC of a whole frame, crc32() (dispatching),
// the slicing-by-8 table, zlib, and memcpy as the memory-bandwidth yardstick. Every benchmark
// counts the same N bytes, so the GB/s columns compare directly; for the ICRC N is the payload
// (the ICRC also covers the 48 masked header bytes, which is exactly its per-packet overhead).
#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "wire/crc32_clmul.h"
#include "wire/icrc.h"
#include "wire/packet.h"

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
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

uint32_t zlib(uint32_t c, const uint8_t* p, size_t n) { return uint32_t(::crc32(c, p, uInt(n))); }

/// Every CRC here must agree with zlib's before it is timed.
template <uint32_t (*F)(uint32_t, const uint8_t*, size_t)>
bool agrees_with_zlib(benchmark::State& state, const std::vector<uint8_t>& buf) {
  if (F(0, buf.data(), buf.size()) == zlib(0, buf.data(), buf.size())) return true;
  state.SkipWithError("CRC differs from zlib's");
  return false;
}

template <uint32_t (*F)(uint32_t, const uint8_t*, size_t)>
void BM_crc(benchmark::State& state) {
  const auto buf = random_bytes(size_t(state.range(0)));
  if (!agrees_with_zlib<F>(state, buf)) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(F(0, buf.data(), buf.size()));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

uint32_t dispatching(uint32_t c, const uint8_t* p, size_t n) { return crc32(c, p, n); }
uint32_t table(uint32_t c, const uint8_t* p, size_t n) { return crc32_table(c, p, n); }
uint32_t clmul(uint32_t c, const uint8_t* p, size_t n) { return detail::crc32_clmul(c, p, n); }

void BM_memcpy(benchmark::State& state) {
  const auto src = random_bytes(size_t(state.range(0)));
  std::vector<uint8_t> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  if (dst != src) state.SkipWithError("memcpy did not copy");
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// Payload 0 is a header-only packet (ACK, READ request, atomics): the ICRC's fixed cost.
BENCHMARK(BM_icrc)->Arg(0)->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);
BENCHMARK(BM_crc<dispatching>)->Name("BM_crc32")->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);
BENCHMARK(BM_crc<table>)->Name("BM_crc32_table")->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);
BENCHMARK(BM_crc<zlib>)->Name("BM_zlib_crc32")->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);
BENCHMARK(BM_memcpy)->RangeMultiplier(2)->Range(kMinSize, kMaxSize)->MinTime(kMinTime);

// Where the fold starts to beat the table, which is what kClmulCrossover in wire/crc32.cc is
// set from. Each call is seeded with the previous result, so this measures latency, as in the
// ICRC where the header CRC seeds the payload CRC, not the overlapped throughput above.
template <uint32_t (*F)(uint32_t, const uint8_t*, size_t)>
void BM_chained(benchmark::State& state) {
  const auto buf = random_bytes(size_t(state.range(0)));
  if (!agrees_with_zlib<F>(state, buf)) return;
  uint32_t c = 0;
  for (auto _ : state) c = F(c, buf.data(), buf.size());
  benchmark::DoNotOptimize(c);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
void crossover_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = int64_t(detail::kClmulMinLen); n <= 128; n += 8) b->Arg(n);
}
BENCHMARK(BM_chained<clmul>)->Name("BM_crossover_clmul")->Apply(crossover_sizes)->MinTime(kMinTime);
BENCHMARK(BM_chained<table>)->Name("BM_crossover_table")->Apply(crossover_sizes)->MinTime(kMinTime);

}  // namespace
}  // namespace ndnic::wire
