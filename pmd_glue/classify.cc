#include "pmd_glue/classify.h"

#include <cstddef>
#include <cstring>

#include <rte_branch_prediction.h>
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

constexpr uint32_t kL3 = sizeof(rte_ether_hdr);              ///< IPv4 header, without a VLAN tag
constexpr uint32_t kL4 = kL3 + sizeof(rte_ipv4_hdr);          ///< UDP header, without IP options
constexpr uint32_t kUsualLen = kL4 + sizeof(rte_udp_hdr);
constexpr uint8_t kIpv4NoOptions = 0x45;                        ///< version 4, IHL 5 words

/// The usual frame, read in place from its first segment: RoCEv2 for our MAC and address,
/// over IPv4 without options and unfragmented. classify_full() gives each such frame kRoce; it
/// costs ~45 instructions more a frame (its copies and checks one header at a time), so
/// the rest is left to it.
inline bool usual_roce(const rte_mbuf* m, const Identity& us) {
  if (m->data_len < kUsualLen) return false;
  const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
  uint16_t ethertype, total, frag, dport;
  uint32_t dst;
  std::memcpy(&ethertype, f + offsetof(rte_ether_hdr, ether_type), 2);
  std::memcpy(&total, f + kL3 + offsetof(rte_ipv4_hdr, total_length), 2);
  std::memcpy(&frag, f + kL3 + offsetof(rte_ipv4_hdr, fragment_offset), 2);
  std::memcpy(&dst, f + kL3 + offsetof(rte_ipv4_hdr, dst_addr), 4);
  std::memcpy(&dport, f + kL4 + offsetof(rte_udp_hdr, dst_port), 2);
  const uint32_t ip_len = rte_be_to_cpu_16(total);
  return (us.promiscuous || std::memcmp(f, us.mac.addr_bytes, RTE_ETHER_ADDR_LEN) == 0) &&
         ethertype == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
         f[kL3 + offsetof(rte_ipv4_hdr, version_ihl)] == kIpv4NoOptions &&
         ip_len >= sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr) && kL3 + ip_len <= m->pkt_len &&
         (frag & rte_cpu_to_be_16(kFragmentMask)) == 0 &&
         f[kL3 + offsetof(rte_ipv4_hdr, next_proto_id)] == IPPROTO_UDP &&
         dport == rte_cpu_to_be_16(wire::kRoceV2Port) && (us.ipv4 == 0 || dst == rte_cpu_to_be_32(us.ipv4));
}

}  // namespace

Classified classify(const rte_mbuf* m, const Identity& us) {
  if (likely(usual_roce(m, us))) return {Verdict::kRoce, Drop::kCount};
  return classify_full(m, us);
}

Classified classify_full(const rte_mbuf* m, const Identity& us) {
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

  rte_ipv4_hdr ip_copy;
  const auto* ip = static_cast<const rte_ipv4_hdr*>(rte_pktmbuf_read(m, kL3, sizeof ip_copy, &ip_copy));
  if (ip == nullptr) return drop(Drop::kRuntFrame);
  const uint32_t ihl = rte_ipv4_hdr_len(ip);
  const uint32_t total = rte_be_to_cpu_16(ip->total_length);
  if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(rte_ipv4_hdr) || total < ihl ||
      kL3 + total > m->pkt_len)
    return drop(Drop::kIpHeader);
  if (rte_be_to_cpu_16(ip->fragment_offset) & kFragmentMask) return drop(Drop::kIpFragment);
  if (ip->next_proto_id != IPPROTO_UDP) return drop(Drop::kNotUdp);
  const uint32_t ip_dst = rte_be_to_cpu_32(ip->dst_addr);

  rte_udp_hdr udp_copy;
  if (total < ihl + sizeof(rte_udp_hdr)) return drop(Drop::kRuntFrame);
  const auto* udp = static_cast<const rte_udp_hdr*>(rte_pktmbuf_read(m, kL3 + ihl, sizeof udp_copy, &udp_copy));
  if (udp == nullptr) return drop(Drop::kRuntFrame);
  if (rte_be_to_cpu_16(udp->dst_port) != wire::kRoceV2Port) return drop(Drop::kNotRocePort);
  if (us.ipv4 != 0 && ip_dst != us.ipv4) return drop(Drop::kNotOurIp);
  return {Verdict::kRoce, Drop::kCount};
}

}  // namespace ndnic::glue
