// nd_peer: ndnic's side of the verbs interop scenarios (tests/interop/cases/verbs.sh) against
// verbs_peer on Linux rxe, written only against the ND v1 API (ndnic/ndspi.h,
// NdOpenV1Adapter) and ndnic's extension (ndnic/ndnic_ext.h); the protocol is in
// protocol.h.
//
//   nd_peer [EAL args] -- --server|--client HOST --scenario NAME-WHO [-p PORT]
//           --ip A.B.C.D --dev DEVARGS [--capture FILE] [--retry S]
//
// NAME-WHO: a scenario and its active side, "nd" (this program) or "rxe" (verbs_peer). Every
// check prints "ok <what>" or "FAIL <what>: got X expected Y"; the exit status is 0 only when
// every check passed, 2 when the connection could not be made.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ndnic/port.h"
#include "tests/interop/nd_peer/checks.h"
#include "tests/interop/nd_peer/peer.h"
#include "tests/interop/nd_peer/scenarios.h"
#include "tools/nd_app/arguments.h"
#include "tools/nd_app/eal.h"
#include "tools/nd_app/node.h"

namespace {

using namespace ndnic;

struct Options {
  nd_peer::ConnectOptions connect;
  const nd_peer::Scenario* scenario = nullptr;
  std::string scenario_name;
  bool active = false;
  uint32_t ipv4 = 0;
  std::string device;
  std::string capture;
};

bool usage(const std::string& why) {
  std::fprintf(stderr,
               "nd_peer: %s\nusage: nd_peer [EAL args] -- --server|--client HOST --scenario NAME-WHO [-p PORT]\n"
               "         --ip A.B.C.D --dev DEVARGS [--capture FILE] [--retry S]\n"
               "  NAME: %s; WHO: nd|rxe (the active side)\n",
               why.c_str(), nd_peer::scenario_names().c_str());
  return false;
}

bool parse(const std::vector<std::string>& args, Options* o) {
  bool client = false;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--server") {
      o->connect.server = true;
    } else if (a == "--client" && has_value) {
      client = true;
      if (!nd_app::parse_ipv4(args[++i].c_str(), &o->connect.peer_ipv4))
        return usage("--client wants an IPv4 address");
    } else if (a == "--ip" && has_value) {
      if (!nd_app::parse_ipv4(args[++i].c_str(), &o->ipv4)) return usage("--ip wants an IPv4 address");
    } else if (a == "--dev" && has_value) {
      o->device = args[++i];
    } else if (a == "--capture" && has_value) {
      o->capture = args[++i];
    } else if (a == "-p" && has_value) {
      if (!nd_app::parse_port(args[++i].c_str(), &o->connect.port)) return usage("-p wants a port 1..65535");
    } else if (a == "--retry" && has_value) {
      if (!nd_app::parse_seconds(args[++i].c_str(), 0, &o->connect.retry_s))
        return usage("--retry wants seconds 0..3600");
    } else if (a == "--scenario" && has_value) {
      o->scenario_name = args[++i];
    } else {
      return usage("unknown or incomplete argument '" + a + "'");
    }
  }
  if (o->connect.server == client) return usage("give exactly one of --server and --client HOST");
  if (!o->ipv4 || o->device.empty()) return usage("--ip and --dev are required");
  const size_t dash = o->scenario_name.rfind('-');
  if (dash == std::string::npos) return usage("--scenario wants NAME-nd or NAME-rxe");
  const std::string who = o->scenario_name.substr(dash + 1);
  if (who != "nd" && who != "rxe") return usage("--scenario wants NAME-nd or NAME-rxe");
  o->active = who == "nd";
  o->scenario = nd_peer::find_scenario(o->scenario_name.substr(0, dash));
  if (!o->scenario) return usage("unknown scenario '" + o->scenario_name + "'");
  o->connect.post_pool = o->active || !o->scenario->receiver_posts_nothing;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  if (!nd_app::start_eal("nd_peer", argc, argv, {"-l", "0,1"}, &args)) return 1;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int rc = 1;
  Options o;
  if (parse(args, &o)) {
    nd_app::Node node;
    nd_app::NodeConfig nc;
    nc.device = o.device;
    nc.ipv4 = o.ipv4;
    nc.capture = o.capture;
    if (!o.active) nc.rnr_retry_count = o.scenario->receiver_asks_rnr_retry;
    if (!node.open(nc)) {
      std::fprintf(stderr, "nd_peer: %s\n", node.error().c_str());
    } else {
      nd_peer::Peer p(node.adapter());
      if (!p.open(o.connect)) {
        rc = 2;
      } else {
        std::printf("connected: scenario %s, ndnic is the %s side\n", o.scenario_name.c_str(),
                    o.active ? "active" : "passive");
        (o.active ? o.scenario->active : o.scenario->passive)(p);
        p.disconnect();
        std::printf("nd_peer: %u ok, %u FAIL\n", nd_peer::oks(), nd_peer::fails());
        rc = nd_peer::fails() || !nd_peer::oks() ? 1 : 0;
      }
    }
  }
  glue::eal_cleanup();
  return rc;
}
