#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <string>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "nic/cq_impl.h"

namespace ndnic::nic {

bool cq_create(Cq::Impl* cq, uint32_t entries, unsigned serial) {
  if (entries == 0) return false;
  const std::string name = "ndnic_cq_" + std::to_string(serial);
  // rte_ring holds count - 1 entries; round up so the caller gets at least `entries`.
  cq->ring = rte_ring_create_elem(name.c_str(), sizeof(Completion), rte_align32pow2(entries + 1),
                                  SOCKET_ID_ANY, RING_F_SC_DEQ);
  if (!cq->ring) return false;
  cq->capacity = rte_ring_get_capacity(cq->ring);
  cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return cq->efd >= 0;
}

void cq_destroy(Cq::Impl* cq) {
  if (cq->ring) rte_ring_free(cq->ring);
  if (cq->efd >= 0) close(cq->efd);
  cq->ring = nullptr;
  cq->efd = -1;
}

void Cq::Impl::push(const Completion& c) {
  if (rte_ring_mp_enqueue_elem(ring, const_cast<Completion*>(&c), sizeof(Completion)) != 0) {
    overflows.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  CqArm a = armed.load(std::memory_order_acquire);
  if (a == CqArm::kNone) return;
  const bool error = c.status != WcStatus::kSuccess;
  const bool wake = a == CqArm::kAny || (a == CqArm::kSolicited && c.solicited) || error;
  if (wake && armed.compare_exchange_strong(a, CqArm::kNone, std::memory_order_acq_rel)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(efd, &one, sizeof one);
  }
}

unsigned Cq::poll(Completion* out, unsigned n) {
  return rte_ring_sc_dequeue_burst_elem(impl_->ring, out, sizeof(Completion), n, nullptr);
}

void Cq::arm(bool solicited_only) {
  impl_->armed.store(solicited_only ? CqArm::kSolicited : CqArm::kAny, std::memory_order_release);
}

void Cq::arm_errors() { impl_->armed.store(CqArm::kErrors, std::memory_order_release); }

int Cq::event_fd() const { return impl_->efd; }

bool Cq::wait(int timeout_ms) {
  pollfd p{impl_->efd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  uint64_t v;
  return read(impl_->efd, &v, sizeof v) == sizeof v;
}

uint32_t Cq::capacity() const { return impl_->capacity; }

bool Cq::resize(uint32_t entries) {
  // Growing needs a new ring while lcores may be producing into the old one; the ND frontend
  // sizes CQs up front instead. Shrinking below the current size is always refused.
  return entries <= impl_->capacity;
}

}  // namespace ndnic::nic
