#include "tools/ndperf/node.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rte_mbuf.h>

#include "tools/ndperf/launch.h"
#include "tools/ndperf/lcore_run.h"

namespace ndnic::ndperf {
namespace {

constexpr size_t kBufferAlign = 4096;
constexpr uint16_t kMinPortMtu = 1500;
// Room around the RoCE payload of one packet: Ethernet, IPv4, UDP, BTH, RETH or AtomicETH,
// ICRC, rounded up.
constexpr uint16_t kFrameOverhead = 128;

}  // namespace

void Node::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Node::Node(std::string who, const Layout& layout) : who_(std::move(who)), layout_(layout) {}

Node::~Node() { node_.close(); }

bool Node::allocate() {
  buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, layout_.total())));
  if (!buf_) {
    std::fprintf(stderr, "ndperf %s: cannot allocate %zu bytes of buffer\n", who_.c_str(), layout_.total());
    return false;
  }
  std::memset(buf_.get(), 0, layout_.total());
  return true;
}

nd_app::NodeConfig Node::config(const Options& o) const {
  nd_app::NodeConfig c;
  c.run_to_completion = o.drive == Drive::kThread;
  c.path_mtu = o.mtu;
  // A path MTU above 1024 needs frames above a 1500-byte link MTU, and mbufs to hold them.
  c.port_mtu = std::max<uint16_t>(kMinPortMtu, uint16_t(o.mtu + kFrameOverhead));
  c.mbuf_data_room = uint16_t(RTE_PKTMBUF_HEADROOM + o.mtu + 2 * kFrameOverhead);
  c.open_adapter = false;  // each test's session opens its own, by address
  // Readable live through /ndnic/ telemetry commands under the node's role name.
  c.telemetry_name = who_;
  if (o.stats) c.stats_title = "ndperf " + who_;
  return c;
}

bool Node::start_device() {
  if (node_.start_device()) return true;
  std::fprintf(stderr, "ndperf %s: %s\n", who_.c_str(), node_.error().c_str());
  return false;
}

bool Node::run_on_own_lcore(const std::function<bool()>& fn) {
  return lcores().empty() ? fn() : run_on_lcore(lcores()[0], fn);
}

bool open_nodes(const Options& o, const Layout& layout, std::vector<std::unique_ptr<Node>>* nodes) {
  // Run to completion: no worker lcores; each node's application thread drives its device.
  const std::vector<unsigned> workers = o.drive == Drive::kThread ? std::vector<unsigned>{} : device_lcores();
  if (!nd_app::enough_workers("ndperf", workers, workers_needed(o))) return false;
  if (o.role != Role::kEmbedded) {
    nodes->push_back(std::make_unique<Node>(role_name(o.role), layout));
    Node& n = *nodes->back();
    n.set_link(o.device);
    if (!n.allocate()) return false;
    nd_app::NodeConfig c = n.config(o);
    c.device = o.device;
    c.ipv4 = o.ipv4;
    c.lcores = workers;
    if (n.nd().open(c)) return true;
    std::fprintf(stderr, "ndperf %s: %s\n", n.who().c_str(), n.nd().error().c_str());
    return false;
  }
  // Half the workers each (an odd one out stays idle).
  nodes->push_back(std::make_unique<Node>("server", layout));
  nodes->push_back(std::make_unique<Node>("client", layout));
  Node& server = *(*nodes)[0];
  Node& client = *(*nodes)[1];
  for (auto& n : *nodes) n->set_link("net_ring pair (embedded)");
  return server.allocate() && client.allocate() &&
         nd_app::open_pair("ndperf", workers, 0, server.config(o), client.config(o), &server.nd(), &client.nd(),
                           "ndperf server", "ndperf client");
}

}  // namespace ndnic::ndperf
