// One ndnic end of a run: an nd_app::Node (a DPDK port with an IPv4 address, a device polled by
// worker lcores or run to completion, registered as an ND v1 adapter with the run's path MTU)
// and the end's buffer, which every test registers. The baselines need the lcores and the
// port without the RDMA engine: the device stops (the port stays open) and starts again after
// them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tools/nd_app/node.h"
#include "tools/ndperf/plan.h"

namespace ndnic::ndperf {

using nd_app::kEmbeddedClientIpv4;
using nd_app::kEmbeddedServerIpv4;

class Node {
 public:
  Node(std::string who, const Layout& layout);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The buffer, zeroed. Errors to stderr.
  bool allocate();
  /// This end's node configuration for the run's options (device, address and lcores aside).
  nd_app::NodeConfig config(const Options& o) const;
  nd_app::Node& nd() { return node_; }
  /// Unregisters the ND provider and stops the device: every ND object on it must be gone.
  void stop_device() { node_.stop_device(); }
  /// The device again; errors to stderr.
  bool start_device();
  bool device_running() const { return node_.device_running(); }

  glue::Port& port() { return node_.port(); }
  uint32_t ipv4() const { return node_.ipv4(); }
  const std::vector<unsigned>& lcores() const { return node_.lcores(); }
  /// Port queues: one per worker lcore, one when the application thread drives the device.
  size_t queues() const { return node_.queues(); }
  /// Runs a baseline where the device ran: on its (first) worker lcore once the device has
  /// stopped, or here when the calling thread drove it. The result of `fn`.
  bool run_on_own_lcore(const std::function<bool()>& fn);
  uint8_t* buffer() { return buf_.get(); }
  const Layout& layout() const { return layout_; }
  const std::string& link() const { return link_; }
  void set_link(std::string text) { link_ = std::move(text); }
  const std::string& who() const { return who_; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::string who_;
  Layout layout_;
  nd_app::Node node_;
  std::unique_ptr<uint8_t, FreeDeleter> buf_;
  std::string link_;
};

/// Embedded: two nodes (server, client) over a net_ring pair, the worker lcores shared out
/// between them. Otherwise one node on --dev with every worker lcore.
bool open_nodes(const Options& o, const Layout& layout, std::vector<std::unique_ptr<Node>>* nodes);

}  // namespace ndnic::ndperf
