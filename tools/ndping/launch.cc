#include "tools/nd_app/eal.h"
#include "tools/ndping/launch.h"

#include <signal.h>

#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <rte_lcore.h>

#include "ndnic/port.h"
#include "tools/nd_app/lcores.h"
#include "tools/nd_app/node.h"

namespace ndnic::ndping {
namespace {

// The application threads: in the embedded mode the client (on the main lcore) and the
// server (a thread the main lcore starts, so on the same processors); otherwise one.
int app_threads(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }
/// Each node's device polls on a worker lcore of its own.
size_t workers_needed(const Options& o) { return o.role == Role::kEmbedded ? 2 : 1; }

/// EAL's --lcores when the user gave none (see nd_app/lcores.h).
std::string default_lcores(const Options& o) {
  return nd_app::default_lcores(size_t(app_threads(o)), workers_needed(o));
}

bool run_embedded(const Options& o, const Halves& h) {
  // Both connections live here, past both threads, so either side can stop the other's
  // waits when it fails (one process cannot rely on a peer that exits and disconnects).
  Connection server_conn(o, "server");
  Connection client_conn(o, "client");
  std::promise<bool> listening;
  bool server_ok = false;
  std::thread server([&] {
    bool told = false;
    server_ok = h.server(server_conn, o, nd_app::kEmbeddedServerIpv4, [&](bool ok) {
      if (!told) listening.set_value(ok);
      told = true;
    });
    if (!told) listening.set_value(false);
    if (!server_ok) client_conn.abort();
  });
  bool client_ok = listening.get_future().get();
  if (client_ok) client_ok = h.client(client_conn, o, nd_app::kEmbeddedClientIpv4, nd_app::kEmbeddedServerIpv4);
  if (!client_ok) server_conn.abort();
  server.join();
  return client_ok && server_ok;
}

/// The SDK polls by default. ndnic's devices poll on worker lcores of their own, though, and a
/// polling application thread that shares a processor with one, or with the other application
/// thread, takes turns with it in scheduler time slices: milliseconds per message. So without
/// -b or -p, the waits poll only when the lcores EAL runs give each busy thread a processor:
/// the workers' processors apart from each other and from the main lcore's, which has one per
/// application thread.
void choose_waits(Options* o) {
  if (o->wait_chosen) return;
  const bool apart = nd_app::threads_apart(size_t(app_threads(*o)), workers_needed(*o));
  o->blocking = !apart;
  if (o->blocking)
    std::printf("%s: no processor of its own for each device worker and application thread: "
                "waiting with Notify (-p polls anyway)\n",
                tool_name(o->tool));
}

/// The devices, started the way an ND application starts its provider. Embedded: two over a
/// net_ring pair, one worker lcore each; otherwise one on --dev with our --ip, on one worker
/// lcore. A device polls on a worker lcore of its own (ND calls never drive the engine).
bool open_nodes(const Options& o, nd_app::Node* server, nd_app::Node* client) {
  const char* tool = tool_name(o.tool);
  const std::vector<unsigned> workers = nd_app::worker_lcores();
  if (!nd_app::enough_workers(tool, workers, workers_needed(o))) return false;
  nd_app::NodeConfig c;
  c.open_adapter = false;  // each Connection opens its own, by address
  if (o.role == Role::kEmbedded) {
    nd_app::NodeConfig with_capture = c;
    with_capture.capture = o.capture;  // the client's port
    return nd_app::open_pair(tool, workers, 1, c, with_capture, server, client, tool, tool);
  }
  c.device = o.device;
  c.ipv4 = o.ipv4;
  c.capture = o.capture;
  c.lcores = {workers[0]};
  if (server->open(c)) return true;
  std::fprintf(stderr, "%s: %s\n", tool, server->error().c_str());
  return false;
}

int run(const Options& o, const Halves& h) {
  nd_app::Node server_node, client_node;
  if (!open_nodes(o, &server_node, &client_node)) return 1;
  bool ok = false;
  {
    if (o.role == Role::kEmbedded) {
      ok = run_embedded(o, h);
    } else if (o.role == Role::kServer) {
      Connection c(o, "server");
      ok = h.server(c, o, o.ipv4, [&](bool listens) {
        if (listens) std::printf("%s: server listening on port %u\n", tool_name(o.tool), unsigned(o.port));
        std::fflush(stdout);
      });
    } else {
      Connection c(o, "client");
      ok = h.client(c, o, o.ipv4, o.peer_ipv4);
    }
  }  // every ND object released before the adapters go
  client_node.close();
  server_node.close();
  return ok ? 0 : 1;
}

}  // namespace

std::optional<Request> take_request(Connection& c, const Options& o, uint32_t ipv4, const Limits& lim, size_t bytes,
                                    const Ready& ready) {
  if (!c.open(ipv4, lim, bytes) || !c.listen(o.port)) {
    ready(false);
    return std::nullopt;
  }
  ready(true);
  std::vector<uint8_t> data;
  if (!c.get_request(&data)) return std::nullopt;
  const std::optional<Request> req = decode_request(data.data(), data.size());
  if (req && req->tool == o.tool) return req;
  c.reject();
  c.fail(std::string("refused a connection that is not from an ") + tool_name(o.tool) + " client of this version");
  return std::nullopt;
}

int launch(Tool tool, int argc, char** argv, const Halves& halves) {
  // Our options first, so --help and usage errors answer without starting EAL.
  const Parsed parsed = parse_options(tool, program_args(argc, argv));
  if (!parsed.options) return parsed.exit_code;
  // A vhost-user peer that has exited must not kill us with SIGPIPE while our port closes.
  signal(SIGPIPE, SIG_IGN);
  Options o = *parsed.options;
  // The lcore map is chosen before EAL pins this thread.
  if (!nd_app::start_eal(tool_name(tool), argc, argv, {"--lcores", default_lcores(o)})) return 1;
  choose_waits(&o);
  const int rc = run(o, halves);
  glue::eal_cleanup();
  return rc;
}

}  // namespace ndnic::ndping
