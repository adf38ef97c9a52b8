#include "tools/ndping/report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ndnic::ndping {
namespace {

double seconds(const timespec& t) { return double(t.tv_sec) + double(t.tv_nsec) / 1e9; }

}  // namespace

void Meter::start() {
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0_);
  wall0_ = std::chrono::steady_clock::now();
}

void Meter::stop() {
  wall1_ = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1_);
}

double Meter::usec() const { return std::chrono::duration<double, std::micro>(wall1_ - wall0_).count(); }

double Meter::cpu_percent() const {
  const double wall = usec() / 1e6;
  if (wall <= 0) return 0;
  // The kernel adds a running thread's time to the process clock at its scheduler ticks (or
  // when it stops), so over a row shorter than a few ticks the figure is coarse and can even
  // exceed what the processors could give: it is capped at that.
  const double cap = 100.0 * double(sysconf(_SC_NPROCESSORS_ONLN));
  return std::min(cap, (seconds(cpu1_) - seconds(cpu0_)) * 100.0 / wall);
}

void print_header() {
  // The SDK names the frequency of its timer (QueryPerformanceFrequency); ours is steady_clock.
  using Period = std::chrono::steady_clock::period;
  std::printf("Using %ld processors. Sender Frequency is %lld\n\n %9s %9s %9s %7s %11s\n",
              sysconf(_SC_NPROCESSORS_ONLN), static_cast<long long>(Period::den / Period::num), "Size", "Iter",
              "Latency", "CPU", "Bytes/Sec");
  std::fflush(stdout);
}

void print_row(uint32_t size, uint32_t iters, double latency_us, double cpu_percent, double bytes_per_sec) {
  // The SDK's format, without the stray 'l' its "%9ul" leaves after Size and Iter.
  std::printf(" %9u %9u %9.2f %7.2f %11.0f\n", size, iters, latency_us, cpu_percent, bytes_per_sec);
  std::fflush(stdout);
}

}  // namespace ndnic::ndping
