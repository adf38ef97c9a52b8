// nd_rping: rdma-core's rping written against ndnic's ND v1 API. It interoperates with rping on
// any RoCEv2 stack (tests/interop runs it against the Linux kernel's Soft-RoCE) and shows a
// complete ND v1 program: adapter, listen/connect, endpoint, windows, Send/Read/Write.
//
//   nd_rping [EAL args] -- -s|-c [-vVd] [-S size] [-C count] [-a addr] [-p port]
//                          --ip A.B.C.D --dev DEVARGS [--capture FILE] [--retry S] [--timeout S]
//
// The ndnic device runs on a worker lcore (EAL default: -l 0,1); the program's thread only
// makes ND calls, as an application would.
#include <cstdio>

#include "ndnic/port.h"
#include "tools/nd_app/eal.h"
#include "tools/nd_app/node.h"
#include "tools/nd_rping/rping.h"

namespace ndnic::nd_rping {
int run_client(INDAdapter* adapter, const Options& o);
int run_server(INDAdapter* adapter, const Options& o);
}  // namespace ndnic::nd_rping

int main(int argc, char** argv) {
  using namespace ndnic;
  std::vector<std::string> args;
  if (!nd_app::start_eal("nd_rping", argc, argv, {"-l", "0,1"}, &args)) return 1;
  int rc = 1;
  nd_rping::Options o;
  if (nd_rping::parse_options(args, &o, &rc)) {
    nd_app::Node node;
    nd_app::NodeConfig nc;
    nc.device = o.device;
    nc.ipv4 = o.ipv4;
    nc.capture = o.capture;
    if (!node.open(nc)) {
      std::fprintf(stderr, "nd_rping: %s\n", node.error().c_str());
    } else {
      rc = o.server ? nd_rping::run_server(node.adapter(), o) : nd_rping::run_client(node.adapter(), o);
    }
  }
  glue::eal_cleanup();
  return rc;
}
