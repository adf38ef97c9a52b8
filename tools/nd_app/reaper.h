// A completion queue and the way its owner waits on it: polling GetResults (spinning, or
// backing off to a peer thread on the same processor), or blocking with Notify. A blocked wait
// is woken by a watchdog every kNotifyRecheck to look at the CQ itself (a lost notification
// costs that, not the run) and at once on a halt. Results come back in the CQ's order; each
// ND_RESULT* is its request's own record.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"

namespace ndnic::nd_app {

/// A blocked wait is woken this often to look at the CQ and the halt itself.
constexpr auto kNotifyRecheck = std::chrono::milliseconds(50);

class Reaper {
 public:
  /// `blocking`: wait with Notify; otherwise poll, with `backoff` handing the processor over
  /// after a few microseconds of empty looks (without, a busy spin).
  Reaper(Actor& actor, bool blocking, bool backoff);
  ~Reaper() { close(); }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  /// Takes `cq` over (released by close()); starts the watchdog of blocking waits.
  void attach(INDCompletionQueue* cq);
  /// Stops the watchdog and releases the CQ (which completes a pending Notify as canceled):
  /// after every endpoint on it.
  void close();
  INDCompletionQueue* cq() const { return cq_; }

  /// Waits for results and returns 1..n of them; 0 on failure, on the actor's --timeout
  /// without any (never for a patient actor) or on a halt, with the reason printed.
  size_t reap(ND_RESULT** out, size_t n);
  /// Whatever results are there now.
  size_t poll(ND_RESULT** out, size_t n) { return cq_->GetResults(out, n); }
  /// From another thread: the actor's halt aborts, and a blocked wait gives up now.
  void abort();

  uint64_t looks() const { return looks_; }          ///< reap()'s looks at the CQ
  uint64_t hit_looks() const { return hit_looks_; }  ///< ... that found results
  uint64_t results() const { return results_; }      ///< ... and the results found
  /// Results found only by the watchdog's look: their notification was lost or late.
  uint64_t late_wakeups() const { return late_wakeups_; }

 private:
  using Clock = std::chrono::steady_clock;
  void watchdog();
  /// A wait that went on: true (with the reason said) on a halt or past the deadline, which
  /// the first call sets from `now`.
  bool give_up(Clock::time_point* deadline, Clock::time_point now);

  Actor& actor_;
  const bool blocking_;
  const bool backoff_;
  INDCompletionQueue* cq_ = nullptr;
  uint64_t looks_ = 0, hit_looks_ = 0, results_ = 0, late_wakeups_ = 0;
  // Blocking waits: one Notify at a time.
  OVERLAPPED notify_ov_{};
  bool armed_ = false;
  std::mutex mu_;  ///< abort() and the watchdog against the CQ's release
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> recheck_{false};          ///< the watchdog canceled the wait to look
  std::atomic<int64_t> waiting_since_ns_{0};  ///< steady_clock's clock, coarse; 0 while not blocked on the CQ
  std::thread watchdog_;
};

}  // namespace ndnic::nd_app
