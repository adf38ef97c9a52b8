// The fault switch over real mbufs: numbered RoCEv2 frames through drop, duplicate, reorder and
// corrupt, checking counts, contents, determinism and that no mbuf leaks.
#include <gtest/gtest.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "nic/fault.h"
#include "ndnic/port.h"
#include "tests/fixtures/packet_builder.h"
#include "ndnic/wire/opcode.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic {
namespace {

constexpr unsigned kPoolSize = 8191;
constexpr uint16_t kBurst = 32;
constexpr uint32_t kPayload = 64;

rte_mempool* g_pool = nullptr;

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    glue::EalDefaults defaults;
    defaults.options = {{"-l", "0"}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"},
                        {"--no-telemetry", ""}};
    defaults.memory_mb = 128;
    char prog[] = "test_fault";
    char* argv[] = {prog, nullptr};
    const glue::EalResult eal = glue::eal_init(1, argv, defaults);
    ASSERT_TRUE(eal.ok) << eal.error;
    g_pool = rte_pktmbuf_pool_create("fault_test", kPoolSize, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     SOCKET_ID_ANY);
    ASSERT_NE(g_pool, nullptr);
  }
  void TearDown() override {
    rte_mempool_free(g_pool);
    glue::eal_cleanup();
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

/// A RoCEv2 SEND ONLY frame with a valid ICRC whose payload starts with `number`.
std::vector<uint8_t> make_frame(uint32_t number, bool ipv6 = false, bool vlan = false) {
  std::mt19937_64 rng(number);
  wire::testing::BuiltPacket b =
      wire::testing::build_packet(wire::kRcSendOnly, kPayload, rng, ipv6, vlan);
  std::memcpy(b.payload.data(), &number, sizeof(number));
  b.pkt.payload = b.payload.data();
  b.frame.resize(wire::frame_length(b.pkt));
  b.frame.resize(wire::encode_frame(b.pkt, b.frame.data(), b.frame.size()));
  return b.frame;
}

/// Offset of the payload in make_frame's frames.
size_t payload_offset(bool ipv6 = false, bool vlan = false) {
  return 14 + (vlan ? 4 : 0) + (ipv6 ? 40 : 20) + 8 + 12;
}

rte_mbuf* to_mbuf(const std::vector<uint8_t>& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  EXPECT_NE(m, nullptr);
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(frame.size())));
  EXPECT_NE(p, nullptr);
  std::memcpy(p, frame.data(), frame.size());
  return m;
}

std::vector<uint8_t> bytes(const rte_mbuf* m) {
  std::vector<uint8_t> v(rte_pktmbuf_pkt_len(m));
  const void* p = rte_pktmbuf_read(m, 0, uint32_t(v.size()), v.data());
  if (p != v.data()) std::memcpy(v.data(), p, v.size());
  return v;
}

uint32_t number_of(const rte_mbuf* m) {
  uint32_t n;
  std::memcpy(&n, rte_pktmbuf_mtod_offset(m, const uint8_t*, payload_offset()), sizeof(n));
  return n;
}

/// Feeds `total` numbered frames in bursts and returns the numbers that came out, in order,
/// freeing every output frame. Empty bursts are fed at the end until nothing is held.
std::vector<uint32_t> run(FaultSwitch& sw, uint32_t total, uint16_t cap,
                          std::vector<unsigned>* out_burst = nullptr) {
  std::vector<uint32_t> out;
  std::vector<rte_mbuf*> pkts(cap);
  uint32_t next = 0;
  unsigned burst = 0;
  for (;; burst++) {
    const auto n = uint16_t(std::min<uint32_t>(kBurst, total - next));
    if (n == 0 && sw.held() == 0) break;
    for (uint16_t i = 0; i < n; i++) pkts[i] = to_mbuf(make_frame(next++));
    const uint16_t got = sw.apply(pkts.data(), n, cap, g_pool);
    EXPECT_LE(got, cap);
    for (uint16_t i = 0; i < got; i++) {
      out.push_back(number_of(pkts[i]));
      if (out_burst != nullptr) out_burst->push_back(burst);
      rte_pktmbuf_free(pkts[i]);
    }
    if (burst > total + 1000) {
      ADD_FAILURE() << "held frames never released";
      break;
    }
  }
  return out;
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override { baseline_ = rte_mempool_in_use_count(g_pool); }
  void TearDown() override { EXPECT_EQ(rte_mempool_in_use_count(g_pool), baseline_); }

 private:
  unsigned baseline_ = 0;
};

