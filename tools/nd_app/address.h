// The IPv4 socket address the ND calls take (NdOpenV1Adapter, Connect), from the host-order
// address and port the tools carry.
#pragma once

#include <netinet/in.h>

#include <cstdint>

namespace ndnic::nd_app {

/// AF_INET, `ip` and `port` (host order; port 0 for NdOpenV1Adapter) in network order.
sockaddr_in ipv4_sockaddr(uint32_t ip, uint16_t port = 0);

}  // namespace ndnic::nd_app
