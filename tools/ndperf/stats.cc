#include "tools/ndperf/stats.h"

#include <algorithm>
#include <cmath>

#include <rte_cycles.h>

namespace ndnic::ndperf {
namespace {

constexpr uint64_t kPeakFraction = 10;  ///< the peak's stretch: at least 1/10 of the messages
constexpr double kBitsPerGbit = 1e9;

}  // namespace

uint64_t now_tsc() { return rte_rdtsc(); }
double tsc_hz() { return double(rte_get_tsc_hz()); }
double tsc_to_us(uint64_t ticks) { return double(ticks) * 1e6 / tsc_hz(); }

void BwMeter::start() {
  samples_.clear();
  t0_ = now_tsc();
  samples_.push_back({t0_, 0});
}

void BwMeter::sample(uint64_t done) {
  // Only completions mark time: a sample taken while a message is still on its way would
  // start a stretch in the middle of it and credit the stretch with all of its bytes.
  if (done > samples_.back().done) samples_.push_back({now_tsc(), done});
}

double BwMeter::seconds() const { return double(samples_.back().tsc - t0_) / tsc_hz(); }

Row BwMeter::finish(uint32_t bytes, uint64_t done, uint64_t min_window) const {
  Row r;
  r.bytes = bytes;
  r.iterations = done;
  const double secs = seconds();
  if (done == 0 || secs <= 0) return r;
  const double rate = double(done) / secs;  // messages per second
  r.msg_rate_mpps = rate / 1e6;
  r.bw_avg_gbps = rate * bytes * 8 / kBitsPerGbit;
  // The fastest stretch between two samples that covers at least `window` messages.
  const uint64_t window = std::max<uint64_t>({1, done / kPeakFraction, min_window});
  double peak = rate;
  size_t i = 0;
  for (size_t j = 1; j < samples_.size(); j++) {
    while (i + 1 < j && samples_[j].done - samples_[i + 1].done >= window) i++;
    const uint64_t n = samples_[j].done - samples_[i].done;
    const uint64_t dt = samples_[j].tsc - samples_[i].tsc;
    if (n >= window && dt > 0) peak = std::max(peak, double(n) * tsc_hz() / double(dt));
  }
  r.bw_peak_gbps = peak * bytes * 8 / kBitsPerGbit;
  return r;
}

void LatencyRecorder::add(uint64_t t) {
  if (count_ % stride_ == 0) {
    if (kept_.size() == kMaxSamples) {
      // Keep every other sample, and from now on every stride-th iteration.
      for (size_t i = 0; i < kept_.size() / 2; i++) kept_[i] = kept_[2 * i];
      kept_.resize(kept_.size() / 2);
      stride_ *= 2;
    }
    if (count_ % stride_ == 0) kept_.push_back(t);
  }
  count_++;
  min_ = std::min(min_, t);
  max_ = std::max(max_, t);
  sum_ += double(t);
  sum_sq_ += double(t) * double(t);
}

Row LatencyRecorder::row(uint32_t bytes, double divisor) {
  Row r;
  r.bytes = bytes;
  r.iterations = count_;
  if (count_ == 0) return r;
  std::sort(kept_.begin(), kept_.end());
  const double scale = 1e6 / tsc_hz() / divisor;
  const size_t n = kept_.size();
  auto us = [&](size_t i) { return double(kept_[i]) * scale; };
  // Nearest rank: the smallest sample with at least p of them at or below it.
  auto rank = [&](double p) {
    const size_t k = size_t(std::ceil(p * double(n)));
    return std::min(n - 1, k ? k - 1 : 0);
  };
  r.t_min_us = double(min_) * scale;
  r.t_max_us = double(max_) * scale;
  r.t_typical_us = n % 2 ? us(n / 2) : (us(n / 2 - 1) + us(n / 2)) / 2;
  const double mean = sum_ / double(count_);
  r.t_avg_us = mean * scale;
  r.t_stdev_us = std::sqrt(std::max(0.0, sum_sq_ / double(count_) - mean * mean)) * scale;
  r.p99_us = us(rank(0.99));
  r.p999_us = us(rank(0.999));
  return r;
}

}  // namespace ndnic::ndperf
