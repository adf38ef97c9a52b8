#include "tools/ndperf/halves.h"

#include "tools/ndperf/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {

void print_test_banner(const Session& s, const Plan& p, const ClientEnv& env, uint32_t cq_moderation,
                       const std::string& note) {
  BannerInfo b;
  b.qps = env.whole_qps ? env.whole_qps : test_qps(p);
  b.depth = info(p.test).kind == Kind::kLatency ? 1 : p.depth;
  b.cq_moderation = cq_moderation;
  b.mtu = p.mtu;
  b.link = env.link;
  b.events = s.options().events;
  b.progress = drive_name(s.options().drive);
  b.note = note;
  if (p.groups > 1 && note.empty())
    b.note = std::to_string(p.groups) + " application threads per node, each with its QPs, its CQ and its worker lcore";
  print_banner(p.test, b);
}

uint64_t iterations(const Options& o, Test t, uint32_t size) {
  if (o.duration_s) return 0;
  return o.iters ? o.iters : default_iters(t, size);
}

bool run_over(const Options& o, uint64_t t0, uint64_t done, uint64_t iters) {
  if (sigint_requested()) return true;
  if (iters) return done >= iters;
  return now_tsc() - t0 >= uint64_t(o.duration_s * tsc_hz());
}

}  // namespace ndnic::ndperf
