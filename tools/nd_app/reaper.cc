#include "tools/nd_app/reaper.h"

#include "ndnic/backoff.h"

namespace ndnic::nd_app {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kWatchdogTick = std::chrono::milliseconds(10);
constexpr unsigned kSpinsPerCheck = 1024;  ///< polling reads the clock and the halt this seldom

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

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

size_t Reaper::reap(ND_RESULT** out, size_t n) {
  const auto deadline = actor_.patient() ? Clock::time_point::max() : Clock::now() + actor_.timeout();
  nic::Backoff backoff;  // a peer on this CPU gets it after a few us of empty looks, not a tick
  for (unsigned spins = 0;; spins++) {
    const SIZE_T k = cq_->GetResults(out, n);
    looks_++;
    if (k) {
      results_ += k;
      hit_looks_++;
      return k;
    }
    // Polling reads the clock and the halt only now and then; a blocking wait at each wake-up.
    if (blocking_ || spins % kSpinsPerCheck == 0) {
      // An impatient side finishes what it posted after Ctrl-C; a patient one stops at once.
      if (actor_.halting(actor_.patient())) {
        actor_.set_halted();
        if (actor_.halt().aborted()) actor_.fail("stopped, the other side failed");
        return 0;
      }
      if (Clock::now() > deadline) {
        actor_.fail("no completion for " + std::to_string(actor_.timeout_s()) + " s (--timeout)");
        return 0;
      }
    }
    if (!blocking_) {
      if (backoff_) backoff.idle();
      continue;
    }
    // Arm, look once more (a result may have come before the arming), then sleep.
    if (!armed_) {
      const HRESULT hr = cq_->Notify(ND_CQ_NOTIFY_ANY, &notify_ov_);
      if (hr != ND_PENDING) {
        actor_.fail("Notify", hr);
        return 0;
      }
      armed_ = true;
      continue;
    }
    recheck_ = false;
    waiting_since_ns_ = now_ns();
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
