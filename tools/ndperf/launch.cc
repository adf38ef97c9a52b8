#include "tools/ndperf/launch.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <rte_lcore.h>

#include "tools/nd_app/lcores.h"

namespace ndnic::ndperf {
namespace {

/// The application threads: in the embedded mode the client (the main lcore) and the server
/// (a thread the main lcore starts); otherwise one.
size_t app_threads(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

struct Placement {
  cpu_set_t client;                       ///< the main lcore's thread
  cpu_set_t server;                       ///< the embedded server's thread
  unsigned server_lcore = RTE_MAX_LCORE;  ///< a worker lcore whose processors it took, if any
  size_t apps = 1;                        ///< application threads (per group): app_threads()
  bool done = false;
};
Placement g_place;

cpu_set_t lcore_cpus(unsigned lcore) {
  rte_cpuset_t s = rte_lcore_cpuset(lcore);
  cpu_set_t c;
  CPU_ZERO(&c);
  CPU_OR(&c, &c, &s);
  return c;
}

cpu_set_t one_cpu(const cpu_set_t& from, int nth) {
  cpu_set_t c;
  CPU_ZERO(&c);
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &from) && seen++ == nth) CPU_SET(cpu, &c);
  return c;
}

bool disjoint(const cpu_set_t& a, const cpu_set_t& b) {
  cpu_set_t both;
  CPU_AND(&both, &a, &b);
  return CPU_COUNT(&both) == 0;
}

std::vector<unsigned> all_workers() {
  std::vector<unsigned> out;
  for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE; l = rte_get_next_lcore(l, 1, 0)) out.push_back(l);
  return out;
}

/// Every device worker on processors no other busy thread (worker or application) uses.
bool workers_apart(const std::vector<unsigned>& workers) {
  cpu_set_t taken;
  CPU_OR(&taken, &g_place.client, &g_place.server);
  for (unsigned l : workers) {
    const cpu_set_t w = lcore_cpus(l);
    if (!disjoint(w, taken)) return false;
    CPU_OR(&taken, &taken, &w);
  }
  return true;
}

void pin(const cpu_set_t& cpus) {
  if (CPU_COUNT(&cpus) > 0) pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
}

}  // namespace

size_t workers_needed(const Options& o) {
  return o.drive == Drive::kThread ? 0 : o.role == Role::kEmbedded ? 2 : 1;
}

std::string default_lcores(const Options& o) {
  // Made before the progress mode is known: room for worker lcores, which run-to-completion
  // leaves idle (an idle worker lcore sleeps in EAL; it costs nothing).
  return nd_app::default_lcores(app_threads(o), o.role == Role::kEmbedded ? 2 : 1);
}

void place_threads(Options* o) {
  const cpu_set_t main_cpus = lcore_cpus(rte_get_main_lcore());
  g_place.client = g_place.server = main_cpus;
  if (o->role == Role::kEmbedded) {
    const std::vector<unsigned> workers = all_workers();
    const size_t spare = workers.size() - std::min<size_t>(workers.size(), 2);
    if (CPU_COUNT(&main_cpus) >= 2) {
      // Two spinning application threads on one processor take turns in time slices: each
      // their own.
      g_place.client = one_cpu(main_cpus, 0);
      g_place.server = one_cpu(main_cpus, 1);
    } else if (!workers.empty() && (spare > 0 || (o->drive_chosen && o->drive == Drive::kThread))) {
      g_place.server_lcore = workers.back();
      g_place.server = lcore_cpus(g_place.server_lcore);
    }
  }
  g_place.apps = app_threads(*o);
  g_place.done = true;
  const bool apps_apart = disjoint(g_place.client, g_place.server) || o->role != Role::kEmbedded;
  const std::vector<unsigned> devs = device_lcores();
  const bool workers_ok = devs.size() >= (o->role == Role::kEmbedded ? 2u : 1u) && workers_apart(devs);
  if (!o->drive_chosen) o->drive = workers_ok ? Drive::kWorkers : Drive::kThread;
  // Polling wants a processor per busy thread; where two share one, Notify sleeps instead of
  // taking turns with the other (with workers; a thread that drives its device polls anyway).
  const bool apart = apps_apart && (o->drive == Drive::kThread || workers_ok);
  if (!o->wait_chosen) o->events = !apart && o->drive == Drive::kWorkers;
  std::printf("ndperf: progress: %s%s; completions: %s\n", drive_name(o->drive),
              o->drive_chosen ? "" : " (chosen for this machine's processors; --progress chooses)",
              o->events ? "Notify" : "polled");
  if (!apart)
    std::printf("ndperf: no processor of its own for each busy thread: %s\n",
                o->events ? "waiting for completions with Notify (--poll polls anyway)"
                          : "threads that share one hand it over after a few microseconds of empty looks");
  std::fflush(stdout);
}

std::vector<unsigned> device_lcores() {
  std::vector<unsigned> out;
  for (unsigned l : all_workers())
    if (l != g_place.server_lcore) out.push_back(l);
  return out;
}

void pin_client_thread() {
  if (g_place.done) pin(g_place.client);
}

void pin_server_thread() {
  if (g_place.done) pin(g_place.server);
}

void resolve_threads(Options* o) {
  if (o->threads) return;
  // As open_nodes deals them out: the embedded nodes take half the workers each.
  const size_t workers = device_lcores().size() / (o->role == Role::kEmbedded ? 2 : 1);
  const cpu_set_t main_cpus = lcore_cpus(rte_get_main_lcore());
  const size_t cpus = size_t(CPU_COUNT(&main_cpus));
  const size_t room = std::max<size_t>(1, cpus / app_threads(*o));
  o->threads = o->drive == Drive::kThread ? 1 : uint32_t(std::clamp<size_t>(std::min(workers, room), 1, o->qps));
}

GroupThread::GroupThread(bool server, uint32_t group) {
  if (group == 0) return;
  // The embedded client's groups on even processors of the main lcore, the server's on odd.
  const cpu_set_t main_cpus = lcore_cpus(rte_get_main_lcore());
  const int n = CPU_COUNT(&main_cpus);
  const size_t per = g_place.apps;
  pin(one_cpu(main_cpus, int((group * per + (server && per == 2 ? 1 : 0)) % size_t(n))));
  registered_ = rte_thread_register() == 0;
}

GroupThread::~GroupThread() {
  if (registered_) rte_thread_unregister();
}

}  // namespace ndnic::ndperf
