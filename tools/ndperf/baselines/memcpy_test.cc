#include "tools/ndperf/baselines/memcpy_test.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tools/nd_app/halt.h"
#include "tools/ndperf/pattern.h"
#include "tools/ndperf/progress.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {
namespace {

constexpr uint64_t kCopiesPerLook = 64;  ///< copies between two looks at the clock

}  // namespace

bool memcpy_test(Node& node, const Options& o, TestResult* result) {
  uint8_t* src = node.buffer() + node.layout().send();
  uint8_t* dst = node.buffer() + node.layout().recv();
  const uint8_t seed = pattern_seed(Test::kMemcpy, Direction::kToServer);
  for (uint32_t size : sizes(Test::kMemcpy, o)) {
    fill_pattern(src, size, seed);
    std::memset(dst, 0, size);
    const uint64_t iters = iterations(o, Test::kMemcpy, size);
    Progress progress(Test::kMemcpy, size, o.duration_s);
    BwMeter meter;
    meter.start();
    uint64_t done = 0;
    while (!run_over(o, meter.started(), done, iters)) {
      const uint64_t n = iters ? std::min(kCopiesPerLook, iters - done) : kCopiesPerLook;
      for (uint64_t i = 0; i < n; i++) {
        std::memcpy(dst, src, size);
        // Each copy must happen: without this the compiler may keep only the last one.
        asm volatile("" : : "r"(dst), "r"(src) : "memory");
      }
      done += n;
      meter.sample(done);
      progress.show_bw(meter, done);
    }
    Row row = meter.finish(size, done, 0);
    row.bw_peak_gbps = row.msg_rate_mpps = 0;
    if (done && std::memcmp(dst, src, size) != 0) {
      std::fprintf(stderr, "ndperf: memcpy %u B: the copy differs from its source\n", size);
      return false;
    }
    print_row(Test::kMemcpy, row);
    result->rows.push_back(row);
    if (nd_app::sigint_requested()) break;
  }
  return true;
}

}  // namespace ndnic::ndperf
