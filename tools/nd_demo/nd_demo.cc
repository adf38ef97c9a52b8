// nd_demo: the mission, narrated, over the ND v1 API only (RoCEv2 on the wire, IB CM on QP1):
//
//   owner: register memory, create a window, bind it, send its descriptor to the peer
//   peer:  RDMA WRITE and RDMA READ through the window, then SendAndInvalidate it
//   owner: the window's invalidate result, then the receive (in that order)
//   peer:  a further WRITE through the old token is refused (access error on the owner's side;
//          RC takes the connection down, as on any RoCE NIC)
//   owner: reconnected, the window is bound again (new token) and the peer's WRITE works
//
// By default both sides run in this process over a net_ring pair (no NIC), each an ndnic
// device on a worker lcore. With --role=passive (the owner) or --role=active (the peer) this
// process is one side on a real port (--dev, --ip), e.g. two containers over their eth0.
// Every step checks its result; the exit status is 0 only when each did what it should.
//
//   nd_demo [EAL args]
//   nd_demo [EAL args] -- --role=passive|active --dev=DEVARGS --ip=A.B.C.D [--peer=A.B.C.D]
//                         [--wait=S] [--capture=FILE]
#include <csignal>
#include <cstdio>

#include "ndnic/port.h"
#include "tools/nd_app/eal.h"
#include "tools/nd_app/lcores.h"
#include "tools/nd_demo/options.h"
#include "tools/nd_demo/roles.h"

int main(int argc, char** argv) {
  using namespace ndnic;
  const nd_demo::Parsed parsed = nd_demo::parse_options(nd_demo::program_args(argc, argv));
  if (!parsed.options) return parsed.exit_code;
  const nd_demo::Options& o = *parsed.options;
  const bool both = o.role == nd_demo::Role::kBoth;
  // A vhost-user peer that has exited must not kill us with SIGPIPE while our port closes.
  signal(SIGPIPE, SIG_IGN);
  // The main thread narrates; each node's device polls on a worker lcore of its own.
  if (!nd_app::start_eal("nd_demo", argc, argv, {"--lcores", nd_app::default_lcores(1, both ? 2 : 1)})) return 1;
  int rc = 1;
  if (o.role == nd_demo::Role::kPassive) {
    rc = nd_demo::run_passive(o);
  } else if (o.role == nd_demo::Role::kActive) {
    rc = nd_demo::run_active(o);
  } else {
    rc = nd_demo::run_one_process();
  }
  glue::eal_cleanup();
  return rc;
}
