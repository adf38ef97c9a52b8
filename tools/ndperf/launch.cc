#include "tools/ndperf/launch.h"

#include <sched.h>

#include <cstdio>
#include <vector>

#include <rte_lcore.h>

namespace ndnic::ndperf {
namespace {

/// The application threads: in the embedded mode the client (the main lcore) and the server
/// (a thread the main lcore starts, so on the same processors); otherwise one.
size_t app_threads(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

std::string cpu_list(const std::vector<int>& cpus, size_t from, size_t n) {
  std::string s = "(";
  for (size_t i = from; i < from + n; i++) s.append(i > from ? "," : "").append(std::to_string(cpus[i]));
  return s.append(")");
}

}  // namespace

size_t workers_needed(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

std::string default_lcores(const Options& o) {
  // lcore 0 (the application threads) on processors of its own and each device's worker on
  // one of its own when there are enough; otherwise everything shares what there is, the
  // workers from the last processor down (two processors: "0@(0,1),1@1,2@0").
  const std::vector<int> cpus = allowed_cpus();
  const size_t apps = app_threads(o), workers = workers_needed(o);
  const bool room = cpus.size() >= apps + workers;
  std::string map = "0@" + cpu_list(cpus, 0, room ? apps : cpus.size());
  for (size_t w = 0; w < workers; w++) {
    const int cpu = room ? cpus[apps + w] : cpus[cpus.size() - 1 - w % cpus.size()];
    map.append(",").append(std::to_string(w + 1)).append("@").append(std::to_string(cpu));
  }
  return map;
}

void choose_waits(Options* o) {
  if (o->wait_chosen) return;
  // A polling thread that shares a processor with a device's worker lcore (which never
  // sleeps) or with the other application thread takes turns with it in scheduler time
  // slices: milliseconds per completion. Poll only when the workers are apart from each other
  // and from the main lcore, which has a processor per application thread.
  cpu_set_t taken;
  CPU_ZERO(&taken);
  bool apart = true;
  for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE; l = rte_get_next_lcore(l, 1, 0)) {
    rte_cpuset_t w = rte_lcore_cpuset(l);
    cpu_set_t both;
    CPU_AND(&both, &w, &taken);
    apart = apart && CPU_COUNT(&both) == 0;
    CPU_OR(&taken, &taken, &w);
  }
  rte_cpuset_t main_cpus = rte_lcore_cpuset(rte_get_main_lcore());
  cpu_set_t both;
  CPU_AND(&both, &main_cpus, &taken);
  apart = apart && CPU_COUNT(&both) == 0 && size_t(CPU_COUNT(&main_cpus)) >= app_threads(*o);
  o->events = !apart;
  if (o->events)
    std::printf("ndperf: no processor of its own for each device worker and application thread: "
                "waiting for completions with Notify (--poll polls anyway)\n");
  std::fflush(stdout);
}

}  // namespace ndnic::ndperf
