// An ndnic node for ND programs: a DPDK port with an IPv4 address, an ndnic device polled by a
// worker lcore, registered as an ND v1 provider and opened as an INDAdapter. What every example
// and tool needs before its first ND call; the ND code after it is the same as on Windows.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "nd_frontend/ndspi.h"
#include "nic/nic.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::nd_node {

struct NodeConfig {
  std::string device;        ///< DPDK device arguments, e.g. "net_af_packet0,iface=tap0"
  uint32_t ipv4 = 0;         ///< the node's address, host order
  std::string capture;       ///< pcap of the port's frames, when set
  unsigned lcore = 0;        ///< worker lcore; 0: the first worker EAL has
  /// RNR retries this node's connections ask of their peers (REQ/REP), 7 = forever: as
  /// rdma_conn_param.rnr_retry_count, an adapter setting since ND v1's calls have no such field.
  uint8_t rnr_retry_count = 7;
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
  INDAdapter* adapter() const { return adapter_; }
  glue::Port& port() { return port_; }
  nic::Device& device() { return dev_; }
  const std::string& error() const { return error_; }

 private:
  glue::Port port_;
  nic::Device dev_;
  bool dev_open_ = false;
  bool registered_ = false;
  INDAdapter* adapter_ = nullptr;
  std::string error_;
};

/// Reaps `cq` until `r` completes (every other result reaped on the way completes too: each
/// ND_RESULT is its own request's record) or `deadline` passes. False on the deadline.
bool wait_result(INDCompletionQueue* cq, const ND_RESULT* r, std::chrono::steady_clock::time_point deadline);

/// Waits for an overlapped call to finish, up to `deadline`; ND_TIMEOUT when it did not.
HRESULT wait_overlapped(INDOverlapped* o, OVERLAPPED* ov, std::chrono::steady_clock::time_point deadline);

/// "ND_CONNECTION_REFUSED (0xC0000236)" for messages.
std::string status_text(HRESULT hr);

}  // namespace ndnic::nd_node
