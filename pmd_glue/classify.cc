#include "pmd_glue/classify.h"

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "ndnic/wire/headers.h"

namespace ndnic::glue {
namespace {

constexpr uint16_t kFragmentMask = RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK;
constexpr uint16_t kEtherTypeQinQ = 0x88A8;

Classified drop(Drop why) { return {Verdict::kDrop, why}; }

}  // namespace

Classified classify(const rte_mbuf* m, const Identity& us) {
  rte_ether_hdr eth_copy;
  const auto* eth = static_cast<const rte_ether_hdr*>(rte_pktmbuf_read(m, 0, sizeof eth_copy, &eth_copy));
  if (eth == nullptr) return drop(Drop::kRuntFrame);

  // Broadcast and multicast pass on to the EtherType checks so that ARP requests are seen and
  // IPv6 neighbour discovery is counted under its own reason rather than as "not our MAC".
  if (!us.promiscuous && !rte_is_same_ether_addr(&eth->dst_addr, &us.mac) &&
      !rte_is_multicast_ether_addr(&eth->dst_addr))
    return drop(Drop::kNotOurMac);

  const uint16_t type = rte_be_to_cpu_16(eth->ether_type);
  switch (type) {
    case RTE_ETHER_TYPE_IPV4: break;
    case RTE_ETHER_TYPE_ARP: return {Verdict::kArp, Drop::kCount};
    case RTE_ETHER_TYPE_IPV6: return drop(Drop::kIpv6);
    case RTE_ETHER_TYPE_VLAN:
    case kEtherTypeQinQ: return drop(Drop::kVlan);
    default: return drop(Drop::kOtherEtherType);
  }

  constexpr uint32_t l2 = sizeof(rte_ether_hdr);
  rte_ipv4_hdr ip_copy;
  const auto* ip = static_cast<const rte_ipv4_hdr*>(rte_pktmbuf_read(m, l2, sizeof ip_copy, &ip_copy));
  if (ip == nullptr) return drop(Drop::kRuntFrame);
  const uint32_t ihl = rte_ipv4_hdr_len(ip);
  const uint32_t total = rte_be_to_cpu_16(ip->total_length);
  if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(rte_ipv4_hdr) || total < ihl ||
      l2 + total > m->pkt_len)
    return drop(Drop::kIpHeader);
  if (rte_be_to_cpu_16(ip->fragment_offset) & kFragmentMask) return drop(Drop::kIpFragment);
  if (ip->next_proto_id != IPPROTO_UDP) return drop(Drop::kNotUdp);
  const uint32_t ip_dst = rte_be_to_cpu_32(ip->dst_addr);

  rte_udp_hdr udp_copy;
  if (total < ihl + sizeof(rte_udp_hdr)) return drop(Drop::kRuntFrame);
  const auto* udp = static_cast<const rte_udp_hdr*>(rte_pktmbuf_read(m, l2 + ihl, sizeof udp_copy, &udp_copy));
  if (udp == nullptr) return drop(Drop::kRuntFrame);
  if (rte_be_to_cpu_16(udp->dst_port) != wire::kRoceV2Port) return drop(Drop::kNotRocePort);
  if (us.ipv4 != 0 && ip_dst != us.ipv4) return drop(Drop::kNotOurIp);
  return {Verdict::kRoce, Drop::kCount};
}

}  // namespace ndnic::glue
