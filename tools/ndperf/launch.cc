#include "tools/ndperf/launch.h"

#include <cstdio>
#include <vector>

#include <rte_lcore.h>

#include "tools/nd_node/lcores.h"

namespace ndnic::ndperf {
namespace {

/// The application threads: in the embedded mode the client (the main lcore) and the server
/// (a thread the main lcore starts, so on the same processors); otherwise one.
size_t app_threads(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

}  // namespace

size_t workers_needed(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

std::string default_lcores(const Options& o) {
  return nd_node::default_lcores(app_threads(o), workers_needed(o));
}

void choose_waits(Options* o) {
  if (o->wait_chosen) return;
  // A polling thread that shares a processor with a device's worker lcore (which never
  // sleeps) or with the other application thread takes turns with it in scheduler time
  // slices: milliseconds per completion. Poll only when the workers are apart from each other
  // and from the main lcore, which has a processor per application thread.
  // Every worker lcore counts: with -q and more workers, a node's QPs spread over them.
  const bool apart = nd_node::threads_apart(app_threads(*o), RTE_MAX_LCORE);
  o->events = !apart;
  if (o->events)
    std::printf("ndperf: no processor of its own for each device worker and application thread: "
                "waiting for completions with Notify (--poll polls anyway)\n");
  std::fflush(stdout);
}

}  // namespace ndnic::ndperf
