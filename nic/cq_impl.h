// Completion queue internals: a ring of Completion entries (cq_ring.h: lcores produce, the
// application consumes), and the signal of an armed CQ: a futex word for waiters that watch
// the CQ themselves, an eventfd for everyone else.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>

#include "ndnic/nic.h"
#include "nic/grace_period.h"

namespace ndnic::nic {

class CqRing;

enum class CqArm : uint8_t { kNone, kAny, kSolicited, kErrors };

struct Cq::Impl {
  Cq handle;
  /// Where producers enqueue. Resize publishes a new ring here; the one it replaces stays in
  /// `old_rings` until drained and every lcore has passed a quiescent state (no producer can
  /// still hold it), so completions keep their order and none is lost.
  std::atomic<CqRing*> ring{nullptr};
  /// Consumer-only: rings replaced by Resize, oldest first, each with the QSBR token taken
  /// when it was replaced; drained before `ring`.
  std::deque<std::pair<CqRing*, uint64_t>> old_rings;
  GracePeriod grace;                     ///< the device's shards
  uint32_t capacity = 0;
  int efd = -1;
  std::atomic<CqArm> armed{CqArm::kNone};
  std::atomic<uint64_t> overflows{0};   ///< completions the full ring could not take
  /// Waiters that look at `armed` themselves (driving the engine, or watching while worker
  /// lcores drive it): while there is one, a signal skips the eventfd (a syscall, and a
  /// wake-up of the notifier thread per result).
  std::atomic<uint32_t> watchers{0};
  /// Watchers asleep on `signals` (a futex): a signal wakes them, with no eventfd and no
  /// notifier thread in between.
  std::atomic<uint32_t> sleepers{0};
  std::atomic<uint32_t> signals{0};     ///< signals so far (and wake-ups): the sleepers' futex word
  std::atomic<uint64_t> fd_signals{0};  ///< signals that wrote the eventfd

  void signal();
  /// Moves `signals` on and wakes its sleepers.
  void wake_sleepers();

  /// Producer side (lcores). A full ring is a CQ overrun (IBTA: a CQ error): the completion
  /// cannot be kept, so it is counted, the CQ says so from then on (Cq::overrun) and wakes its
  /// waiter, and the caller takes the QP to ERROR (as rxe does), so the loss is never silent.
  /// False on overrun.
  bool push(const Completion& c);
  /// The same for n completions in order, with one enqueue and one fence; returns how many the
  /// ring took (a prefix), the rest are overruns (counted, and the waiter woken). push() is
  /// this with n = 1.
  unsigned push_batch(const Completion* c, unsigned n);
};

bool cq_create(Cq::Impl* cq, uint32_t entries, GracePeriod grace);
void cq_destroy(Cq::Impl* cq);

}  // namespace ndnic::nic
