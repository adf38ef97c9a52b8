// ARP frames (RFC 826) for Ethernet and IPv4: what the port sends and what it reads back.
#pragma once

#include <cstdint>

#include <rte_ether.h>

struct rte_mbuf;
struct rte_mempool;

namespace ndnic::glue {

struct ArpMessage {
  uint16_t op;             ///< RTE_ARP_OP_REQUEST or RTE_ARP_OP_REPLY
  rte_ether_addr sha;      ///< sender hardware address
  uint32_t spa;            ///< sender IPv4, host order
  rte_ether_addr tha;      ///< target hardware address
  uint32_t tpa;            ///< target IPv4, host order
};

/// A minimum-size Ethernet frame carrying `msg`, from `src` to `dst`; nullptr when the pool is
/// empty.
rte_mbuf* arp_build(rte_mempool* pool, const rte_ether_addr& src, const rte_ether_addr& dst,
                    const ArpMessage& msg);

/// False unless the frame is Ethernet/IPv4 ARP with 6- and 4-byte addresses.
bool arp_parse(const rte_mbuf* m, ArpMessage* msg);

}  // namespace ndnic::glue
