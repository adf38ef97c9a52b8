// The CQ's ring (nic/cq_ring.h): order, fullness and laps with one thread, and several
// producer threads pushing against one consumer, each producer's completions arriving whole,
// once and in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "nic/cq_ring.h"
#include "tests/fixtures/run_anywhere.h"

namespace ndnic::nic::testing {
namespace {

struct RingDeleter {
  void operator()(CqRing* r) const { CqRing::destroy(r); }
};
using RingPtr = std::unique_ptr<CqRing, RingDeleter>;

Completion numbered(uint64_t n, uint32_t qpn) {
  Completion c{};
  c.wr_id = n;
  c.byte_len = uint32_t(n * 3);
  c.imm_or_inv = uint32_t(~n);
  c.qpn = qpn;
  c.status = n % 7 == 0 ? WcStatus::kLocalProtection : WcStatus::kSuccess;
  c.opcode = WcOpcode::kRecv;
  c.flags = uint8_t(n);
  c.solicited = uint8_t(n & 1);
  c.src_ipv4 = uint32_t(n >> 1);
  c.src_qpn = uint32_t(n + 5);
  return c;
}

void expect_numbered(const Completion& c, uint64_t n, uint32_t qpn) {
  const Completion want = numbered(n, qpn);
  EXPECT_EQ(c.wr_id, want.wr_id);
  EXPECT_EQ(c.byte_len, want.byte_len);
  EXPECT_EQ(c.imm_or_inv, want.imm_or_inv);
  EXPECT_EQ(c.qpn, qpn);
  EXPECT_EQ(c.status, want.status);
  EXPECT_EQ(c.opcode, want.opcode);
  EXPECT_EQ(c.flags, want.flags);
  EXPECT_EQ(c.solicited, want.solicited);
  EXPECT_EQ(c.src_ipv4, want.src_ipv4);
  EXPECT_EQ(c.src_qpn, want.src_qpn);
}

TEST(CqRing, HoldsWhatRteRingHeldAndRefusesBadSizes) {
  EXPECT_EQ(CqRing::capacity_for(1), 1u);
  EXPECT_EQ(CqRing::capacity_for(1024), 2047u);
  EXPECT_EQ(CqRing::capacity_for(1023), 1023u);
  EXPECT_EQ(RingPtr(CqRing::create(0)), nullptr);
  RingPtr r(CqRing::create(100));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->capacity(), 127u);
}

TEST(CqRing, KeepsOrderAndEveryFieldOverManyLaps) {
  RingPtr r(CqRing::create(7));  // 7 usable slots of 8: every few pushes start a new lap
  ASSERT_NE(r, nullptr);
  constexpr uint32_t kQpn = 0xFFFFFF;  // every QPN bit set, next to the ring's mark
  uint64_t pushed = 0, popped = 0;
  Completion out[8];
  for (unsigned round = 0; round < 1000; round++) {
    const unsigned n = 1 + round % 5;
    Completion in[5];
    for (unsigned i = 0; i < n; i++) in[i] = numbered(pushed + i, kQpn);
    const unsigned k = r->push(in, n);
    ASSERT_LE(pushed + k - popped, r->capacity());
    pushed += k;
    EXPECT_EQ(r->queued(), pushed - popped);
    const unsigned got = r->pop(out, 1 + round % 3);
    for (unsigned i = 0; i < got; i++) expect_numbered(out[i], popped + i, kQpn);
    popped += got;
  }
  for (unsigned got; (got = r->pop(out, 8)) != 0; popped += got)
    for (unsigned i = 0; i < got; i++) expect_numbered(out[i], popped + i, kQpn);
  EXPECT_EQ(popped, pushed);
  EXPECT_GT(pushed, 1000u);
  EXPECT_EQ(r->queued(), 0u);
  EXPECT_EQ(r->pop(out, 8), 0u);
}

TEST(CqRing, TakesAsManyAsFitAndNoMore) {
  RingPtr r(CqRing::create(4));  // 7 usable
  ASSERT_NE(r, nullptr);
  std::vector<Completion> in(10);
  for (unsigned i = 0; i < in.size(); i++) in[i] = numbered(i, 1);
  EXPECT_EQ(r->push(in.data(), 10), 7u);
  EXPECT_EQ(r->push(in.data(), 1), 0u);  // full: nothing taken, nothing overwritten
  Completion out[8];
  ASSERT_EQ(r->pop(out, 2), 2u);
  expect_numbered(out[0], 0, 1);
  expect_numbered(out[1], 1, 1);
  EXPECT_EQ(r->push(in.data() + 7, 3), 2u);  // the two slots the pop freed
  ASSERT_EQ(r->pop(out, 8), 7u);
  for (unsigned i = 0; i < 7; i++) expect_numbered(out[i], 2 + i, 1);
}

// Producers on other threads (a device's lcores completing into one CQ) against one consumer:
// in a ring small enough to be full most of the time, and in one large enough that the
// producers mostly race each other for the head.
void push_from_threads(uint32_t entries, unsigned producers, uint64_t each) {
  RingPtr r(CqRing::create(entries));
  ASSERT_NE(r, nullptr);
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < producers; p++) {
    threads.emplace_back([&, p] {
      ndnic::testing::run_anywhere();
      while (!go.load()) std::this_thread::yield();
      uint64_t next = 0;
      Completion in[4];
      while (next < each && !stop.load(std::memory_order_relaxed)) {
        const unsigned n = unsigned(std::min<uint64_t>(1 + next % 4, each - next));
        for (unsigned i = 0; i < n; i++) in[i] = numbered(uint64_t(p) << 32 | (next + i), 0xABC000 + p);
        const unsigned k = r->push(in, n);  // what did not fit goes again
        if (k == 0) std::this_thread::yield();  // full: the threads may share two processors
        next += k;
      }
    });
  }
  go.store(true);
  // Everything is drained before a verdict (a producer left with a full ring never ends), or
  // until nothing has come for a while (a lost completion).
  std::vector<uint64_t> seen(producers, 0);
  uint64_t total = 0, wrong = 0;
  Completion out[16];
  auto quiet_since = std::chrono::steady_clock::now();
  while (total < producers * each) {
    const unsigned got = r->pop(out, 1 + total % 16);
    if (got == 0) {
      if (std::chrono::steady_clock::now() - quiet_since > std::chrono::seconds(10)) break;
      std::this_thread::yield();
      continue;
    }
    quiet_since = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < got; i++) {
      const unsigned p = unsigned(out[i].wr_id >> 32);
      const uint64_t n = out[i].wr_id & 0xffffffff;
      const Completion want = numbered(out[i].wr_id, 0xABC000 + p);
      if (p >= producers || n != seen[p] || std::memcmp(&out[i], &want, sizeof want) != 0) {
        wrong++;
        continue;
      }
      seen[p] = n + 1;
    }
    total += got;
  }
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0u) << "completions out of order, from nowhere or changed";
  for (unsigned p = 0; p < producers; p++) EXPECT_EQ(seen[p], each) << "producer " << p;
  EXPECT_EQ(r->pop(out, 16), 0u);
}

