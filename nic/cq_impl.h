// Completion queue internals: an rte_ring of Completion entries (lcores produce, the
// application consumes) and an eventfd the producer writes when the CQ is armed.
#pragma once

#include <atomic>
#include <cstdint>

#include "nic/nic.h"

struct rte_ring;

namespace ndnic::nic {

enum class CqArm : uint8_t { kNone, kAny, kSolicited, kErrors };

struct Cq::Impl {
  Cq handle;
  rte_ring* ring = nullptr;
  uint32_t capacity = 0;
  int efd = -1;
  std::atomic<CqArm> armed{CqArm::kNone};
  std::atomic<uint64_t> overflows{0};   ///< completions the full ring could not take

  /// Producer side (lcores). A full ring is a CQ overrun: counted, and the completion is lost
  /// as on hardware, so callers size CQs for their queues.
  void push(const Completion& c);
};

bool cq_create(Cq::Impl* cq, uint32_t entries, unsigned serial);
void cq_destroy(Cq::Impl* cq);

}  // namespace ndnic::nic
