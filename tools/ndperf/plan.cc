#include "tools/ndperf/plan.h"

#include <algorithm>
#include <cstring>

#include "ndnic/wire/headers.h"

namespace ndnic::ndperf {
namespace {

constexpr uint32_t kPlanMagic = 0x4E445046;   // "NDPF"
constexpr uint32_t kSetupMagic = 0x4E445053;  // "NDPS"
constexpr uint8_t kVersion = 2;
constexpr size_t kPlanLen = 28;

// perftest's defaults (5000 bandwidth iterations, 1000 latency ones), and per-size volumes
// that keep a large message to a fraction of a second on a software NIC on shared cores.
constexpr uint64_t kBwIters = 5000;
constexpr uint64_t kBwVolume = 256u << 20;
constexpr uint64_t kBwMinIters = 16;
constexpr uint64_t kLatIters = 1000;
constexpr uint64_t kLatVolume = 32u << 20;
constexpr uint64_t kLatMinIters = 8;
constexpr uint64_t kCycles = 5000;
// memcpy needs many copies of a small block to fill a measurable time.
constexpr uint64_t kCopyMaxIters = 1000000;
constexpr uint64_t kCopyVolume = 512u << 20;
constexpr uint64_t kCopyMinIters = 64;

constexpr uint32_t kMinReceives = 512;
constexpr uint32_t kMaxReceives = 4096;       ///< ndnic's MaxInboundRequests
constexpr uint32_t kCqEntriesForReceives = 60000;  ///< what one CQ (at most 65535) gives them
constexpr uint32_t kMaxWindows = 64;          ///< sendinv windows per QP (control slots bound it)
constexpr size_t kMinArea = 64u << 10;
constexpr size_t kPage = 4096;

}  // namespace

std::vector<uint32_t> sizes(const Plan& p) {
  std::vector<uint32_t> out;
  for (uint64_t s = p.first_size; s && s <= p.last_size; s *= 2) {
    out.push_back(uint32_t(s));
    if (s < p.last_size && s * 2 > p.last_size) out.push_back(p.last_size);
  }
  return out;
}

std::vector<uint32_t> sizes(Test test, const Options& o) {
  const TestInfo& t = info(test);
  Plan p;
  p.first_size = p.last_size = t.fixed_size ? t.fixed_size : o.size ? o.size : t.default_size;
  if (!t.fixed_size && o.sweep) {
    p.first_size = kMinSweepSize;
    p.last_size = kMaxSize;
  }
  return sizes(p);
}

uint64_t default_iters(Test test, uint32_t size) {
  switch (info(test).kind) {
    case Kind::kBandwidth:
      return test == Test::kAtomicBw ? kBwIters : std::clamp<uint64_t>(kBwVolume / size, kBwMinIters, kBwIters);
    case Kind::kLatency: return std::clamp<uint64_t>(kLatVolume / size, kLatMinIters, kLatIters);
    case Kind::kCycles: return kCycles;
    case Kind::kCopy: return std::clamp<uint64_t>(kCopyVolume / size, kCopyMinIters, kCopyMaxIters);
  }
  return kLatIters;
}

Plan make_plan(Test test, const Options& o, uint8_t index, uint8_t count, uint32_t groups) {
  Plan p;
  p.test = test;
  p.index = index;
  p.count = count;
  p.qps = uint16_t(o.qps);
  p.depth = uint16_t(o.tx_depth);
  p.mtu = uint16_t(o.mtu);
  const bool splits = test == Test::kSendBw || test == Test::kWriteBw || test == Test::kReadBw;
  p.groups = uint8_t(splits ? std::clamp<uint32_t>(groups, 1, p.qps) : 1);
  if (test != Test::kCount) {
    const std::vector<uint32_t> s = sizes(test, o);
    p.first_size = s.front();
    p.last_size = s.back();
  }
  return p;
}

Plan group_plan(const Plan& whole, uint32_t g) {
  Plan p = whole;
  const uint32_t base = whole.qps / whole.groups, extra = whole.qps % whole.groups;
  p.group = uint8_t(g);
  p.qps = uint16_t(base + (g < extra ? 1 : 0));
  p.first_qp = uint16_t(g * base + std::min(g, extra));
  return p;
}

size_t group_slice(const Plan& p) { return (size_t(p.last_size) + kPage - 1) / kPage * kPage; }

std::vector<uint8_t> encode(const Plan& p) {
  std::vector<uint8_t> v(kPlanLen, 0);
  wire::store_be32(&v[0], kPlanMagic);
  v[4] = kVersion;
  v[5] = uint8_t(p.test);
  v[6] = p.index;
  v[7] = p.count;
  wire::store_be16(&v[8], p.qp);
  wire::store_be16(&v[10], p.qps);
  wire::store_be16(&v[12], p.depth);
  wire::store_be16(&v[14], p.mtu);
  wire::store_be32(&v[16], p.first_size);
  wire::store_be32(&v[20], p.last_size);
  wire::store_be16(&v[24], p.first_qp);
  v[26] = p.group;
  v[27] = p.groups;
  return v;
}

std::optional<Plan> decode_plan(const uint8_t* d, size_t len) {
  // The private data may come padded to the REQ's full length: read the prefix only.
  if (len < kPlanLen || wire::load_be32(d) != kPlanMagic || d[4] != kVersion || d[5] > uint8_t(Test::kCount))
    return std::nullopt;
  Plan p;
  p.test = Test(d[5]);
  p.index = d[6];
  p.count = d[7];
  p.qp = wire::load_be16(d + 8);
  p.qps = wire::load_be16(d + 10);
  p.depth = wire::load_be16(d + 12);
  p.mtu = wire::load_be16(d + 14);
  p.first_size = wire::load_be32(d + 16);
  p.last_size = wire::load_be32(d + 20);
  p.first_qp = wire::load_be16(d + 24);
  p.group = d[26];
  p.groups = d[27];
  if (p.test == Test::kCount) return p;
  if (p.qps == 0 || p.qps > kMaxQps || p.qp >= p.qps || p.depth == 0 || p.depth > kMaxTxDepth ||
      p.groups == 0 || p.group >= p.groups || p.first_qp + p.qps > kMaxQps ||
      p.first_size == 0 || p.first_size > p.last_size || p.last_size > kMaxSize)
    return std::nullopt;
  return p;
}

uint32_t test_qps(const Plan& p) {
  const TestInfo& t = info(p.test);
  return t.rdma && t.kind != Kind::kLatency ? p.qps : 1;
}

uint32_t send_bw_receives(const Plan& p) {
  uint32_t r = std::clamp<uint32_t>(8u * p.depth, kMinReceives, kMaxReceives);
  r = std::min<uint32_t>(r, kCqEntriesForReceives / test_qps(p));
  return std::max<uint32_t>(r & ~1u, 4);  // even: credits come back in halves
}

uint32_t sendinv_windows(const Plan& p) { return std::min<uint32_t>(p.depth, kMaxWindows); }

uint32_t signal_every(uint32_t depth) { return std::max<uint32_t>(1, depth / 8); }

Layout layout_for(const Options& o) {
  size_t area = kMinArea;
  for (Test t : o.tests) {
    const Plan p = make_plan(t, o, 0, 1, o.threads);
    area = std::max<size_t>(area, p.groups * group_slice(p));
    if (t == Test::kAtomicBw) area = std::max<size_t>(area, size_t(test_qps(p)) * p.depth * sizeof(uint64_t));
    if (t == Test::kSendInv) area = std::max<size_t>(area, size_t(test_qps(p)) * sendinv_windows(p) * p.last_size);
  }
  // A server learns the tests only from its clients: it gets room for anything they can ask.
  if (o.role == Role::kServer)
    area = std::max<size_t>(size_t(std::max(1u, o.threads)) * kMaxSize, size_t(kMaxQps) * kMaxTxDepth * sizeof(uint64_t));
  Layout l;
  l.area = (area + kPage - 1) / kPage * kPage;
  return l;
}

void encode(const Setup& s, uint8_t* out) {
  std::memset(out, 0, kSetupLen);
  wire::store_be32(out, kSetupMagic);
  std::memcpy(out + 4, &s.window, sizeof s.window);  // already in network order
  wire::store_be32(out + 24, s.receives);
}

std::optional<Setup> decode_setup(const uint8_t* d, size_t len) {
  if (len < kSetupLen || wire::load_be32(d) != kSetupMagic) return std::nullopt;
  Setup s;
  std::memcpy(&s.window, d + 4, sizeof s.window);
  s.receives = wire::load_be32(d + 24);
  return s;
}

}  // namespace ndnic::ndperf
