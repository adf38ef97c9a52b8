// Receive-side scaling for RoCEv2: the Toeplitz key ndnic programs into ports, and the hash
// the port computes over a frame's IPv4/UDP 4-tuple, so the engine can tell which RX queue a
// QP's frames arrive on and let the shard polling that queue own the QP.
#pragma once

#include <cstdint>

namespace ndnic::glue {

constexpr unsigned kRssKeyLen = 40;
/// The default key of Microsoft's RSS specification (also DPDK's test key): its published test
/// vectors check the hash below.
extern const uint8_t kRssKey[kRssKeyLen];

/// Toeplitz hash of (source address, destination address, source port, destination port),
/// host order, with kRssKey: what a port computes for RTE_ETH_RSS_NONFRAG_IPV4_UDP.
uint32_t rss_hash_ipv4_udp(uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port);

}  // namespace ndnic::glue
