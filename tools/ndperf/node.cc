#include "tools/ndperf/node.h"

#include "telemetry/telemetry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "cm/cm.h"
#include "nd_frontend/nd.h"
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

Node::Node(std::string who, const Layout& layout, uint32_t mtu) : who_(std::move(who)), layout_(layout), mtu_(mtu) {}

Node::~Node() { close(); }

bool Node::open(const std::string& device, uint32_t ipv4, const std::vector<unsigned>& lcores) {
  ipv4_ = ipv4;
  lcores_ = lcores;
  buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, layout_.total())));
  if (!buf_) {
    std::fprintf(stderr, "ndperf %s: cannot allocate %zu bytes of buffer\n", who_.c_str(), layout_.total());
    return false;
  }
  std::memset(buf_.get(), 0, layout_.total());
  glue::PortConfig pc;
  pc.device = device;
  pc.ipv4 = ipv4;
  pc.rx_queues = pc.tx_queues = uint16_t(queues());
  // A path MTU above 1024 needs frames above a 1500-byte link MTU, and mbufs to hold them.
  pc.mtu = std::max<uint16_t>(kMinPortMtu, uint16_t(mtu_ + kFrameOverhead));
  pc.mbuf_data_room = std::max<uint16_t>(pc.mbuf_data_room, uint16_t(RTE_PKTMBUF_HEADROOM + mtu_ + 2 * kFrameOverhead));
  if (!port_.open(pc)) {
    std::fprintf(stderr, "ndperf %s: port %s: %s\n", who_.c_str(), device.c_str(), port_.error().c_str());
    return false;
  }
  port_open_ = true;
  return start_device();
}

bool Node::start_device() {
  nic::DeviceConfig dc;
  dc.ports = {&port_};
  dc.lcores = lcores_;  // none: the application thread drives it (run to completion)
  if (!dev_.open(dc)) {
    std::fprintf(stderr, "ndperf %s: device: %s\n", who_.c_str(), dev_.error().c_str());
    return false;
  }
  cm::Config cm;
  cm.path_mtu = mtu_;
  if (!nd::register_adapter(&dev_, &port_, &cm)) {
    dev_.close();
    std::fprintf(stderr, "ndperf %s: cannot start the connection manager\n", who_.c_str());
    return false;
  }
  running_ = true;
  // Readable live through /ndnic/ telemetry commands under the node's role name.
  in_telemetry_ = telemetry::register_device(who_, &dev_, &port_);
  return true;
}

void Node::stop_device() {
  if (!running_) return;
  nd::unregister_adapter(&port_);
  if (in_telemetry_) telemetry::unregister_device(who_);
  in_telemetry_ = false;
  if (stats_) {
    // The ND objects are gone and the CM agent stopped: the counters no longer move.
    std::fprintf(stderr, "---- ndperf %s: counters ----\n%s", who_.c_str(),
                 telemetry::stats_text(dev_, port_).c_str());
  }
  dev_.close();
  running_ = false;
}

bool Node::run_on_own_lcore(const std::function<bool()>& fn) {
  return lcores_.empty() ? fn() : run_on_lcore(lcores_[0], fn);
}

void Node::close() {
  stop_device();
  if (port_open_) port_.close();
  port_open_ = false;
}

bool open_nodes(const Options& o, const Layout& layout, std::vector<std::unique_ptr<Node>>* nodes) {
  // Run to completion: no worker lcores; each node's application thread drives its device.
  const std::vector<unsigned> workers = o.drive == Drive::kThread ? std::vector<unsigned>{} : device_lcores();
  const size_t need = workers_needed(o);
  if (workers.size() < need) {
    std::fprintf(stderr, "ndperf: %zu worker lcore(s) needed besides the main one, EAL has %zu (see -l/--lcores)\n",
                 need, workers.size());
    return false;
  }
  if (o.role != Role::kEmbedded) {
    nodes->push_back(std::make_unique<Node>(role_name(o.role), layout, o.mtu));
    nodes->back()->set_stats(o.stats);
    nodes->back()->set_link(o.device);
    return nodes->back()->open(o.device, o.ipv4, workers);
  }
  // Half the workers each (an odd one out stays idle): a queue per worker on each side of the
  // ring pair, whose name must be unique among the process's devices.
  const long per_node = long(workers.size() / 2);
  const unsigned queues = unsigned(std::max<long>(per_node, 1));
  const std::vector<unsigned> server_lcores(workers.begin(), workers.begin() + per_node);
  const std::vector<unsigned> client_lcores(workers.begin() + per_node, workers.begin() + 2 * per_node);
  const std::string name = "ndperf" + std::to_string(getpid());
  uint16_t server_port = 0, client_port = 0;
  if (!glue::make_ring_pair(name, &server_port, &client_port, queues)) {
    std::fprintf(stderr, "ndperf: cannot create the net_ring pair\n");
    return false;
  }
  nodes->push_back(std::make_unique<Node>("server", layout, o.mtu));
  nodes->push_back(std::make_unique<Node>("client", layout, o.mtu));
  for (auto& n : *nodes) n->set_stats(o.stats);
  for (auto& n : *nodes) n->set_link("net_ring pair (embedded)");
  return (*nodes)[0]->open(std::to_string(server_port), kEmbeddedServerIpv4, server_lcores) &&
         (*nodes)[1]->open(std::to_string(client_port), kEmbeddedClientIpv4, client_lcores);
}

}  // namespace ndnic::ndperf
