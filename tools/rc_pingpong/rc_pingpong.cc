// rc_pingpong: rdma-core's ibv_rc_pingpong on an ndnic port, so that ndnic can be checked
// against any RoCEv2 peer running the original (the Linux kernel's Soft-RoCE in tests/interop).
//
//   rc_pingpong [EAL args] -- [-p port] [-s size] [-n iters] [-m mtu] [-g gid_idx]
//                             [--ip A.B.C.D] [--dev DEVICE] [--capture FILE] [--retry S] [host]
//
// Same TCP exchange, same message flow, same summary lines as the original. The RDMA device is
// an ndnic engine on a DPDK port polled by this thread; it needs its own IPv4 address on the
// segment (--ip) and answers ARP for it. The TCP side channel uses the host's sockets.
#include <cstdio>

#include "ndnic/port.h"
#include "tools/rc_pingpong/exchange.h"
#include "tools/rc_pingpong/options.h"
#include "tools/rc_pingpong/session.h"

namespace {

using namespace ndnic;
using namespace ndnic::rc_pingpong;

void print_address(const char* which, const Dest& d) {
  std::printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", which, d.lid, d.qpn, d.psn,
              raw_qp::gid_text(d.gid).c_str());
}

// The original's two summary lines, figures computed the same way.
void print_summary(const Options& o, const Figures& f) {
  const long long bytes = static_cast<long long>(o.size) * o.iters * 2;
  std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, f.usec / 1000000., bytes * 8. / f.usec);
  std::printf("%u iters in %.2f seconds = %.2f usec/iter\n", o.iters, f.usec / 1000000., f.usec / o.iters);
}

int run(const Options& o) {
  Session s(o);
  if (!s.open()) return 1;
  print_address("local address: ", s.local());
  std::fflush(stdout);
  const bool client = !o.host.empty();
  const Idle idle = [&] { s.poll(); };
  const std::optional<Peer> peer =
      client ? client_exchange(o.host, o.port, s.local(), o.retry_s, idle)
             : server_exchange(o.port, s.local(), [&](const Peer& p) { return s.connect(p); }, idle);
  if (!peer) return 1;
  print_address("remote address:", peer->dest);
  std::fflush(stdout);
  if (client && !s.connect(*peer)) return 1;
  Figures f;
  const bool ok = s.run(client, &f);
  if (ok) print_summary(o, f);
  std::fflush(stdout);  // the summary before the counters line when both go to one file
  s.linger();
  std::fprintf(stderr, "rc_pingpong: %s\n", s.counters().c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  glue::EalDefaults defaults;
  defaults.options = {{"-l", "0"}, {"--no-pci", ""}, {"--log-level", "lib.eal:warning"}, {"--no-telemetry", ""}};
  const glue::EalResult eal = glue::eal_init(argc, argv, defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "rc_pingpong: %s\n", eal.error.c_str());
    return 1;
  }
  int rc = 1;
  if (const std::optional<Options> o = parse_options(eal.args)) rc = run(*o);
  glue::eal_cleanup();
  return rc;
}
