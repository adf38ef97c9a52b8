// How a thread that polls (a worker lcore, an application waiting for a completion, a thread
// driving its device in run-to-completion mode) gives its processor away while it finds
// nothing. Every polling loop in ndnic waits through this.
//
// Why: a loop that only spins keeps its CPU until the scheduler's tick takes it away. When the
// thread it waits for shares that CPU (two embedded nodes' threads, a device worker beside an
// application, more busy threads than CPUs), each hand-off then costs a whole time slice,
// ~4 ms, per message: ndperf's polled latency was that. A yield after a bounded number of empty
// looks hands the CPU over at once; on a CPU of its own the yield returns at once (a syscall,
// ~0.2 us, once per kLooks empty looks).
#pragma once

#include <sched.h>

#include <cstdint>

namespace ndnic::nic {

class Backoff {
 public:
  /// Empty looks before an application's wait yields: a few microseconds of spinning.
  static constexpr unsigned kAppLooks = 256;
  /// A device worker spins longer (~100 us): it serves a whole ping-pong's idle gap.
  static constexpr unsigned kWorkerLooks = 2048;

  explicit Backoff(unsigned looks = kAppLooks) : looks_(looks) {}

  /// One look found nothing: every `looks` such looks in a row, yield.
  void idle() {
    if (++empty_ < looks_) return;
    empty_ = 0;
    yields_++;
    sched_yield();
  }
  /// A look found work: the count of empty looks starts again.
  void busy() { empty_ = 0; }
  /// Yields so far (telemetry, tests).
  uint64_t yields() const { return yields_; }

 private:
  unsigned looks_;
  unsigned empty_ = 0;
  uint64_t yields_ = 0;
};

}  // namespace ndnic::nic
