// Turning timestamps into figures. Time is the TSC (rte_rdtsc), read once per result batch
// on the bandwidth side and twice per iteration on the latency side.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

uint64_t now_tsc();
double tsc_hz();
double tsc_to_us(uint64_t ticks);

/// Bandwidth over one size: messages completed against time, sampled as results come in.
/// BW average is the whole run (first post to last completion); BW peak the fastest stretch
/// of at least a tenth of the messages and at least `min_window` of them (perftest takes the
/// fastest stretch between any post and any later completion; a stretch that short measures
/// how completions are batched, not how fast data moves: min_window is twice what can
/// complete in one batch, the requests in flight).
class BwMeter {
 public:
  void start();
  /// `done` messages have completed by now (a sample only when the count moved).
  void sample(uint64_t done);
  /// Ends at the last sample (the last completion).
  Row finish(uint32_t bytes, uint64_t done, uint64_t min_window) const;
  uint64_t started() const { return t0_; }
  uint64_t ended() const { return samples_.empty() ? t0_ : samples_.back().tsc; }  ///< the last sample
  double seconds() const;  ///< so far, to the last sample

 private:
  struct Sample {
    uint64_t tsc, done;
  };
  uint64_t t0_ = 0;
  std::vector<Sample> samples_;
};

/// Per-iteration times in TSC ticks, and perftest's latency columns from them, each divided
/// by `divisor` (2 for half a round trip): min, max, typical (the median), average, standard
/// deviation, and the 99% and 99.9% percentiles (nearest rank). Min, max, average and
/// deviation count every iteration; the median and percentiles come from the samples kept,
/// every one up to kMaxSamples, then an evenly spaced subset (a -D run of raw_lat takes
/// millions a second).
class LatencyRecorder {
 public:
  void add(uint64_t ticks);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  Row row(uint32_t bytes, double divisor);

 private:
  static constexpr size_t kMaxSamples = size_t(1) << 22;
  std::vector<uint64_t> kept_;
  uint64_t count_ = 0, stride_ = 1;
  uint64_t min_ = UINT64_MAX, max_ = 0;
  double sum_ = 0, sum_sq_ = 0;
};

}  // namespace ndnic::ndperf
