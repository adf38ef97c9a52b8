#include "tools/nd_app/lcores.h"

#include <sched.h>

#include <rte_lcore.h>

namespace ndnic::nd_app {
namespace {

std::string cpu_list(const std::vector<int>& cpus, size_t from, size_t n) {
  std::string s = "(";
  for (size_t i = from; i < from + n; i++) s.append(i > from ? "," : "").append(std::to_string(cpus[i]));
  return s.append(")");
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

std::string default_lcores(size_t app_threads, size_t workers) {
  const std::vector<int> cpus = allowed_cpus();
  const bool room = cpus.size() >= app_threads + workers;
  std::string map = "0@" + cpu_list(cpus, 0, room ? app_threads : cpus.size());
  for (size_t w = 0; w < workers; w++) {
    const int cpu = room ? cpus[app_threads + w] : cpus[cpus.size() - 1 - w % cpus.size()];
    map.append(",").append(std::to_string(w + 1)).append("@").append(std::to_string(cpu));
  }
  return map;
}

bool threads_apart(size_t app_threads, size_t workers) {
  cpu_set_t taken;
  CPU_ZERO(&taken);
  bool apart = true;
  size_t n = 0;
  for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE && n < workers;
       l = rte_get_next_lcore(l, 1, 0), n++) {
    rte_cpuset_t w = rte_lcore_cpuset(l);
    cpu_set_t both;
    CPU_AND(&both, &w, &taken);
    apart = apart && CPU_COUNT(&both) == 0;
    CPU_OR(&taken, &taken, &w);
  }
  rte_cpuset_t main_cpus = rte_lcore_cpuset(rte_get_main_lcore());
  cpu_set_t both;
  CPU_AND(&both, &main_cpus, &taken);
  return apart && CPU_COUNT(&both) == 0 && size_t(CPU_COUNT(&main_cpus)) >= app_threads;
}

}  // namespace ndnic::nd_app
