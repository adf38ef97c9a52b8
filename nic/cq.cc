#include <linux/futex.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <climits>

#include "nic/cq_impl.h"
#include "nic/cq_ring.h"

namespace ndnic::nic {

bool cq_create(Cq::Impl* cq, uint32_t entries, GracePeriod grace) {
  if (entries == 0) return false;
  cq->grace = grace;
  CqRing* r = CqRing::create(entries);
  if (!r) return false;
  cq->ring.store(r, std::memory_order_release);
  cq->capacity = r->capacity();
  cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return cq->efd >= 0;
}

void cq_destroy(Cq::Impl* cq) {
  CqRing::destroy(cq->ring.exchange(nullptr));
  for (auto& [r, token] : cq->old_rings) CqRing::destroy(r);
  cq->old_rings.clear();
  if (cq->efd >= 0) close(cq->efd);
  cq->efd = -1;
}

bool Cq::Impl::push(const Completion& c) { return push_batch(&c, 1) == 1; }

unsigned Cq::Impl::push_batch(const Completion* c, unsigned n) {
  const unsigned k = ring.load(std::memory_order_acquire)->push(c, n);
  if (k < n) {
    overflows.fetch_add(n - k, std::memory_order_relaxed);
    // Whoever waits hears of it, armed for any result or for errors only.
    if (armed.exchange(CqArm::kNone, std::memory_order_seq_cst) != CqArm::kNone) signal();
    return k;
  }
  // Pairs with the fence in arm(): either this load sees the arm, or the consumer's look at the
  // ring after arming sees these completions; without both fences each side can miss the other
  // (store-load reordering) and a Notify waits forever.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CqArm a = armed.load(std::memory_order_acquire);
  if (a == CqArm::kNone) return k;
  bool wake = a == CqArm::kAny;
  for (unsigned i = 0; i < k && !wake; i++)
    wake = (a == CqArm::kSolicited && c[i].solicited) || c[i].status != WcStatus::kSuccess;
  if (wake && armed.compare_exchange_strong(a, CqArm::kNone, std::memory_order_seq_cst)) signal();
  return k;
}

void Cq::Impl::wake_sleepers() {
  // After the change it tells (armed cleared, a waiter's OVERLAPPED completed): a sleeper reads
  // the word before it looks at those, so it either sees the change or the word moved on.
  signals.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, &signals, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void Cq::Impl::signal() {
  // Looked at before the wake-up: a woken sleeper may run, finish and stop watching before
  // this thread goes on (on a shared processor, at once), and the fd must not hear of it then.
  // A watcher seen here delivers the signal itself, whenever it stops (armed is already clear).
  // No sleeper seen: one that comes later counted itself after armed was cleared (both
  // seq_cst), so its look at armed sees that, and it does not sleep.
  const bool watched = watchers.load(std::memory_order_seq_cst) != 0;
  if (sleepers.load(std::memory_order_seq_cst) != 0) wake_sleepers();
  if (watched) return;
  fd_signals.fetch_add(1, std::memory_order_relaxed);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(efd, &one, sizeof one);
}

bool Cq::armed() const { return impl_->armed.load(std::memory_order_seq_cst) != CqArm::kNone; }

void Cq::add_watcher(int delta) { impl_->watchers.fetch_add(uint32_t(delta), std::memory_order_seq_cst); }

uint32_t Cq::watchers() const { return impl_->watchers.load(std::memory_order_seq_cst); }

uint32_t Cq::signal_seq() const { return impl_->signals.load(std::memory_order_seq_cst); }

void Cq::add_sleeper(int delta) { impl_->sleepers.fetch_add(uint32_t(delta), std::memory_order_seq_cst); }

uint32_t Cq::sleepers() const { return impl_->sleepers.load(std::memory_order_seq_cst); }

void Cq::sleep(uint32_t seq) {
  syscall(SYS_futex, &impl_->signals, FUTEX_WAIT_PRIVATE, seq, nullptr, nullptr, 0);
}

void Cq::wake_sleepers() { impl_->wake_sleepers(); }

uint64_t Cq::fd_signals() const { return impl_->fd_signals.load(std::memory_order_relaxed); }

bool Cq::overrun() const { return impl_->overflows.load(std::memory_order_relaxed) != 0; }

unsigned Cq::poll(Completion* out, unsigned n) {
  Impl* c = impl_;
  // Replaced rings first, oldest first: an lcore's completions in one came before any of its
  // completions in the next.
  while (!c->old_rings.empty()) {
    auto [r, token] = c->old_rings.front();
    unsigned k = r->pop(out, n);
    if (k) return k;
    if (!c->grace.passed(token)) return 0;  // a producer may still hold it
    k = r->pop(out, n);
    if (k) return k;
    CqRing::destroy(r);
    c->old_rings.pop_front();
  }
  return c->ring.load(std::memory_order_relaxed)->pop(out, n);
}

void Cq::arm(bool solicited_only) {
  impl_->armed.store(solicited_only ? CqArm::kSolicited : CqArm::kAny, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before the caller looks at queued()
}

void Cq::arm_errors() {
  impl_->armed.store(CqArm::kErrors, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

int Cq::event_fd() const { return impl_->efd; }

bool Cq::wait(int timeout_ms) {
  pollfd p{impl_->efd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  uint64_t v;
  return read(impl_->efd, &v, sizeof v) == sizeof v;
}

uint32_t Cq::capacity() const { return impl_->capacity; }

uint32_t Cq::queued() const {
  const Impl* c = impl_;
  uint32_t n = c->ring.load(std::memory_order_acquire)->queued();
  for (const auto& [r, token] : c->old_rings) n += r->queued();
  return n;
}

bool Cq::resize(uint32_t entries) {
  Impl* c = impl_;
  if (entries == 0 || entries < queued()) return false;  // results waiting must fit
  if (CqRing::capacity_for(entries) == c->capacity) return true;  // the same ring would do
  CqRing* fresh = CqRing::create(entries);
  if (!fresh) return false;
  CqRing* cur = c->ring.exchange(fresh, std::memory_order_acq_rel);
  c->old_rings.emplace_back(cur, c->grace.start());
  c->capacity = fresh->capacity();
  return true;
}

}  // namespace ndnic::nic
