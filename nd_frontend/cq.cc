// INDCompletionQueue over a nic::Cq. Results are the caller's own ND_RESULTs (the work
// request's wr_id); a window's remote invalidation arrives as its own result, before the
// receive it came with.
#include <endian.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "nd_frontend/objects.h"
#include "nd_frontend/overlapped.h"
#include "nd_frontend/status.h"

namespace ndnic::nd {

NdCq::NdCq(NdAdapter* adapter, nic::Cq* cq, int shard) : adapter_(adapter), cq_(cq), shard_(shard) {
  adapter_->AddRef();
  adapter_->watch(this);
}

NdCq::~NdCq() {
  CancelOverlappedRequests();
  adapter_->unwatch(this);
  adapter_->dev()->destroy_cq(cq_);
  adapter_->Release();
}

HRESULT NdCq::GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) {
  if (!ov) return ND_INVALID_PARAMETER;
  if (!wait) return overlapped_result(ov, bytes, FALSE);
  // The wait (a Notify's) watches the CQ's signal itself, so the signal skips the event fd.
  cq_->add_watcher(1);
  const HRESULT hr = adapter_->app_driven() ? wait_driving(ov, bytes) : wait_watching(ov, bytes);
  cq_->add_watcher(-1);
  // A signal after our own result came (for a Notify another thread posted meanwhile) skipped
  // the fd while we watched: it is ours to deliver. Mostly there is no such Notify, and two
  // loads say so.
  if (one_.load(std::memory_order_acquire) != nullptr || more_.load()) took_signal();
  return hr;
}

bool NdCq::took_signal() {
  if (cq_->armed()) return false;
  notified(false);
  return true;
}

HRESULT NdCq::wait_driving(OVERLAPPED* ov, SIZE_T* bytes) {
  // Run to completion: a Notify is satisfied by the engine this thread drives. The CQ's signal
  // is seen here, without the notifier thread's wake-up (a hop to another thread per result).
  // The arm a Notify set stays until a completion signals it: once it is gone, whether the
  // signal wrote the event fd (before we started to drive) or not, the waiters are due.
  bool signaled = false;
  const HRESULT hr = overlapped_result_driving(ov, bytes, [&] {
    const bool work = adapter_->progress();
    signaled = took_signal() || signaled;
    return work;
  });
  driven_wait_done_ = signaled && hr == ND_SUCCESS;
  return hr;
}

HRESULT NdCq::wait_watching(OVERLAPPED* ov, SIZE_T* bytes) {
  // Worker lcores. Woken through the event fd, a Notify wait costs two wake-ups, the notifier
  // thread's and then ours: send_lat's typical half round trip with Notify was 12.8 us against
  // 2.3 us polled on the 16-core machine. So the waiter watches the CQ's signal itself:
  // - first spinning for a while (NDNIC_CONTROL_NOTIFY_WATCH_US), as a driving waiter does,
  //   since the result mostly comes within microseconds (a ping-pong's turn, a stream's next
  //   batch);
  // - then asleep on the CQ's futex word, which the lcore's signal wakes directly: one wake-up.
  const HRESULT hr = watch_spinning(ov, bytes);
  return hr == ND_PENDING ? watch_sleeping(ov, bytes) : hr;
}

HRESULT NdCq::watch_spinning(OVERLAPPED* ov, SIZE_T* bytes) {
  const std::chrono::microseconds watch = adapter_->notify_watch();
  if (watch.count() == 0) return ND_PENDING;
  nic::Backoff backoff;
  const auto until = std::chrono::steady_clock::now() + watch;
  for (unsigned look = 1;; look++) {
    const HRESULT hr = overlapped_result(ov, bytes, FALSE);
    if (hr != ND_PENDING) return hr;
    if (took_signal()) continue;
    if (look % kLooksPerClock == 0 && std::chrono::steady_clock::now() > until) return ND_PENDING;
    backoff.idle();
  }
}

HRESULT NdCq::watch_sleeping(OVERLAPPED* ov, SIZE_T* bytes) {
  cq_->add_sleeper(1);
  HRESULT hr;
  for (;;) {
    // The word first: a signal or a cancel after this read moves it, and sleep() returns.
    const uint32_t seq = cq_->signal_seq();
    hr = overlapped_result(ov, bytes, FALSE);
    if (hr != ND_PENDING) break;
    if (!took_signal()) cq_->sleep(seq);
  }
  cq_->add_sleeper(-1);
  return hr;
}

HRESULT NdCq::Resize(SIZE_T entries) {
  if (entries == 0 || entries > kMaxCqEntries) return ND_INVALID_PARAMETER;
  if (entries < cq_->queued()) return ND_BUFFER_OVERFLOW;  // results waiting would not fit
  if (cq_->resize(uint32_t(entries))) return ND_SUCCESS;
  return entries >= cq_->queued() ? ND_INSUFFICIENT_RESOURCES : ND_BUFFER_OVERFLOW;  // raced new results
}

