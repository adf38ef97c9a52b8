// nic_peer: one ndnic engine in its own process, talking RoCEv2 to another over a
// vhost-user link (run.sh starts both). Usage:
//   nic_peer [EAL args] -- --role server|client --device NAME --ip A.B.C.D --peer-ip A.B.C.D
//            --channel SOCKET [--faults RATE] [--capture PREFIX] [--watchdog SECONDS]
//            [--bulk-pieces N]
// The client drives the phases in scenario.h, the server checks what lands in its memory; each
// exits 0 only when all its checks passed.
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/nic/xproc/peer.h"

using namespace ndnic;
using namespace ndnic::nic::xproc;

namespace {

constexpr int kConnectMs = 20000;  ///< the other process is starting too

// A hung transport must fail the test, not stall it: say so and leave without cleanup.
void on_alarm(int) {
  constexpr char kMsg[] = "FAIL: watchdog: the run did not finish in time\n";
  ssize_t ignored = write(STDOUT_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
  _exit(3);
}

bool parse_ip(const std::string& s, uint32_t* ip) {
  in_addr a;
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *ip = ntohl(a.s_addr);
  return true;
}

bool parse(const std::vector<std::string>& args, Options* o, std::string* why) {
  std::string ip, peer_ip;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& k = args[i];
    const std::string& v = args[i + 1];
    if (k == "--role") o->role = v;
    else if (k == "--device") o->device = v;
    else if (k == "--ip") ip = v;
    else if (k == "--peer-ip") peer_ip = v;
    else if (k == "--channel") o->channel = v;
    else if (k == "--capture") o->capture = v;  // a prefix: both sides may be given the same one
    else if (k == "--faults") o->faults = std::atof(v.c_str());
    else if (k == "--watchdog") o->watchdog_s = std::atoi(v.c_str());
    else if (k == "--bulk-pieces") o->bulk_pieces = uint32_t(std::atoi(v.c_str()));
    else return *why = "unknown option " + k, false;
  }
  if (args.size() % 2) return *why = "option without a value: " + args.back(), false;
  if (o->role != "server" && o->role != "client") return *why = "--role server|client", false;
  if (o->device.empty() || o->channel.empty()) return *why = "--device and --channel are required", false;
  if (!parse_ip(ip, &o->ip) || !parse_ip(peer_ip, &o->peer_ip)) return *why = "--ip and --peer-ip", false;
  if (!o->capture.empty()) o->capture += "-" + o->role + ".pcap";
  if (o->bulk_pieces == 0 || (o->bulk_pieces & (o->bulk_pieces - 1))) return *why = "--bulk-pieces takes a power of two", false;
  if (o->faults < 0 || o->faults >= 0.5) return *why = "--faults takes a rate below 0.5", false;
  return true;
}

// Connects the side channel, swaps endpoints, connects the QPs, runs the role.
bool run(Peer& peer, SideChannel& ch, const Options& o) {
  const bool server = o.role == "server";
  const bool linked = server ? ch.accept(o.channel, peer.idle(), kConnectMs)
                             : ch.connect(o.channel, peer.idle(), kConnectMs);
  std::string line;
  Endpoint remote;
  if (!linked || !ch.send(peer.local().line()) || !ch.receive(&line, peer.idle(), kConnectMs))
    return peer.fail("side channel: " + ch.error());
  if (!remote.parse(line)) return peer.fail("side channel: not an endpoint: " + line);
  if (!peer.connect(remote)) return false;
  const bool ok = server ? run_server(peer, ch) : run_client(peer, ch, o.bulk_pieces);
  // Tell the peer why we stop, so it fails at once with the reason instead of timing out.
  if (!ok) ch.send(server ? "result fail: " + peer.fail.what : "fail: " + peer.fail.what);
  return ok;
}

// The server's vhost socket must outlive the client's virtio_user device, whose teardown
// talks to it: the server leaves only when the client has closed the side channel, which the
// client does after closing its port.
void wait_for_hangup(Peer& peer, SideChannel& ch) {
  std::string line;
  while (ch.receive(&line, peer.idle(), kConnectMs)) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  glue::EalDefaults defaults;
  defaults.options = {{"--no-pci", ""}, {"--log-level", "lib.eal:warning"},
                      {"--log-level", "lib.vhost.config:warning"}, {"--no-telemetry", ""}};
  defaults.memory_mb = 512;
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) return std::printf("FAIL: %s\n", eal.error.c_str()), 1;
  Options o;
  std::string why;
  if (!parse(eal.args, &o, &why)) return std::printf("FAIL: usage: %s\n", why.c_str()), 2;
  signal(SIGALRM, on_alarm);
  signal(SIGPIPE, SIG_IGN);  // a peer that went away is reported through errors, not a signal
  alarm(unsigned(o.watchdog_s));

  Peer peer;
  SideChannel ch;
  const bool ok = peer.open(o) && run(peer, ch, o);
  peer.print_counters(o.role.c_str());
  if (o.role == "server") wait_for_hangup(peer, ch);
  peer.close();
  ch.close();
  glue::eal_cleanup();
  if (!ok) return std::printf("%s: FAIL: %s\n", o.role.c_str(), peer.fail.what.c_str()), 1;
  std::printf("%s: PASS\n", o.role.c_str());
  return 0;
}
