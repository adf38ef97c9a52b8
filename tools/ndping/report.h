// The client's table, as the SDK examples print it: a header line, then one row per size with
// Size, Iter, Latency (microseconds), CPU (percent of one processor: 100 per busy processor,
// as the SDK's busy share times the processor count) and Bytes/Sec.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace ndnic::ndping {

/// Wall time and CPU time over one size. The SDK takes the whole system's CPU time from
/// GetSystemTimes; this takes the process's (CLOCK_PROCESS_CPUTIME_ID): it is exact over a
/// few milliseconds where /proc/stat counts 10 ms ticks, and an embedded run is the process.
class Meter {
 public:
  void start();
  void stop();
  double usec() const;
  double cpu_percent() const;

 private:
  std::chrono::steady_clock::time_point wall0_, wall1_;
  timespec cpu0_{}, cpu1_{};
};

void print_header();
void print_row(uint32_t size, uint32_t iters, double latency_us, double cpu_percent, double bytes_per_sec);

}  // namespace ndnic::ndping