HRESULT NdCq::Notify(DWORD type, OVERLAPPED* ov) {
  if (!ov) return ND_INVALID_PARAMETER;
  if (type != ND_CQ_NOTIFY_ERRORS && type != ND_CQ_NOTIFY_ANY && type != ND_CQ_NOTIFY_SOLICITED)
    return ND_INVALID_PARAMETER;
  overlapped_start(ov);
  if (cq_->overrun()) {  // results were lost already: say so now, never wait for more
    overlapped_complete(ov, ND_DATA_OVERRUN);
    return ND_PENDING;
  }
  OVERLAPPED* none = nullptr;
  if (!one_.compare_exchange_strong(none, ov)) {
    std::lock_guard<std::mutex> g(mu_);
    waiting_.push_back(ov);
    more_.store(true);
  }
  if (type == ND_CQ_NOTIFY_ERRORS)
    cq_->arm_errors();
  else
    cq_->arm(type == ND_CQ_NOTIFY_SOLICITED);
  // Results already waiting (a Flush's, say) satisfy a Notify for any result at once: the
  // engine only signals results that arrive after the arm.
  if (type == ND_CQ_NOTIFY_ANY && cq_->queued() > 0 && take_waiter(ov)) overlapped_complete(ov, ND_SUCCESS);
  return ND_PENDING;
}

bool NdCq::take_waiter(OVERLAPPED* ov) {
  OVERLAPPED* mine = ov;
  if (one_.compare_exchange_strong(mine, nullptr)) return true;
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find(waiting_.begin(), waiting_.end(), ov);
  if (it == waiting_.end()) return false;
  waiting_.erase(it);
  return true;
}

void NdCq::complete_waiters(bool cancel) {
  // Registered before the CQ was armed (Notify), so whoever saw the arm taken sees them here.
  OVERLAPPED* one = one_.exchange(nullptr);
  std::vector<OVERLAPPED*> more;
  if (more_.load()) {
    std::lock_guard<std::mutex> g(mu_);
    more.swap(waiting_);
    more_.store(false);
  }
  // A result lost to a full CQ (its endpoint went to ERROR) is an error the waiter must see.
  const HRESULT st = cancel ? ND_CANCELED : cq_->overrun() ? ND_DATA_OVERRUN : ND_SUCCESS;
  if (one) overlapped_complete(one, st);
  for (OVERLAPPED* ov : more) overlapped_complete(ov, st);
  // A waiter asleep on the CQ's word looks at its OVERLAPPED again. A signal woke the sleepers
  // already, and while they watch it never goes through the fd: only a cancel needs this.
  if (cancel && cq_->sleepers() != 0) cq_->wake_sleepers();
}

void NdCq::notified(bool drain_fd) {
  // The notifier thread was woken by the fd: it reads it. A driving waiter saw the signal
  // itself; a write to the fd it raced with is the notifier thread's to read (the read, a
  // syscall per Notify, always found nothing: a driving waiter's signals skip the fd).
  if (drain_fd) {
    uint64_t v;
    [[maybe_unused]] ssize_t n = read(cq_->event_fd(), &v, sizeof v);
  }
  complete_waiters(false);
}

HRESULT NdCq::CancelOverlappedRequests() {
  complete_waiters(true);
  return ND_SUCCESS;
}

SIZE_T NdCq::GetResults(ND_RESULT* results[], SIZE_T n) {
  // Run to completion: the caller's look at the CQ moves the engine first, unless a wait this
  // thread drove has just ended with the CQ's signal: its results are there, and one more
  // engine iteration before them was ~7% of a Notify wait's half round trip.
  if (!driven_wait_done_) adapter_->progress();
  driven_wait_done_ = false;
  return take_results(results, n);
}

SIZE_T NdCq::take_results(ND_RESULT* results[], SIZE_T n) {
  nic::Completion c[64];
  SIZE_T got = 0;
  while (got < n) {
    const unsigned want = unsigned(std::min<SIZE_T>(n - got, 64));
    const unsigned k = cq_->poll(c, want);
    for (unsigned i = 0; i < k; i++) {
      auto* r = reinterpret_cast<ND_RESULT*>(c[i].wr_id & ~kExtResultTag);
      if (c[i].wr_id & kExtResultTag) {
        auto* x = static_cast<NDNIC_RESULT*>(r);
        x->Flags = 0;
        if (c[i].flags & nic::kWcWithImm) {
          x->Flags |= NDNIC_RESULT_IMMEDIATE;
          x->ImmediateData = c[i].imm_or_inv;
        }
        if (c[i].flags & nic::kWcWithInv) {
          x->Flags |= NDNIC_RESULT_INVALIDATED;
          x->InvalidatedToken = htobe32(c[i].imm_or_inv);
        }
        if (c[i].opcode == nic::WcOpcode::kRecvWriteImm) x->Flags |= NDNIC_RESULT_WRITE;
      }
      r->Status = nd_status(c[i]);
      r->BytesTransferred = c[i].opcode == nic::WcOpcode::kRemoteInvalidate ? 0 : c[i].byte_len;
      results[got++] = r;
    }
    if (k < want) break;
  }
  return got;
}

}  // namespace ndnic::nd
