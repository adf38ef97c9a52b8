#include "tools/ndperf/progress.h"

#include <cstdio>

#include "tools/nd_app/halt.h"
#include "tools/ndperf/plan.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {

uint64_t iterations(const Options& o, Test t, uint32_t size) {
  if (o.duration_s) return 0;
  return o.iters ? o.iters : default_iters(t, size);
}

bool run_over(const Options& o, uint64_t t0, uint64_t done, uint64_t iters) {
  if (nd_app::sigint_requested()) return true;
  if (iters) return done >= iters;
  return now_tsc() - t0 >= uint64_t(o.duration_s * tsc_hz());
}
namespace {

constexpr uint32_t kQuietSeconds = 2;  ///< runs up to this long print no progress

}  // namespace

Progress::Progress(Test test, uint32_t bytes, uint32_t duration_s)
    : test_(test), bytes_(bytes), t0_(now_tsc()), second_(uint64_t(tsc_hz())) {
  next_ = t0_ + second_ * (duration_s > kQuietSeconds ? 1 : kQuietSeconds + 1);
}

void Progress::print(uint64_t tsc, uint64_t iterations, const std::string& figure) {
  std::fprintf(stderr, "ndperf: %s %u B: %llu s, %llu iterations, %s\n", name(test_), bytes_,
               static_cast<unsigned long long>((tsc - t0_ + second_ / 2) / second_),
               static_cast<unsigned long long>(iterations), figure.c_str());
  while (next_ <= tsc) next_ += second_;
}

void Progress::show_bw(const BwMeter& meter, uint64_t done) {
  const uint64_t now = now_tsc();
  if (!due(now)) return;
  char fig[64];
  std::snprintf(fig, sizeof fig, "%.2f Gb/s", double(done) * bytes_ * 8 / 1e9 / meter.seconds());
  print(now, done, fig);
}

void Progress::show_lat(uint64_t tsc, uint64_t iterations, double ticks, double divisor) {
  if (!due(tsc)) return;
  char fig[64];
  std::snprintf(fig, sizeof fig, "t_avg %.2f usec", tsc_to_us(uint64_t(ticks)) / double(iterations) / divisor);
  print(tsc, iterations, fig);
}

}  // namespace ndnic::ndperf
