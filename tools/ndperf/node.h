// One ndnic end of a run, as an ND application brings up its provider: a DPDK port with an
// IPv4 address, a nic::Device polled by worker lcores (one shard each), registered as an ND
// v1 adapter (nd.h) with the run's path MTU; and the end's buffer, which every test
// registers. The baselines need the lcores and the port without the RDMA engine: the device
// stops (the port stays open) and starts again after them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nic/nic.h"
#include "pmd_glue/pmd_glue.h"
#include "tools/ndperf/plan.h"

namespace ndnic::ndperf {

/// The embedded mode's addresses (RFC 2544's benchmarking range).
constexpr uint32_t kEmbeddedServerIpv4 = 0xC6120001;  // 198.18.0.1
constexpr uint32_t kEmbeddedClientIpv4 = 0xC6120002;  // 198.18.0.2

class Node {
 public:
  Node(std::string who, const Layout& layout, uint32_t mtu);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Opens the port with a queue per lcore and starts the device on them. Errors to stderr.
  bool open(const std::string& device, uint32_t ipv4, const std::vector<unsigned>& lcores);
  void close();
  /// Unregisters the ND provider and stops the device: every ND object on it must be gone.
  void stop_device();
  bool start_device();
  bool device_running() const { return running_; }

  glue::Port& port() { return port_; }
  uint32_t ipv4() const { return ipv4_; }
  const std::vector<unsigned>& lcores() const { return lcores_; }
  /// Port queues: one per worker lcore, one when the application thread drives the device.
  size_t queues() const { return lcores_.empty() ? 1 : lcores_.size(); }
  /// Runs a baseline where the device ran: on its (first) worker lcore once the device has
  /// stopped, or here when the calling thread drove it. The result of `fn`.
  bool run_on_own_lcore(const std::function<bool()>& fn);
  uint8_t* buffer() { return buf_.get(); }
  const Layout& layout() const { return layout_; }
  const std::string& link() const { return link_; }
  void set_link(std::string text) { link_ = std::move(text); }
  const std::string& who() const { return who_; }
  /// --stats: print the counters each time the device stops (exact then: the lcores are quiet).
  void set_stats(bool on) { stats_ = on; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::string who_;
  Layout layout_;
  uint32_t mtu_;
  glue::Port port_;
  nic::Device dev_;
  bool port_open_ = false;
  bool running_ = false;
  uint32_t ipv4_ = 0;
  std::vector<unsigned> lcores_;
  std::unique_ptr<uint8_t, FreeDeleter> buf_;
  std::string link_;
  bool stats_ = false;
  bool in_telemetry_ = false;
};


/// Embedded: two nodes (server, client) over a net_ring pair, the worker lcores shared out
/// between them. Otherwise one node on --dev with every worker lcore.
bool open_nodes(const Options& o, const Layout& layout, std::vector<std::unique_ptr<Node>>* nodes);

}  // namespace ndnic::ndperf
