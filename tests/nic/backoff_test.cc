// The polled-wait policy (nic/backoff.h) against the bug it fixes: two polling threads on one
// processor, each waiting for the other (ndperf's embedded client and server, a worker beside
// an application). A wait that only spins keeps the processor until the scheduler's tick takes
// it away, so each hand-off cost ~4 ms and hundreds of thousands of empty looks. With the
// policy a waiter yields after Backoff::kAppLooks empty looks and its peer runs then: the count
// of looks per wait stays within a few yields' worth. A count, not a time.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "ndnic/backoff.h"

namespace ndnic::nic {
namespace {

constexpr uint64_t kRounds = 200;
/// Yields a wait may take before its peer has run: the scheduler may pick another task at a
/// yield now and then; a spinning wait took ~1000 times this many looks.
constexpr uint64_t kYieldsAllowed = 16;

struct PingPong {
  std::atomic<uint64_t> turn{0};  ///< even: A's turn, odd: B's
  std::atomic<int> ready{0};      ///< sides on their processor (a thread still starting is no peer)
  uint64_t max_looks[2] = {0, 0};
  uint64_t yields[2] = {0, 0};
};

/// Plays one side: waits for its turn (counting looks), then passes it on.
void side(PingPong* pp, int me, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  pp->ready.fetch_add(1);
  while (pp->ready.load() < 2) sched_yield();
  Backoff backoff;
  for (uint64_t r = 0; r < kRounds; r++) {
    const uint64_t mine = 2 * r + uint64_t(me);
    uint64_t looks = 0;
    while (pp->turn.load(std::memory_order_acquire) != mine) {
      looks++;
      backoff.idle();
    }
    backoff.busy();
    pp->max_looks[me] = std::max(pp->max_looks[me], looks);
    pp->turn.store(mine + 1, std::memory_order_release);
  }
  pp->yields[me] = backoff.yields();
}

int a_cpu_we_may_use() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) return c;
  return 0;
}

TEST(Backoff, TwoWaitersOnOneProcessorHandItOverWithinAFewYields) {
  PingPong pp;
  const int cpu = a_cpu_we_may_use();
  std::thread a(side, &pp, 0, cpu), b(side, &pp, 1, cpu);
  a.join();
  b.join();
  ASSERT_EQ(pp.turn.load(), 2 * kRounds);
  for (int me = 0; me < 2; me++) {
    EXPECT_LE(pp.max_looks[me], kYieldsAllowed * Backoff::kAppLooks) << "side " << me;
    EXPECT_GT(pp.yields[me], 0u) << "side " << me << " never had to give the processor up";
  }
}

TEST(Backoff, YieldsOncePerLooksEmptyLooksAndStartsAgainOnWork) {
  Backoff b(4);
  for (int i = 0; i < 3; i++) b.idle();
  EXPECT_EQ(b.yields(), 0u);
  b.idle();
  EXPECT_EQ(b.yields(), 1u);
  for (int i = 0; i < 3; i++) b.idle();
  b.busy();  // work found: the next yield is `looks` empty looks away again
  for (int i = 0; i < 3; i++) b.idle();
  EXPECT_EQ(b.yields(), 1u);
  b.idle();
  EXPECT_EQ(b.yields(), 2u);
}

}  // namespace
}  // namespace ndnic::nic
