// The send and receive queues' ring (nic/spsc_ring.h): what the producer's out-of-date view of
// the consumer may and may not do, laps, batches built in place, entries read in place, and a
// producer thread against a consumer thread, every entry arriving whole, once and in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "nic/spsc_ring.h"
#include "tests/fixtures/run_anywhere.h"

namespace ndnic::nic::testing {
namespace {

/// An entry wider than two words, so a torn or stale copy shows.
struct Entry {
  uint64_t n;
  uint64_t check;  ///< ~n
  uint32_t pad[10];
};

Entry numbered(uint64_t n) {
  Entry e{};
  e.n = n;
  e.check = ~n;
  for (uint32_t i = 0; i < 10; i++) e.pad[i] = uint32_t(n * 31 + i);
  return e;
}

bool is_numbered(const Entry& e, uint64_t n) {
  if (e.n != n || e.check != ~n) return false;
  for (uint32_t i = 0; i < 10; i++)
    if (e.pad[i] != uint32_t(n * 31 + i)) return false;
  return true;
}

bool push(SpscRing<Entry>& r, uint64_t n) {
  if (r.free_slots(1) < 1) return false;
  *r.slot(0) = numbered(n);
  r.publish(1);
  return true;
}

TEST(SpscRing, FillsToCapacityAndNoFurther) {
  SpscRing<Entry> r;
  r.allocate(8);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.free_slots(8), 8u);
  for (uint64_t n = 0; n < 8; n++) ASSERT_TRUE(push(r, n));
  EXPECT_FALSE(push(r, 8));
  EXPECT_EQ(r.free_slots(1), 0u);
  uint64_t next = 0;
  EXPECT_EQ(r.take_burst(3, [&](const Entry& e) { EXPECT_TRUE(is_numbered(e, next++)); }), 3u);
  EXPECT_EQ(r.free_slots(3), 3u);  // asked for 3: the consumer's progress is read
  EXPECT_EQ(r.take_burst(100, [&](const Entry& e) { EXPECT_TRUE(is_numbered(e, next++)); }), 5u);
  EXPECT_EQ(next, 8u);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.take_burst(1, [](const Entry&) { ADD_FAILURE() << "an entry from an empty ring"; }), 0u);
}

// The producer counts free slots from the consumer's position as it last read it: it may
// under-count (never over-count), and it reads again when asked for more than it knows of.
TEST(SpscRing, TheProducersViewIsStaleOnlyDownwards) {
  SpscRing<Entry> r;
  r.allocate(4);
  for (uint64_t n = 0; n < 4; n++) ASSERT_TRUE(push(r, n));
  EXPECT_EQ(r.take_burst(2, [](const Entry&) {}), 2u);
  EXPECT_EQ(r.free_slots(0), 0u);  // asked for nothing: the old view, which says full
  EXPECT_EQ(r.free_slots(1), 2u);  // short of one: the consumer's position is read again
  EXPECT_EQ(r.free_slots(0), 2u);  // and kept
  EXPECT_EQ(r.take_burst(2, [](const Entry&) {}), 2u);
  EXPECT_EQ(r.free_slots(2), 2u);  // two known: enough, not read again
  EXPECT_EQ(r.free_slots(3), 4u);
}

// Read in place (the receive queue's way): the oldest entry keeps its slot until it is
// released, so a producer that has filled the others cannot build over it; ready() counts
// every entry published and not released, and the consumer's count of them reads the
// producer's position again only once it is used up.
TEST(SpscRing, AnEntryReadInPlaceKeepsItsSlotUntilReleased) {
  SpscRing<Entry> r;
  r.allocate(4);
  uint32_t known = 0;
  EXPECT_EQ(r.ready(), 0u);
  EXPECT_EQ(r.next_in_place(known), nullptr);
  for (uint64_t n = 0; n < 4; n++) ASSERT_TRUE(push(r, n));
  ASSERT_EQ(r.ready(), 4u);
  const Entry* first = r.next_in_place(known);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(known, 4u);
  EXPECT_TRUE(is_numbered(*first, 0));
  EXPECT_EQ(r.next_in_place(known), first);  // not released: still the oldest
  EXPECT_FALSE(push(r, 4));  // every slot is taken, the one being read among them
  EXPECT_TRUE(is_numbered(*first, 0));
  r.release_in_place(known);
  EXPECT_EQ(r.ready(), 3u);
  EXPECT_EQ(known, 3u);
  ASSERT_NE(r.next_in_place(known), nullptr);
  EXPECT_TRUE(is_numbered(*r.next_in_place(known), 1));
  ASSERT_TRUE(push(r, 4));   // the released slot, and only it
  EXPECT_FALSE(push(r, 5));
  for (uint64_t n = 1; n <= 4; n++) {  // the fifth is past what `known` counted: read again
    const Entry* e = r.next_in_place(known);
    ASSERT_NE(e, nullptr) << n;
    EXPECT_TRUE(is_numbered(*e, n));
    r.release_in_place(known);
  }
  EXPECT_EQ(known, 0u);
  EXPECT_EQ(r.next_in_place(known), nullptr);
  EXPECT_EQ(r.ready(), 0u);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.free_slots(4), 4u);
}

// A batch builds in place past what is published; only what it publishes is seen, and a slot
// it built but did not publish is built over by the next batch.
TEST(SpscRing, UnpublishedSlotsAreNeitherSeenNorKept) {
  SpscRing<Entry> r;
  r.allocate(4);
  uint64_t next = 0;
  for (int lap = 0; lap < 5; lap++) {
    ASSERT_GE(r.free_slots(3), 3u);
    for (uint32_t i = 0; i < 3; i++) *r.slot(i) = numbered(next + i);
    *r.slot(2) = numbered(999);  // the third is built, then dropped
    r.publish(2);
    EXPECT_EQ(r.take_burst(4, [&](const Entry& e) { EXPECT_TRUE(is_numbered(e, next++)); }), 2u)
        << "lap " << lap;
    EXPECT_TRUE(r.empty());
  }
}

// Many laps of a small ring between two threads: every entry once, whole, in order, through
// the producer's stale views and the consumer's bursts.
TEST(SpscRing, AProducerThreadAndAConsumerThread) {
  constexpr uint64_t kCount = 2'000'000;
  SpscRing<Entry> r;
  r.allocate(16);
  std::thread producer([&] {
    ndnic::testing::run_anywhere();
    uint64_t n = 0;
    while (n < kCount) {
      const uint32_t free = r.free_slots(1);
      const uint32_t k = uint32_t(std::min<uint64_t>({free, kCount - n, 1 + n % 5}));
      for (uint32_t i = 0; i < k; i++) *r.slot(i) = numbered(n + i);
      r.publish(k);
      n += k;
    }
  });
  ndnic::testing::run_anywhere();
  uint64_t next = 0, bad = 0;
  while (next < kCount)
    r.take_burst(1 + uint32_t(next % 7), [&](const Entry& e) { bad += !is_numbered(e, next++); });
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_TRUE(r.empty());
}

}  // namespace
}  // namespace ndnic::nic::testing
