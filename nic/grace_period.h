// Grace periods over the device's QSBR state (DPDK's rte_rcu): a writer that unpublished
// something (a region's key, a CQ's replaced ring) reuses or frees it only once every shard
// has passed a quiescent state since.
//
// Every shard is a reader that stays online and reports a quiescent state at the end of each
// iteration (Shard::poll_once), which costs a store and no fence. A worker lcore iterates by
// itself; a shard that application threads drive (run to completion) iterates only while one
// does, so a waiter helps: `quiesce_idle` reports for the shards no thread is driving.
// (Going online and offline around each driven iteration instead cost a locked instruction
// per progress() call: half of Device::progress in a profile of ndperf send_lat.)
#pragma once

#include <cstdint>

struct rte_rcu_qsbr;

namespace ndnic::nic {

class GracePeriod {
 public:
  GracePeriod() = default;
  /// Over `qsbr` (null: no readers to wait for). `quiesce_idle(ctx)`, where given, reports
  /// the readers that no thread runs at the moment.
  GracePeriod(rte_rcu_qsbr* qsbr, void (*quiesce_idle)(void*) = nullptr, void* ctx = nullptr)
      : qsbr_(qsbr), quiesce_idle_(quiesce_idle), ctx_(ctx) {}

  /// Whether there are readers at all.
  bool active() const { return qsbr_ != nullptr; }
  /// A token that has passed once every reader has been quiescent since this call.
  uint64_t start() const;
  /// Whether the grace period `token` began has passed (helping idle readers first). Never blocks.
  bool passed(uint64_t token) const;
  /// Returns once a grace period begun now has passed.
  void wait() const;

 private:
  rte_rcu_qsbr* qsbr_ = nullptr;
  void (*quiesce_idle_)(void*) = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace ndnic::nic
