// How far a size's run is, for every test: how many iterations it runs, whether it is over,
// and the progress line of a long run: once a size has run for more than two seconds (or from
// the first second when -D asks for more than two), one line a second on stderr with the
// figures so far. Cheap to ask often: due() reads the TSC and compares.
#pragma once

#include <cstdint>
#include <string>

#include "tools/ndperf/catalog.h"
#include "tools/ndperf/options.h"

namespace ndnic::ndperf {

class BwMeter;

/// Iterations for this size: -n, or none (0) under -D, or the test's default.
uint64_t iterations(const Options& o, Test t, uint32_t size);
/// Whether a run of `iters` iterations (0: duration) started at `t0` should stop posting.
bool run_over(const Options& o, uint64_t t0, uint64_t done, uint64_t iters);

class Progress {
 public:
  Progress(Test test, uint32_t bytes, uint32_t duration_s);
  bool due(uint64_t tsc) const { return tsc >= next_; }
  /// Prints "ndperf: <test> <bytes> B: <s> s, <iterations> iterations, <figure>" and
  /// schedules the next line.
  void print(uint64_t tsc, uint64_t iterations, const std::string& figure);
  /// A bandwidth run's line, when due: Gb/s over `done` messages so far (the meter's time).
  void show_bw(const BwMeter& meter, uint64_t done);
  /// A latency run's line, when due at `tsc`: the average of `iterations` taking `ticks` TSC
  /// ticks in all, divided by `divisor` (2: half a round trip), in microseconds.
  void show_lat(uint64_t tsc, uint64_t iterations, double ticks, double divisor);

 private:
  Test test_;
  uint32_t bytes_;
  uint64_t t0_, second_, next_;
};

}  // namespace ndnic::ndperf