TEST_F(FaultTest, OffIsIdentity) {
  FaultSwitch sw(FaultRates{}, 1);
  std::vector<rte_mbuf*> pkts, orig;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < kBurst; i++) {
    frames.push_back(make_frame(i));
    pkts.push_back(to_mbuf(frames.back()));
  }
  orig = pkts;
  EXPECT_EQ(sw.apply(pkts.data(), kBurst, kBurst, g_pool), kBurst);
  EXPECT_EQ(pkts, orig);
  for (uint32_t i = 0; i < kBurst; i++) EXPECT_EQ(bytes(pkts[i]), frames[i]);
  EXPECT_EQ(sw.counters().frames, 0u);  // off means untouched, counters included
  EXPECT_EQ(sw.held(), 0u);
  for (rte_mbuf* m : pkts) rte_pktmbuf_free(m);
}

TEST_F(FaultTest, DropRateAndSurvivors) {
  constexpr uint32_t kFrames = 100000;
  constexpr double kRate = 0.05;
  FaultRates rates;
  rates.drop = kRate;
  FaultSwitch sw(rates, 42);
  const std::vector<uint32_t> out = run(sw, kFrames, kBurst);
  const FaultCounters& c = sw.counters();
  EXPECT_EQ(c.frames, kFrames);
  const double mean = kFrames * kRate;
  const double sigma = std::sqrt(kFrames * kRate * (1 - kRate));
  EXPECT_NEAR(double(c.dropped), mean, 6 * sigma);
  EXPECT_EQ(out.size() + c.dropped, kFrames);
  // Survivors keep their order and nothing is repeated, so the missing numbers are exactly
  // the dropped ones.
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  EXPECT_EQ(std::adjacent_find(out.begin(), out.end()), out.end());
  EXPECT_EQ(c.duplicated + c.reordered + c.corrupted, 0u);
}

TEST_F(FaultTest, DuplicatesAreByteIdenticalCopies) {
  FaultRates rates;
  rates.duplicate = 0.2;
  FaultSwitch sw(rates, 7);
  uint64_t extra = 0;
  for (uint32_t b = 0; b < 200; b++) {
    std::vector<rte_mbuf*> pkts(2 * kBurst);
    std::map<uint32_t, std::vector<uint8_t>> sent;
    for (uint16_t i = 0; i < kBurst; i++) {
      const uint32_t num = b * kBurst + i;
      sent[num] = make_frame(num);
      pkts[i] = to_mbuf(sent[num]);
    }
    const std::vector<rte_mbuf*> originals(pkts.begin(), pkts.begin() + kBurst);
    const uint16_t got = sw.apply(pkts.data(), kBurst, uint16_t(pkts.size()), g_pool);
    ASSERT_GE(got, kBurst);
    // The burst itself comes first, untouched; copies follow.
    for (uint16_t i = 0; i < kBurst; i++) EXPECT_EQ(pkts[i], originals[i]);
    for (uint16_t i = kBurst; i < got; i++) {
      EXPECT_EQ(std::find(originals.begin(), originals.end(), pkts[i]), originals.end());
      EXPECT_EQ(bytes(pkts[i]), sent.at(number_of(pkts[i])));
    }
    extra += got - kBurst;
    for (uint16_t i = 0; i < got; i++) rte_pktmbuf_free(pkts[i]);
  }
  EXPECT_EQ(extra, sw.counters().duplicated);
  EXPECT_GT(extra, 0u);
}

