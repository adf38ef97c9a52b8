// ndperf: perftest for ndnic. RDMA bandwidth and latency tests (send_bw, write_bw, read_bw,
// atomic_bw, send_lat, write_lat, read_lat) and the remote-invalidation cycle (sendinv), driven
// through the Network Direct v1 API (atomics through ndnic's extension), with the baselines
// they are judged against measured by the same run on the same ports, lcores and buffers:
// raw UDP frames (raw_bw, raw_lat) and one core's memcpy. perftest's options and table
// layout; JSON, CSV and a gnuplot PNG of the results.
//
//   ndperf [EAL args --] [options]                                    both ends here
//   ndperf [EAL args --] --server --dev=DEV --ip=A.B.C.D               the server
//   ndperf [EAL args --] --client=IP --dev=DEV --ip=A.B.C.D [options]  the client
#include <signal.h>

#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include <rte_lcore.h>

#include "ndnic/port.h"
#include "tools/nd_app/eal.h"
#include "tools/nd_app/halt.h"
#include "tools/ndperf/launch.h"
#include "tools/ndperf/node.h"
#include "tools/ndperf/perftest/options.h"
#include "tools/ndperf/report/output.h"
#include "tools/ndperf/roles.h"

namespace ndnic::ndperf {
namespace {

/// Both ends here: the server on a thread, the client on the main lcore. Each side stops the
/// other's waits when it fails (a process cannot rely on its peer exiting to end them).
bool run_embedded(Node& server_node, Node& client_node, const Options& o, RunReport* report) {
  nd_app::Halt server_halt(false), client_halt(false);
  RunReport served;
  bool server_ok = false;
  std::thread server([&] {
    pin_server_thread();
    // An EAL thread of its own (an lcore id): its mempool caches, as a worker lcore has.
    const bool registered = rte_thread_register() == 0;
    server_ok = run_server(server_node, o, server_halt, false, &served);
    if (!server_ok) client_halt.abort();
    if (registered) rte_thread_unregister();
  });
  pin_client_thread();
  const bool client_ok = run_client(client_node, o, kEmbeddedServerIpv4, client_halt, report);
  if (!client_ok) server_halt.abort();
  server.join();
  return client_ok && server_ok;
}

int run(int argc, char** argv) {
  // --perftest: one test against perftest itself on another host (perftest/flow.cc).
  if (perftest::requested(program_args(argc, argv))) return perftest::perftest_main(argc, argv);
  // Our options first, so --help and usage errors answer without starting EAL.
  const Parsed parsed = parse_options(program_args(argc, argv));
  if (!parsed.options) return parsed.exit_code;
  Options o = *parsed.options;
  OutputFiles out;
  if (!out.open(o)) return 1;
  // A vhost-user peer that has exited must not kill us with SIGPIPE while our port closes.
  signal(SIGPIPE, SIG_IGN);
  nd_app::install_sigint();
  // The lcore map is chosen before EAL pins this thread; vhost-user's set-up chatter is left out.
  if (!nd_app::start_eal("ndperf", argc, argv, {"--lcores", default_lcores(o)}, nullptr,
                         {{"--log-level", "lib.vhost.*:warning"}}))
    return 1;
  place_threads(&o);
  resolve_threads(&o);
  RunReport report;
  report.mode = o.role;
  report.drive = o.drive;
  report.events = o.events;
  bool ok = false;
  {
    std::vector<std::unique_ptr<Node>> nodes;
    if (open_nodes(o, layout_for(o), &nodes)) {
      nd_app::Halt halt(o.role == Role::kServer);
      switch (o.role) {
        case Role::kEmbedded: ok = run_embedded(*nodes[0], *nodes[1], o, &report); break;
        case Role::kServer: ok = run_server(*nodes[0], o, halt, true, &report); break;
        case Role::kClient: ok = run_client(*nodes[0], o, o.peer_ipv4, halt, &report); break;
      }
    }
  }  // the nodes close: every device stopped, every port closed
  if (nd_app::sigint_requested()) std::fprintf(stderr, "ndperf: interrupted: the figures so far are above\n");
  ok = out.write(report) && ok;
  glue::eal_cleanup();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace ndnic::ndperf

int main(int argc, char** argv) { return ndnic::ndperf::run(argc, argv); }
