#include "tools/ndping/devices.h"

#include <unistd.h>

#include <cstdio>

#include <rte_lcore.h>

#include "nd_frontend/nd.h"
#include "nic/nic.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::ndping {

struct Devices::Node {
  glue::Port port;
  nic::Device dev;
  bool registered = false;
};

Devices::Devices() = default;
Devices::~Devices() { close(); }

bool Devices::open_node(Node& n, const std::string& device, uint32_t ipv4, const std::string& capture,
                        unsigned lcore) {
  glue::PortConfig pc;
  pc.device = device;
  pc.ipv4 = ipv4;
  pc.capture_path = capture;
  if (!n.port.open(pc)) {
    std::fprintf(stderr, "%s: port %s: %s\n", tool_, device.c_str(), n.port.error().c_str());
    return false;
  }
  nic::DeviceConfig dc;
  dc.ports = {&n.port};
  dc.lcores = {lcore};
  if (!n.dev.open(dc)) {
    std::fprintf(stderr, "%s: device on %s: %s\n", tool_, device.c_str(), n.dev.error().c_str());
    return false;
  }
  if (!nd::register_adapter(&n.dev, &n.port)) {
    std::fprintf(stderr, "%s: cannot start the connection manager on %s\n", tool_, device.c_str());
    return false;
  }
  n.registered = true;
  return true;
}

bool Devices::open(const Options& o) {
  tool_ = tool_name(o.tool);
  const bool embedded = o.role == Role::kEmbedded;
  // A device polls on a worker lcore of its own (ND calls never drive the engine), so the
  // embedded mode needs two, a server or client one.
  std::vector<unsigned> workers;
  for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE; l = rte_get_next_lcore(l, 1, 0))
    workers.push_back(l);
  const size_t need = embedded ? 2 : 1;
  if (workers.size() < need) {
    std::fprintf(stderr, "%s: %zu worker lcore(s) needed besides the main one, EAL has %zu (see -l/--lcores)\n",
                 tool_, need, workers.size());
    return false;
  }
  if (!embedded) {
    nodes_.push_back(std::make_unique<Node>());
    return open_node(*nodes_.back(), o.device, o.ipv4, o.capture, workers[0]);
  }
  // The ring pair's name must be unique among the EAL's devices: one pair per process here.
  const std::string name = "ndping" + std::to_string(getpid());
  uint16_t server_port = 0, client_port = 0;
  if (!glue::make_ring_pair(name, &server_port, &client_port)) {
    std::fprintf(stderr, "%s: cannot create the net_ring pair\n", tool_);
    return false;
  }
  nodes_.push_back(std::make_unique<Node>());
  if (!open_node(*nodes_.back(), std::to_string(server_port), kEmbeddedServerIpv4, "", workers[0])) return false;
  nodes_.push_back(std::make_unique<Node>());
  return open_node(*nodes_.back(), std::to_string(client_port), kEmbeddedClientIpv4, o.capture, workers[1]);
}

void Devices::close() {
  for (auto& n : nodes_) {
    if (n->registered) nd::unregister_adapter(&n->port);
    n->registered = false;
    n->dev.close();
    n->port.close();
  }
  nodes_.clear();
}

}  // namespace ndnic::ndping