TEST(CqRing, ProducersOnOtherThreadsLoseNothingAndKeepTheirOrder) {
  push_from_threads(31, 3, 100000);
  push_from_threads(4095, 2, 1000000);
}

// Two producers at once with nothing taken meanwhile: on two processors they race for the head
// all the time (with a consumer running too, one of the three is mostly off its processor).
TEST(CqRing, ProducersRacingForTheHeadEachGetTheirOwnEntries) {
  constexpr uint64_t kEach = 250000;
  RingPtr r(CqRing::create(2 * kEach));
  ASSERT_NE(r, nullptr);
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < 2; p++) {
    threads.emplace_back([&, p] {
      ndnic::testing::run_anywhere();
      ready++;
      while (ready.load() < 2) {
      }
      for (uint64_t next = 0; next < kEach; next++) {
        const Completion c = numbered(uint64_t(p) << 32 | next, 0xABC000 + p);
        if (r->push(&c, 1) != 1) return;  // cannot happen: the ring holds both producers' all
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(r->queued(), 2 * kEach);
  uint64_t seen[2] = {0, 0}, wrong = 0;
  Completion out[64];
  for (unsigned got; (got = r->pop(out, 64)) != 0;) {
    for (unsigned i = 0; i < got; i++) {
      const unsigned p = unsigned(out[i].wr_id >> 32);
      const Completion want = numbered(out[i].wr_id, 0xABC000 + p);
      if (p >= 2 || (out[i].wr_id & 0xffffffff) != seen[p] || std::memcmp(&out[i], &want, sizeof want) != 0) {
        wrong++;
        continue;
      }
      seen[p]++;
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(seen[0], kEach);
  EXPECT_EQ(seen[1], kEach);
}

}  // namespace
}  // namespace ndnic::nic::testing
