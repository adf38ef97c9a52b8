#include "pmd_glue/arp.h"

#include <cstring>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_mbuf.h>

namespace ndnic::glue {
namespace {

// Padded like a hardware NIC pads it (60 bytes before the FCS), so a capture of ndnic's ARP
// looks like any other host's and no receiver drops it as a runt.
constexpr uint16_t kMinFrameLen = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN;
constexpr uint16_t kArpFrameLen = sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr);
static_assert(kArpFrameLen <= kMinFrameLen);

}  // namespace

rte_mbuf* arp_build(rte_mempool* pool, const rte_ether_addr& src, const rte_ether_addr& dst,
                    const ArpMessage& msg) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  auto* frame = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kMinFrameLen));
  if (frame == nullptr) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::memset(frame, 0, kMinFrameLen);

  auto* eth = reinterpret_cast<rte_ether_hdr*>(frame);
  rte_ether_addr_copy(&dst, &eth->dst_addr);
  rte_ether_addr_copy(&src, &eth->src_addr);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);

  auto* arp = reinterpret_cast<rte_arp_hdr*>(eth + 1);
  arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
  arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  arp->arp_hlen = RTE_ETHER_ADDR_LEN;
  arp->arp_plen = sizeof(uint32_t);
  arp->arp_opcode = rte_cpu_to_be_16(msg.op);
  rte_ether_addr_copy(&msg.sha, &arp->arp_data.arp_sha);
  arp->arp_data.arp_sip = rte_cpu_to_be_32(msg.spa);
  rte_ether_addr_copy(&msg.tha, &arp->arp_data.arp_tha);
  arp->arp_data.arp_tip = rte_cpu_to_be_32(msg.tpa);
  return m;
}

bool arp_parse(const rte_mbuf* m, ArpMessage* msg) {
  rte_arp_hdr copy;
  const auto* arp = static_cast<const rte_arp_hdr*>(
      rte_pktmbuf_read(m, sizeof(rte_ether_hdr), sizeof copy, &copy));
  if (arp == nullptr || rte_be_to_cpu_16(arp->arp_hardware) != RTE_ARP_HRD_ETHER ||
      rte_be_to_cpu_16(arp->arp_protocol) != RTE_ETHER_TYPE_IPV4 ||
      arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != sizeof(uint32_t))
    return false;
  msg->op = rte_be_to_cpu_16(arp->arp_opcode);
  rte_ether_addr_copy(&arp->arp_data.arp_sha, &msg->sha);
  msg->spa = rte_be_to_cpu_32(arp->arp_data.arp_sip);
  rte_ether_addr_copy(&arp->arp_data.arp_tha, &msg->tha);
  msg->tpa = rte_be_to_cpu_32(arp->arp_data.arp_tip);
  return true;
}

}  // namespace ndnic::glue
