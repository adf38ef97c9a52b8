// Grace periods on a device its application threads drive (nic/grace_period.h): its shards
// stay online, so a grace period waits for the iteration under way and for nothing else.
#include <rte_rcu_qsbr.h>

#include "nic/engine.h"
#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

using GracePeriodTest = TwoNodes;

TEST_F(GracePeriodTest, WaitsForTheIterationUnderWayAndNothingElse) {
  DeviceImpl& d = *b->dev.impl();
  ASSERT_FALSE(d.worker_lcores);
  ASSERT_TRUE(d.grace.active());
  // No thread is driving: the grace period passes at once (the waiter reports for the shards).
  EXPECT_TRUE(d.grace.passed(d.grace.start()));

  // A thread is inside an iteration (it holds the driving flag; it may have read a key just
  // before the writer cleared it): the grace period has not passed, and cannot be helped.
  ASSERT_TRUE(d.try_drive());
  const uint64_t token = d.grace.start();
  EXPECT_FALSE(d.grace.passed(token));
  // Its iteration ends (Shard::poll_once reports each shard quiescent): passed, with the flag
  // still held, so no help did it.
  for (auto& s : d.shards) s->poll_once();
  EXPECT_TRUE(d.grace.passed(token));
  d.stop_driving();

  // Deregistration waits for such a grace period; with no thread driving, it returns.
  std::vector<uint8_t> area(4096);
  MrKeys k;
  ASSERT_TRUE(b->dev.register_mr(b->pd, area.data(), area.size(), kAccessLocalWrite, &k));
  EXPECT_TRUE(b->dev.deregister_mr(k.lkey));
}

}  // namespace
}  // namespace ndnic::nic::testing
