// CSV: one line per row, every test in one table; a column a test does not report is empty.
#include <cinttypes>

#include "tools/ndperf/report/output.h"

namespace ndnic::ndperf {

void write_csv(FILE* f, const RunReport& r) {
  std::fputs("test,bytes,iterations,bw_peak_gbps,bw_avg_gbps,msg_rate_mpps,t_min_us,t_max_us,t_typical_us,"
             "t_avg_us,t_stdev_us,p99_us,p999_us,cycles_per_sec\n",
             f);
  for (const TestResult& t : r.tests) {
    for (const Row& w : t.rows) {
      std::fprintf(f, "%s,%u,%" PRIu64, name(t.test), w.bytes, w.iterations);
      switch (info(t.test).kind) {
        case Kind::kBandwidth:
          std::fprintf(f, ",%.9g,%.9g,%.9g,,,,,,,,\n", w.bw_peak_gbps, w.bw_avg_gbps, w.msg_rate_mpps);
          break;
        case Kind::kLatency:
          std::fprintf(f, ",,,,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,\n", w.t_min_us, w.t_max_us, w.t_typical_us,
                       w.t_avg_us, w.t_stdev_us, w.p99_us, w.p999_us);
          break;
        case Kind::kCycles: std::fprintf(f, ",,,,,,,,,,,%.9g\n", w.cycles_per_sec); break;
        case Kind::kCopy: std::fprintf(f, ",,%.9g,,,,,,,,,\n", w.bw_avg_gbps); break;
      }
    }
  }
}

}  // namespace ndnic::ndperf
