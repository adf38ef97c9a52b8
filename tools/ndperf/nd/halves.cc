#include "tools/ndperf/nd/halves.h"

#include "tools/ndperf/report/report.h"

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

void keep_row(const Plan& p, ClientEnv& env, const Row& row) {
  print_row(p.test, row);
  env.result->rows.push_back(row);
}


}  // namespace ndnic::ndperf
