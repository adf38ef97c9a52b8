// A CQ's ring: the lcores that complete work push, the application takes. Each entry says
// itself that it is there, as a hardware CQ's owner bit does, so that a consumer on another
// core finds a result by reading the entry alone, one line moved from the producer's core.
// rte_ring publishes through a producer tail on a line of its own: a taker reads that line,
// then the entry's, one miss after the other, and writes its consumer tail on a line every
// producer reads before each enqueue (BM_nd_get_results in perf/bench_rings).
//
// The mark is the entry's lap parity, in the top byte of its qpn (a QPN has 24 bits): written
// last, with release, by the producer; read first, with acquire, by the consumer. Producers
// reserve their entries with one compare-and-swap on the head (the lcores of a device share a
// CQ) and read the consumer's position only when the free space they last saw runs out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ndnic/verbs.h"

namespace ndnic::nic {

class CqRing {
 public:
  /// A ring that holds `entries` completions (at least 1), or nullptr where memory ran out.
  static CqRing* create(uint32_t entries);
  static void destroy(CqRing* r);

  /// Completions it can hold at once.
  uint32_t capacity() const { return usable_; }
  /// capacity() of the ring create(entries) makes.
  static uint32_t capacity_for(uint32_t entries);

  /// Producers (any thread): pushes the first n of `c`, or as many as fit, in order, and
  /// returns how many.
  unsigned push(const Completion* c, unsigned n);

  /// The one consumer: takes up to n of the oldest, in order, into `out`; returns how many.
  unsigned pop(Completion* out, unsigned n);

  /// Completions published and not yet taken: one reserved but not yet written is not counted,
  /// so an armed CQ is never told of a result it cannot take yet (any thread; exact when no
  /// one pushes or pops).
  uint32_t queued() const;

 private:
  static constexpr uint32_t kMarkShift = 24;  ///< qpn bits below it are the QPN's
  static constexpr uint32_t kQpnMask = (1u << kMarkShift) - 1;

  CqRing() = default;
  /// The mark the entry at position p carries once pushed: lap 0 writes 1 over the zeroed ring.
  uint32_t mark(uint64_t p) const { return uint32_t(((p >> shift_) & 1) ^ 1); }
  bool published(uint64_t p) const {
    return __atomic_load_n(&slots_[p & mask_].qpn, __ATOMIC_ACQUIRE) >> kMarkShift == mark(p);
  }

  alignas(64) std::atomic<uint64_t> head_{0};  ///< next position a producer reserves
  std::atomic<uint64_t> cons_seen_{0};         ///< the consumer's position as a producer last read it
  alignas(64) std::atomic<uint64_t> cons_{0};  ///< the consumer's position, published for producers
  uint64_t next_ = 0;                          ///< the consumer's own copy of it
  alignas(64) uint64_t mask_ = 0;              ///< slots - 1
  uint32_t shift_ = 0;                         ///< log2(slots): a position's lap
  uint32_t usable_ = 0;                        ///< slots - 1, as rte_ring holds
  Completion* slots_ = nullptr;                ///< after this object, on its own lines
};

}  // namespace ndnic::nic
