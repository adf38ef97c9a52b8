// The requests a responder holds behind a READ reply (resp.cc), oldest first, each with its
// mbuf: responses leave in PSN order, so what came after a READ waits until its reply is out.
//
// A ring that grows by doubling and never shrinks: once a QP has held as many as it ever will
// at once, holding and releasing allocate nothing. The std::deque it replaces allocated a
// block for every two requests held (a RocePacket is ~250 bytes), per packet on a QP mixing
// READs with SENDs or WRITEs.
#pragma once

#include <cstdint>
#include <memory>

#include <rte_mbuf.h>

#include "ndnic/wire/packet.h"

namespace ndnic::nic {

class HeldRequests {
 public:
  struct Held {
    rte_mbuf* m;
    wire::RocePacket pkt;
  };

  bool empty() const { return count_ == 0; }
  uint32_t size() const { return count_; }
  void push_back(rte_mbuf* m, const wire::RocePacket& pkt) {
    if (count_ == cap_) grow();
    slots_[(head_ + count_) & (cap_ - 1)] = {m, pkt};
    count_++;
  }
  /// Takes the oldest out (there must be one).
  Held pop_front() {
    const Held h = slots_[head_];
    head_ = (head_ + 1) & (cap_ - 1);
    count_--;
    return h;
  }
  /// Frees every mbuf held and forgets them; returns how many there were.
  uint32_t free_all() {
    const uint32_t n = count_;
    for (uint32_t i = 0; i < n; i++) rte_pktmbuf_free(slots_[(head_ + i) & (cap_ - 1)].m);
    head_ = count_ = 0;
    return n;
  }

 private:
  static constexpr uint32_t kFirstCapacity = 8;
  void grow() {
    const uint32_t cap = cap_ ? 2 * cap_ : kFirstCapacity;
    auto slots = std::make_unique<Held[]>(cap);
    for (uint32_t i = 0; i < count_; i++) slots[i] = slots_[(head_ + i) & (cap_ - 1)];
    slots_ = std::move(slots);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<Held[]> slots_;
  uint32_t cap_ = 0;    ///< a power of two
  uint32_t head_ = 0;   ///< the oldest's slot
  uint32_t count_ = 0;
};

}  // namespace ndnic::nic
