// An ndnic node for ND programs: a DPDK port with an IPv4 address, an ndnic device on it polled
// by worker lcores (a port queue and a shard each) or driven by the application thread (run to
// completion), registered as an ND v1 provider and, when asked, opened as an INDAdapter. What
// every example and tool needs before its first ND call; the ND code after it is the same as
// on Windows. The device can stop and start again with the port left open (ndperf's
// baselines use the port and the lcores without the RDMA engine). open_pair() stands up the
// embedded mode's two nodes over a net_ring pair.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ndnic/ndspi.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"

namespace ndnic::nd_app {

/// The embedded mode's addresses (RFC 2544's benchmarking range, as in the tests).
constexpr uint32_t kEmbeddedServerIpv4 = 0xC6120001;  // 198.18.0.1
constexpr uint32_t kEmbeddedClientIpv4 = 0xC6120002;  // 198.18.0.2

struct NodeConfig {
  std::string device;        ///< DPDK device arguments, e.g. "net_af_packet0,iface=tap0"
  uint32_t ipv4 = 0;         ///< the node's address, host order
  std::string capture;       ///< pcap of the port's frames, when set
  /// Worker lcores polling the device, a port queue each; none: EAL's first worker lcore,
  /// or, with `run_to_completion`, none at all (the application thread polls the device).
  std::vector<unsigned> lcores;
  bool run_to_completion = false;  ///< no worker lcore: the application thread drives the device
  uint32_t path_mtu = 0;     ///< largest path MTU the CM offers and accepts; 0: the CM's default
  /// RNR retries this node's connections ask of their peers (REQ/REP), 7 = forever: as
  /// rdma_conn_param.rnr_retry_count, an adapter setting since ND v1's calls have no such field.
  uint8_t rnr_retry_count = 7;
  uint16_t port_mtu = 0;     ///< the port's Ethernet MTU; 0: pmd_glue's default
  uint16_t mbuf_data_room = 0;  ///< bytes per mbuf; 0: pmd_glue's default
  bool open_adapter = true;  ///< open the INDAdapter on the address (adapter())
  /// Non-empty: the device is readable through the /ndnic/ telemetry commands under this name.
  std::string telemetry_name;
  /// Non-empty: the counters print to stderr under "---- TITLE: counters ----" each time the
  /// device stops (exact then: the lcores are quiet).
  std::string stats_title;
};

class Node {
 public:
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() { close(); }

  /// Port, device, provider registration, adapter. False with error() set.
  bool open(const NodeConfig& c);
  void close();
  /// Unregisters the ND provider and stops the device, the port left open: every ND object on
  /// it must be gone (the adapter is not reopened by start_device).
  void stop_device();
  /// The device on the open port again, registered. False with error() set.
  bool start_device();
  bool device_running() const { return running_; }

  INDAdapter* adapter() const { return adapter_; }
  glue::Port& port() { return port_; }
  nic::Device& device() { return dev_; }
  uint32_t ipv4() const { return config_.ipv4; }
  /// The worker lcores polling the device; empty when the application thread drives it.
  const std::vector<unsigned>& lcores() const { return config_.lcores; }
  /// Port queues: one per worker lcore, one when the application thread drives the device.
  size_t queues() const { return config_.lcores.empty() ? 1 : config_.lcores.size(); }
  /// What failed: "port DEV: why", "device: why", ...
  const std::string& error() const { return error_; }

 private:
  NodeConfig config_;
  glue::Port port_;
  nic::Device dev_;
  bool port_open_ = false;
  bool running_ = false;
  bool in_telemetry_ = false;
  INDAdapter* adapter_ = nullptr;
  std::string error_;
};

/// EAL's worker lcores, in order.
std::vector<unsigned> worker_lcores();

/// True when `workers` has `need` lcores; otherwise says so ("TOOL: N worker lcore(s)
/// needed besides the main one, ...") on stderr.
bool enough_workers(const char* tool, const std::vector<unsigned>& workers, size_t need);

/// The embedded mode: a net_ring pair named TOOL<pid> (unique among the process's devices),
/// the server node (`server.ipv4`, by default kEmbeddedServerIpv4) on one end and the client
/// node (kEmbeddedClientIpv4 by default) on the other, `per_node` of `workers` each (0: half
/// of them each, an odd one idle; a port queue per worker on each end). `server` and `client`
/// give the rest of each node's configuration. Errors to stderr as "TOOL: ...", "SERVER_WHO:
/// ..." and "CLIENT_WHO: ...".
bool open_pair(const char* tool, const std::vector<unsigned>& workers, size_t per_node, NodeConfig server,
               NodeConfig client, Node* server_node, Node* client_node, const std::string& server_who,
               const std::string& client_who);

}  // namespace ndnic::nd_app
