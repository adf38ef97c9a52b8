// The JSON schema (keys exactly as the bench scripts read them):
//   {"tool":"ndperf","mode":"embedded"|"client"|"server","progress":"workers"|"thread",
//    "completions":"polled"|"notify","tests":[{"test":NAME,"results":[ROW...]}]}
// with rows by kind: bandwidth {"bytes","iterations","bw_peak_gbps","bw_avg_gbps","msg_rate_mpps"},
// latency {"bytes","iterations","t_min_us","t_max_us","t_typical_us","t_avg_us","t_stdev_us",
// "p99_us","p999_us"}, sendinv {"bytes","iterations","cycles_per_sec"}, memcpy {"bytes",
// "iterations","bw_avg_gbps"}.
#include <cinttypes>
#include <cmath>

#include "tools/ndperf/report/output.h"

namespace ndnic::ndperf {
namespace {

/// JSON has no NaN or infinity: a figure that is not finite is written as 0.
double finite(double x) { return std::isfinite(x) ? x : 0.0; }

void row(FILE* f, Test t, const Row& r) {
  std::fprintf(f, "{\"bytes\":%u,\"iterations\":%" PRIu64, r.bytes, r.iterations);
  switch (info(t).kind) {
    case Kind::kBandwidth:
      std::fprintf(f, ",\"bw_peak_gbps\":%.9g,\"bw_avg_gbps\":%.9g,\"msg_rate_mpps\":%.9g", finite(r.bw_peak_gbps),
                   finite(r.bw_avg_gbps), finite(r.msg_rate_mpps));
      break;
    case Kind::kLatency:
      std::fprintf(f,
                   ",\"t_min_us\":%.9g,\"t_max_us\":%.9g,\"t_typical_us\":%.9g,\"t_avg_us\":%.9g,\"t_stdev_us\":%.9g,"
                   "\"p99_us\":%.9g,\"p999_us\":%.9g",
                   finite(r.t_min_us), finite(r.t_max_us), finite(r.t_typical_us), finite(r.t_avg_us),
                   finite(r.t_stdev_us), finite(r.p99_us), finite(r.p999_us));
      break;
    case Kind::kCycles: std::fprintf(f, ",\"cycles_per_sec\":%.9g", finite(r.cycles_per_sec)); break;
    case Kind::kCopy: std::fprintf(f, ",\"bw_avg_gbps\":%.9g", finite(r.bw_avg_gbps)); break;
  }
  std::fputs("}", f);
}

}  // namespace

void write_json(FILE* f, const RunReport& r) {
  std::fprintf(f, "{\"tool\":\"ndperf\",\"mode\":\"%s\",\"progress\":\"%s\",\"completions\":\"%s\",\"tests\":[",
               role_name(r.mode), r.drive == Drive::kThread ? "thread" : "workers", r.events ? "notify" : "polled");
  for (size_t i = 0; i < r.tests.size(); i++) {
    const TestResult& t = r.tests[i];
    std::fprintf(f, "%s\n {\"test\":\"%s\",\"results\":[", i ? "," : "", name(t.test));
    for (size_t j = 0; j < t.rows.size(); j++) {
      std::fputs(j ? ",\n  " : "\n  ", f);
      row(f, t.test, t.rows[j]);
    }
    std::fputs("]}", f);
  }
  std::fputs("\n]}\n", f);
}

}  // namespace ndnic::ndperf
