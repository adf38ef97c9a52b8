// The ndnic devices a run uses, started the way an ND application starts its provider: a
// nic::Device on a glue::Port, polled by a worker lcore, registered as an ND v1 adapter (nd.h).
// Everything past this file reaches them only through NdOpenV1Adapter and ndspi.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/ndping/options.h"

namespace ndnic::ndping {

/// The embedded mode's addresses (RFC 2544's benchmarking range, as in the tests).
constexpr uint32_t kEmbeddedServerIpv4 = 0xC6120001;  // 198.18.0.1
constexpr uint32_t kEmbeddedClientIpv4 = 0xC6120002;  // 198.18.0.2

class Devices {
 public:
  Devices();
  ~Devices();
  Devices(const Devices&) = delete;
  Devices& operator=(const Devices&) = delete;

  /// Embedded: two devices over a net_ring pair, one worker lcore each. Otherwise one device
  /// on --dev with our --ip, on one worker lcore. Errors go to stderr.
  bool open(const Options& o);
  /// Unregisters the adapters and stops the devices: every ND object must be released first.
  void close();

 private:
  struct Node;
  bool open_node(Node& n, const std::string& device, uint32_t ipv4, const std::string& capture, unsigned lcore);

  const char* tool_ = "ndping";
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace ndnic::ndping