TEST_F(FaultTest, DuplicatesRespectTheCap) {
  FaultRates rates;
  rates.duplicate = 1.0;
  FaultSwitch sw(rates, 7);
  std::vector<rte_mbuf*> pkts(kBurst + 3);
  for (uint16_t i = 0; i < kBurst; i++) pkts[i] = to_mbuf(make_frame(i));
  EXPECT_EQ(sw.apply(pkts.data(), kBurst, uint16_t(kBurst + 3), g_pool), kBurst + 3);
  EXPECT_EQ(sw.counters().duplicated, 3u);
  for (rte_mbuf* m : pkts) rte_pktmbuf_free(m);
}

TEST_F(FaultTest, ReorderReleasesEveryHeldFrame) {
  constexpr uint32_t kFrames = 20000;
  FaultRates rates;
  rates.reorder = 0.1;
  FaultSwitch sw(rates, 9);
  std::vector<unsigned> burst_of;
  std::vector<uint32_t> out = run(sw, kFrames, 2 * kBurst, &burst_of);
  EXPECT_EQ(out.size(), kFrames);
  EXPECT_FALSE(std::is_sorted(out.begin(), out.end()));
  EXPECT_GT(sw.counters().reordered, 0u);
  // With room to spare every frame leaves within kMaxHoldBursts bursts of arriving.
  for (size_t i = 0; i < out.size(); i++) {
    const unsigned arrived = out[i] / kBurst;
    EXPECT_LE(burst_of[i] - arrived, FaultSwitch::kMaxHoldBursts) << out[i];
  }
  // Count frames that left later than their own burst: exactly the reordered ones.
  uint64_t late = 0;
  for (size_t i = 0; i < out.size(); i++) late += burst_of[i] != out[i] / kBurst;
  EXPECT_EQ(late, sw.counters().reordered);
  std::sort(out.begin(), out.end());
  for (uint32_t i = 0; i < kFrames; i++) ASSERT_EQ(out[i], i);
}

TEST_F(FaultTest, HeldFramesWaitForRoom) {
  // Full bursts with cap == burst: held frames only get out once bursts leave room.
  FaultRates rates;
  rates.reorder = 0.3;
  FaultSwitch sw(rates, 11);
  std::vector<uint32_t> out = run(sw, 5000, kBurst);
  EXPECT_EQ(out.size(), 5000u);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(std::adjacent_find(out.begin(), out.end()), out.end());
}

TEST_F(FaultTest, DestructorFreesHeldFrames) {
  FaultRates rates;
  rates.reorder = 1.0;
  {
    FaultSwitch sw(rates, 1);
    std::vector<rte_mbuf*> pkts(kBurst);
    for (uint16_t i = 0; i < kBurst; i++) pkts[i] = to_mbuf(make_frame(i));
    EXPECT_EQ(sw.apply(pkts.data(), kBurst, kBurst, g_pool), 0);
    EXPECT_EQ(sw.held(), kBurst);
  }
  // FaultTest::TearDown checks the pool.
}

struct Variant {
  bool ipv6;
  bool vlan;
};

TEST_F(FaultTest, CorruptionChangesOneCheckedByte) {
  FaultRates rates;
  rates.corrupt = 1.0;
  FaultSwitch sw(rates, 13);
  std::vector<unsigned> hits_per_offset(256);
  unsigned done = 0;
  for (const Variant v : {Variant{false, false}, Variant{false, true}, Variant{true, false},
                          Variant{true, true}}) {
    const size_t l2 = 14 + (v.vlan ? 4 : 0);
    for (uint32_t i = 0; i < 1000; i++) {
      const std::vector<uint8_t> frame = make_frame(i, v.ipv6, v.vlan);
      wire::RocePacket pkt;
      ASSERT_EQ(wire::Reject::kOk, wire::decode_frame(frame.data(), frame.size(), &pkt));
      rte_mbuf* m = to_mbuf(frame);
      ASSERT_EQ(sw.apply(&m, 1, 1, g_pool), 1);
      const std::vector<uint8_t> got = bytes(m);
      ASSERT_EQ(got.size(), frame.size());
      std::vector<size_t> diff;
      for (size_t k = 0; k < got.size(); k++)
        if (got[k] != frame[k]) diff.push_back(k);
      ASSERT_EQ(diff.size(), 1u);
      EXPECT_GE(diff[0], l2);
      hits_per_offset[std::min<size_t>(diff[0], 255)]++;
      EXPECT_NE(wire::Reject::kOk, wire::decode_frame(got.data(), got.size(), &pkt))
          << "flip at " << diff[0] << " ipv6=" << v.ipv6 << " vlan=" << v.vlan;
      rte_pktmbuf_free(m);
      done++;
    }
  }
  EXPECT_EQ(sw.counters().corrupted, done);
  // Spread over the headers and the payload, not stuck on one byte.
  EXPECT_GT(std::count_if(hits_per_offset.begin(), hits_per_offset.end(),
                          [](unsigned h) { return h > 0; }),
            60);
}

