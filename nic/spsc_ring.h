// A QP's send and receive queues: work requests from the one thread that posts to the QP to the
// one lcore that owns it, built in place in the ring's slots.
//
// Why not rte_ring, which it replaces: an rte_ring enqueue reads the consumer's tail to count
// the free slots, every time. The lcore writes that line each time it takes requests, so with
// the application on another core nearly every post missed on it (a cross-core transfer, ~100
// ns to over 300 ns on the 2-CPU VM depending on where its CPUs sit). Here the producer keeps the
// consumer's position as it last read it and reads it again only when that view has too few
// free slots: a post touches its own line and the slots it fills. The consumer reads the
// producer's position on every look, as it must: that line is the doorbell.
//
// The consumer takes entries two ways: the send queue's copied out in bursts (take_burst), the
// receive queue's read where they lie, one at a time, each slot given back once its receive is
// done (next_in_place, release_in_place): a SEND's receive is used across several calls and
// packets, and copying it out cost each message a second copy.
// Figures: perf/bench_rings (BM_send_ring, BM_recv_ring, BM_nd_send, BM_nd_pingpong), README.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ndnic::nic {

template <class T>
class SpscRing {
 public:
  SpscRing() = default;
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  /// Room for `size` entries, a power of two; empty. Before either side uses it.
  void allocate(uint32_t size) {
    shape_.slots = std::make_unique<T[]>(size);
    shape_.mask = size - 1;
    prod_.pos.store(0, std::memory_order_relaxed);
    prod_.cons_seen = 0;
    cons_.pos.store(0, std::memory_order_relaxed);
  }
  uint32_t capacity() const { return shape_.mask + 1; }

  // ---- the producer's side --------------------------------------------------------------

  /// Free slots as far as the producer knows; the consumer's position is read again only when
  /// fewer than `want` are known free (so a caller that needs n asks for n).
  uint32_t free_slots(uint32_t want) {
    const uint32_t head = prod_.pos.load(std::memory_order_relaxed);
    uint32_t free = capacity() - (head - prod_.cons_seen);
    if (free < want) {
      prod_.cons_seen = cons_.pos.load(std::memory_order_acquire);  // its slots are read out
      free = capacity() - (head - prod_.cons_seen);
    }
    return free;
  }
  /// The i-th slot past those published, to build an entry in (i < what free_slots said).
  T* slot(uint32_t i) { return &shape_.slots[(prod_.pos.load(std::memory_order_relaxed) + i) & shape_.mask]; }
  /// Hands the first n built slots to the consumer.
  void publish(uint32_t n) {
    prod_.pos.store(prod_.pos.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // ---- the consumer's side --------------------------------------------------------------

  /// Up to `max` of the oldest entries, in order, handed to take(const T&), which copies what
  /// it keeps: the slots are the producer's again once this returns. Returns how many.
  template <class Take>
  uint32_t take_burst(uint32_t max, Take&& take) {
    const uint32_t tail = cons_.pos.load(std::memory_order_relaxed);
    const uint32_t ready = prod_.pos.load(std::memory_order_acquire) - tail;
    const uint32_t n = ready < max ? ready : max;
    for (uint32_t i = 0; i < n; i++) take(static_cast<const T&>(shape_.slots[(tail + i) & shape_.mask]));
    if (n != 0) cons_.pos.store(tail + n, std::memory_order_release);
    return n;
  }

  /// Entries published and not yet released, as the consumer sees them now (reads the
  /// producer's line).
  uint32_t ready() const {
    return prod_.pos.load(std::memory_order_acquire) - cons_.pos.load(std::memory_order_relaxed);
  }
  /// Reading in place, one entry at a time: the oldest entry not yet released, where the
  /// producer built it (its slot stays the consumer's until release_in_place), or nullptr when
  /// none is ready. `known` is the caller's count of entries ready and not released: the
  /// producer's line is read again only when it is used up. The producer's core wrote the
  /// slots, so each is a miss: kReadAhead are asked for when that line is read, then the one
  /// kReadAhead on at each call, so that the misses overlap as when a burst is copied out.
  const T* next_in_place(uint32_t& known) const {
    if (known == 0) {
      if ((known = ready()) == 0) return nullptr;
      for (uint32_t i = 1; i < known && i < kReadAhead; i++) __builtin_prefetch(&nth_unreleased(i));
    } else if (known > kReadAhead) {
      __builtin_prefetch(&nth_unreleased(kReadAhead));
    }
    return &nth_unreleased(0);
  }
  /// Gives the entry next_in_place returned back to the producer: the consumer is done with it.
  void release_in_place(uint32_t& known) {
    cons_.pos.store(cons_.pos.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    known--;
  }

  /// Nothing published waits for the consumer (from either side).
  bool empty() const {
    return prod_.pos.load(std::memory_order_acquire) == cons_.pos.load(std::memory_order_acquire);
  }

 private:
  /// The producer's line: what it has published, and the consumer's position as it last saw it.
  struct alignas(64) Producer {
    std::atomic<uint32_t> pos{0};  ///< entries published so far (free-running)
    uint32_t cons_seen = 0;        ///< cons_.pos as last read
  };
  /// The consumer's line, which the producer reads only when it runs short of slots.
  struct alignas(64) Consumer {
    std::atomic<uint32_t> pos{0};  ///< entries taken so far (free-running)
  };

  /// Set once, then only read by both sides: a line of its own, apart from what either writes.
  struct alignas(64) Shape {
    std::unique_ptr<T[]> slots;
    uint32_t mask = 0;
  };

  static constexpr uint32_t kReadAhead = 8;  ///< slots next_in_place asks for ahead of use

  /// The i-th oldest entry not yet released.
  const T& nth_unreleased(uint32_t i) const {
    return shape_.slots[(cons_.pos.load(std::memory_order_relaxed) + i) & shape_.mask];
  }

  Shape shape_;
  Producer prod_;
  Consumer cons_;
};

}  // namespace ndnic::nic
