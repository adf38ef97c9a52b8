#include "tools/nd_app/node.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <rte_lcore.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ndnic/nd.h"
#include "ndnic/telemetry.h"
#include "tools/nd_app/address.h"
#include "tools/nd_app/arguments.h"
#include "tools/nd_app/status.h"

namespace ndnic::nd_app {

bool Node::open(const NodeConfig& c) {
  config_ = c;
  if (config_.lcores.empty() && !config_.run_to_completion) config_.lcores = {rte_get_next_lcore(-1, 1, 0)};
  for (unsigned lcore : config_.lcores) {
    if (lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore) || lcore == rte_get_main_lcore()) {
      error_ = "no worker lcore: give EAL two lcores (e.g. -l 0,1 or --lcores 0@0,1@0)";
      return false;
    }
  }
  glue::PortConfig pc;
  pc.device = c.device;
  pc.ipv4 = c.ipv4;
  pc.capture_path = c.capture;
  pc.rx_queues = pc.tx_queues = uint16_t(queues());
  if (c.port_mtu) pc.mtu = c.port_mtu;
  if (c.mbuf_data_room) pc.mbuf_data_room = std::max(pc.mbuf_data_room, c.mbuf_data_room);
  if (!port_.open(pc)) {
    error_ = "port " + c.device;
    error_.append(": ").append(port_.error());
    return false;
  }
  port_open_ = true;
  if (!start_device()) return false;
  if (!c.open_adapter) return true;
  sockaddr_in sa = nd_app::ipv4_sockaddr(c.ipv4);
  const HRESULT hr = NdOpenV1Adapter(reinterpret_cast<sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) {
    error_ = "NdOpenV1Adapter: " + status_text(hr);
    return false;
  }
  return true;
}

bool Node::start_device() {
  nic::DeviceConfig dc;
  dc.ports = {&port_};
  dc.lcores = config_.lcores;  // none: the application thread drives it (run to completion)
  // The counters printed at the end then say where the thread's time went, as for workers.
  dc.count_app_load = !config_.stats_title.empty();
  // Where zero-copy transmit starts (DeviceConfig::zero_copy_min), for measuring it: bytes, 0
  // to copy every payload.
  if (const char* zc = std::getenv("NDNIC_ZERO_COPY_MIN")) {
    unsigned long v = 0;
    if (!parse_uint(zc, UINT32_MAX, &v)) {
      error_ = std::string("NDNIC_ZERO_COPY_MIN: '") + zc + "' is not a byte count";
      return false;
    }
    dc.zero_copy_min = uint32_t(v);
  }
  if (!dev_.open(dc)) {
    error_ = "device: " + dev_.error();
    return false;
  }
  // The one place the tools configure the connection manager.
  cm::Config cm;
  if (config_.path_mtu) cm.path_mtu = config_.path_mtu;
  cm.rnr_retry_count = config_.rnr_retry_count;
  if (!nd::register_adapter(&dev_, &port_, &cm)) {
    dev_.close();
    error_ = "cannot start the connection manager";
    return false;
  }
  running_ = true;
  if (!config_.telemetry_name.empty())
    in_telemetry_ = telemetry::register_device(config_.telemetry_name, &dev_, &port_);
  return true;
}

void Node::stop_device() {
  if (adapter_) adapter_->Release();
  adapter_ = nullptr;
  if (!running_) return;
  nd::unregister_adapter(&port_);
  if (in_telemetry_) telemetry::unregister_device(config_.telemetry_name);
  in_telemetry_ = false;
  if (!config_.stats_title.empty()) {
    // The ND objects are gone and the CM agent stopped: the counters no longer move.
    std::fprintf(stderr, "---- %s: counters ----\n%s", config_.stats_title.c_str(),
                 telemetry::stats_text(dev_, port_).c_str());
  }
  dev_.close();
  running_ = false;
}

void Node::close() {
  stop_device();
  if (port_open_) port_.close();
  port_open_ = false;
}

std::vector<unsigned> worker_lcores() {
  std::vector<unsigned> workers;
  for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE; l = rte_get_next_lcore(l, 1, 0))
    workers.push_back(l);
  return workers;
}

bool enough_workers(const char* tool, const std::vector<unsigned>& workers, size_t need) {
  if (workers.size() >= need) return true;
  std::fprintf(stderr, "%s: %zu worker lcore(s) needed besides the main one, EAL has %zu (see -l/--lcores)\n", tool,
               need, workers.size());
  return false;
}

bool open_pair(const char* tool, const std::vector<unsigned>& workers, size_t per_node, NodeConfig server,
               NodeConfig client, Node* server_node, Node* client_node, const std::string& server_who,
               const std::string& client_who) {
  if (!enough_workers(tool, workers, 2 * per_node)) return false;
  const size_t n = per_node ? per_node : workers.size() / 2;
  const unsigned queues = unsigned(std::max<size_t>(n, 1));
  const std::string name = tool + std::to_string(getpid());
  uint16_t server_port = 0, client_port = 0;
  if (!glue::make_ring_pair(name, &server_port, &client_port, queues)) {
    std::fprintf(stderr, "%s: cannot create the net_ring pair\n", tool);
    return false;
  }
  server.device = std::to_string(server_port);
  if (!server.ipv4) server.ipv4 = kEmbeddedServerIpv4;
  server.lcores.assign(workers.begin(), workers.begin() + long(n));
  client.device = std::to_string(client_port);
  if (!client.ipv4) client.ipv4 = kEmbeddedClientIpv4;
  client.lcores.assign(workers.begin() + long(n), workers.begin() + long(2 * n));
  if (!server_node->open(server)) {
    std::fprintf(stderr, "%s: %s\n", server_who.c_str(), server_node->error().c_str());
    return false;
  }
  if (!client_node->open(client)) {
    std::fprintf(stderr, "%s: %s\n", client_who.c_str(), client_node->error().c_str());
    return false;
  }
  return true;
}

}  // namespace ndnic::nd_app
