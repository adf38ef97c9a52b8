#include "tools/nd_app/reaper.h"

#include <time.h>

#include "ndnic/backoff.h"

namespace ndnic::nd_app {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kWatchdogTick = std::chrono::milliseconds(10);
constexpr unsigned kSpinsPerCheck = 1024;  ///< polling reads the clock and the halt this seldom

/// What a wait reads: the kernel's last tick (CLOCK_MONOTONIC_COARSE, steady_clock's clock a
/// few ms behind), ~5 ns against ~20 for the precise read, which ndperf counts in every Notify
/// wait's half round trip. A deadline in seconds and a 50 ms watchdog need no more.
Clock::time_point coarse_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}
int64_t ns_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
int64_t now_ns() { return ns_of(coarse_now()); }

}  // namespace

Reaper::Reaper(Actor& actor, bool blocking, bool backoff) : actor_(actor), blocking_(blocking), backoff_(backoff) {}

void Reaper::attach(INDCompletionQueue* cq) {
  cq_ = cq;
  if (blocking_) watchdog_ = std::thread([this] { watchdog(); });
}

void Reaper::close() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  std::lock_guard<std::mutex> g(mu_);
  if (cq_) cq_->Release();
  cq_ = nullptr;
}

void Reaper::abort() {
  std::lock_guard<std::mutex> g(mu_);
  actor_.halt().abort();
  if (cq_) cq_->CancelOverlappedRequests();
}

bool Reaper::give_up(Clock::time_point* deadline, Clock::time_point now) {
  // An impatient side finishes what it posted after Ctrl-C; a patient one stops at once.
  if (actor_.halting(actor_.patient())) {
    actor_.set_halted();
    if (actor_.halt().aborted()) actor_.fail("stopped, the other side failed");
    return true;
  }
  if (actor_.patient()) return false;
  if (*deadline == Clock::time_point{}) {
    *deadline = now + actor_.timeout();
  } else if (now > *deadline) {
    actor_.fail("no completion for " + std::to_string(actor_.timeout_s()) + " s (--timeout)");
    return true;
  }
  return false;
}

size_t Reaper::reap(ND_RESULT** out, size_t n) {
  // The clock is read only where a wait goes on: the deadline is set at the first check, and a
  // blocking wait's one read before it sleeps serves the deadline and the watchdog. A read is
  // ~20 ns, and ndperf counts whatever this loop costs in ndnic's half round trip (~0.5 us):
  // three reads per Notify wait were a tenth of it.
  Clock::time_point deadline{};
  nic::Backoff backoff;  // a peer on this CPU gets it after a few us of empty looks, not a tick
  for (unsigned spins = 1;; spins++) {
    const SIZE_T k = cq_->GetResults(out, n);
    looks_++;
    if (k) {
      results_ += k;
      hit_looks_++;
      return k;
    }
    if (!blocking_) {
      // Polling reads the clock and the halt only now and then.
      if (spins % kSpinsPerCheck == 0 && give_up(&deadline, coarse_now())) return 0;
      if (backoff_) backoff.idle();
      continue;
    }
    // Arm, then wait. A result that came before the arming completes the Notify at once (ndnic's
    // Notify looks at the CQ after arming it), so no second look at the CQ goes first: run to
    // completion, that look was one more engine iteration in every wait's half round trip.
    if (!armed_) {
      const HRESULT hr = cq_->Notify(ND_CQ_NOTIFY_ANY, &notify_ov_);
      if (hr != ND_PENDING) {
        actor_.fail("Notify", hr);
        return 0;
      }
      armed_ = true;
    }
    const Clock::time_point now = coarse_now();
    if (give_up(&deadline, now)) return 0;
    recheck_ = false;
    waiting_since_ns_ = ns_of(now);
    const HRESULT hr = cq_->GetOverlappedResult(&notify_ov_, nullptr, TRUE);
    waiting_since_ns_ = 0;
    armed_ = false;
    if (hr == ND_SUCCESS) continue;
    if (hr != ND_CANCELED) {
      actor_.fail("waiting on Notify", hr);
      return 0;
    }
    if (!recheck_) continue;
    // The watchdog woke us to look: results here mean their notification never came.
    const SIZE_T late = cq_->GetResults(out, n);
    looks_++;
    if (late) {
      late_wakeups_++;
      results_ += late;
      hit_looks_++;
      return late;
    }
  }
}

void Reaper::watchdog() {
  const int64_t recheck = std::chrono::duration_cast<std::chrono::nanoseconds>(kNotifyRecheck).count();
  std::unique_lock<std::mutex> g(mu_);
  while (!cv_.wait_for(g, kWatchdogTick, [this] { return stop_; })) {
    const int64_t since = waiting_since_ns_;
    if (since && (now_ns() - since > recheck || actor_.halt().now())) {
      recheck_ = true;
      cq_->CancelOverlappedRequests();
    }
  }
}

}  // namespace ndnic::nd_app