TEST_F(FaultTest, CorruptionCopiesASharedFrame) {
  FaultRates rates;
  rates.corrupt = 1.0;
  FaultSwitch sw(rates, 17);
  const std::vector<uint8_t> frame = make_frame(5);
  rte_mbuf* m = to_mbuf(frame);
  rte_mbuf_refcnt_update(m, 1);  // a second holder, e.g. a retransmission queue
  rte_mbuf* burst = m;
  ASSERT_EQ(sw.apply(&burst, 1, 1, g_pool), 1);
  EXPECT_NE(burst, m);
  EXPECT_EQ(bytes(m), frame);  // the other holder still sees the original
  EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
  const std::vector<uint8_t> got = bytes(burst);
  size_t diffs = 0;
  for (size_t k = 0; k < got.size(); k++) diffs += got[k] != frame[k];
  EXPECT_EQ(diffs, 1u);
  rte_pktmbuf_free(burst);
  rte_pktmbuf_free(m);
}

/// Everything a run produced: output numbers and their bytes, and the counters.
struct Outcome {
  std::vector<std::vector<uint8_t>> frames;
  FaultCounters counters;
};

Outcome mixed_run(uint64_t seed) {
  FaultRates rates;
  rates.drop = 0.05;
  rates.duplicate = 0.05;
  rates.reorder = 0.05;
  rates.corrupt = 0.05;
  FaultSwitch sw(rates, seed);
  Outcome o;
  std::vector<rte_mbuf*> pkts(2 * kBurst);
  for (uint32_t b = 0; b < 300 || sw.held() > 0; b++) {
    const uint16_t n = b < 300 ? kBurst : 0;
    for (uint16_t i = 0; i < n; i++) pkts[i] = to_mbuf(make_frame(b * kBurst + i));
    const uint16_t got = sw.apply(pkts.data(), n, uint16_t(pkts.size()), g_pool);
    for (uint16_t i = 0; i < got; i++) {
      o.frames.push_back(bytes(pkts[i]));
      rte_pktmbuf_free(pkts[i]);
    }
  }
  o.counters = sw.counters();
  return o;
}

TEST_F(FaultTest, SameSeedSameOutcome) {
  const Outcome a = mixed_run(1234);
  const Outcome b = mixed_run(1234);
  const Outcome c = mixed_run(4321);
  EXPECT_EQ(a.frames, b.frames);
  EXPECT_EQ(a.counters.dropped, b.counters.dropped);
  EXPECT_EQ(a.counters.duplicated, b.counters.duplicated);
  EXPECT_EQ(a.counters.reordered, b.counters.reordered);
  EXPECT_EQ(a.counters.corrupted, b.counters.corrupted);
  EXPECT_NE(a.frames, c.frames);
  EXPECT_GT(a.counters.dropped, 0u);
  EXPECT_GT(a.counters.duplicated, 0u);
  EXPECT_GT(a.counters.reordered, 0u);
  EXPECT_GT(a.counters.corrupted, 0u);
  EXPECT_EQ(a.frames.size(), 300 * kBurst - a.counters.dropped + a.counters.duplicated);
}

}  // namespace
}  // namespace ndnic::nic
