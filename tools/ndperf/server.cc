#include <cstdio>

#include "tools/ndperf/baselines/raw_test.h"
#include "tools/ndperf/launch.h"
#include "tools/ndperf/lcore_run.h"
#include "tools/ndperf/nd/groups.h"
#include "tools/ndperf/nd/halves.h"
#include "tools/ndperf/roles.h"

namespace ndnic::ndperf {
namespace {

/// A split test (Plan::groups), whose first group's request came to `s`: the other groups
/// each on a thread, a session and a CQ (on worker g) of their own, listening on port + g.
bool serve_groups(Node& node, const Options& o, nd_app::Halt& halt, Session& s, const Plan& first) {
  return run_groups(first.groups, [&](uint32_t g) {
    if (g == 0) {
      return s.set_group(first) && bw_server(s, first);
    }
    GroupThread thread(true, g);
    Session sg(o, node, "server", halt, true);
    Plan p;
    if (!sg.open() || !sg.listen(uint16_t(o.port + g)) || !sg.get_request(&p)) return false;
    if (p.test != first.test || p.index != first.index || p.groups != first.groups || p.group != g) {
      sg.reject();
      return sg.fail("the connection on port " + std::to_string(o.port + g) + " is not for group " +
                     std::to_string(g) + " of this test");
    }
    return sg.set_group(p) && bw_server(sg, p);
  });
}

/// What one connection request asked for: serve it. `raw` is set for a baseline, which runs
/// after the session is gone.
bool serve_request(Node& node, const Options& o, nd_app::Halt& halt, Session& s, const Plan& p, bool* raw) {
  switch (p.test) {
    case Test::kCount:  // the client stopped early: nothing more comes
    case Test::kRawBw:
    case Test::kRawLat:
      *raw = p.test != Test::kCount;
      return s.create_cq(4) && s.accept({1, 1}, [](uint32_t) { return true; }) && s.wait_disconnect();
    default: break;
  }
  switch (info(p.test).kind) {
    case Kind::kLatency: return lat_server(s, p);
    case Kind::kCycles: return sendinv_server(s, p);
    default: return p.groups > 1 ? serve_groups(node, o, halt, s, p) : bw_server(s, p);
  }
}

}  // namespace

bool run_server(Node& node, const Options& o, nd_app::Halt& halt, bool announce, RunReport* report) {
  for (bool first = true;; first = false) {
    Plan p;
    bool raw = false;
    {
      Session s(o, node, "server", halt, true);
      if (!s.open() || !s.listen(o.port)) return false;
      if (announce && first) {
        std::printf("ndperf: server listening on port %u\n", unsigned(o.port));
        std::fflush(stdout);
      }
      if (!s.get_request(&p)) return s.halted() && !halt.aborted();
      if (p.test != Test::kCount && p.mtu != o.mtu) {
        s.reject();
        return s.fail("the client runs -m " + std::to_string(p.mtu) + ", this server -m " + std::to_string(o.mtu) +
                      ": give both the same MTU");
      }
      if (announce && p.test != Test::kCount) {
        std::printf("ndperf: serving %s (%u of %u)\n", name(p.test), unsigned(p.index) + 1, unsigned(p.count));
        std::fflush(stdout);
      }
      if (p.test != Test::kCount) report->tests.push_back(TestResult{p.test, {}});
      if (!serve_request(node, o, halt, s, p, &raw)) return s.halted() && !halt.aborted();
    }  // every ND object gone before the device may stop
    if (p.test == Test::kCount) return true;
    if (raw) {
      node.stop_device();
      const bool ok = node.run_on_own_lcore([&] { return raw_server(node, halt); });
      if (!node.start_device()) return false;
      if (!ok) return halt.now() && !halt.aborted();
    }
    if (p.index + 1 >= p.count) return true;
  }
}

}  // namespace ndnic::ndperf
