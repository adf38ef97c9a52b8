#include "tools/ndperf/baselines/raw_frames.h"

#include <cstring>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_udp.h>

#include "ndnic/port.h"

namespace ndnic::ndperf {
namespace {

constexpr uint16_t kRoceV2Port = 4791;
constexpr uint8_t kTtl = 64;
constexpr size_t kHeaders = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr);
constexpr uint64_t kStuckSeconds = 1;  ///< a port that takes nothing this long has no peer

}  // namespace

rte_mbuf* build_frame(glue::Port& port, const RawPath& path, uint16_t sport, const uint8_t* payload, size_t len) {
  rte_mbuf* m = rte_pktmbuf_alloc(port.mempool());
  if (!m) return nullptr;
  if (rte_pktmbuf_tailroom(m) < kHeaders + len) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(d);
  eth->dst_addr = path.dst_mac;
  eth->src_addr = path.src_mac;
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->type_of_service = 0;
  ip->total_length = rte_cpu_to_be_16(uint16_t(sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr) + len));
  ip->packet_id = 0;
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = kTtl;
  ip->next_proto_id = IPPROTO_UDP;
  ip->hdr_checksum = 0;
  ip->src_addr = rte_cpu_to_be_32(path.src_ip);
  ip->dst_addr = rte_cpu_to_be_32(path.dst_ip);
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(ip + 1);
  udp->src_port = rte_cpu_to_be_16(sport);
  udp->dst_port = rte_cpu_to_be_16(kRoceV2Port);
  udp->dgram_len = rte_cpu_to_be_16(uint16_t(sizeof(rte_udp_hdr) + len));
  udp->dgram_cksum = 0;  // none, as IPv4 allows
  if (len) std::memcpy(udp + 1, payload, len);
  m->data_len = uint16_t(kHeaders + len);
  m->pkt_len = uint32_t(kHeaders + len);
  return m;
}

bool parse_frame(rte_mbuf* m, RawFrame* out) {
  if (m->nb_segs != 1 || m->data_len < kHeaders) return false;
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const auto* eth = reinterpret_cast<const rte_ether_hdr*>(d);
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
  const size_t ihl = size_t(ip->version_ihl & 0x0f) * 4;
  const auto* udp = reinterpret_cast<const rte_udp_hdr*>(d + sizeof(rte_ether_hdr) + ihl);
  const size_t start = sizeof(rte_ether_hdr) + ihl + sizeof(rte_udp_hdr);
  const size_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
  if (udp_len < sizeof(rte_udp_hdr) || start + udp_len - sizeof(rte_udp_hdr) > m->data_len) return false;
  out->sport = rte_be_to_cpu_16(udp->src_port);
  out->payload = d + start;
  out->len = udp_len - sizeof(rte_udp_hdr);
  out->src_mac = eth->src_addr;
  out->src_ip = rte_be_to_cpu_32(ip->src_addr);
  return true;
}

bool send_all(glue::Port& port, uint16_t queue, rte_mbuf** frames, uint16_t n) {
  uint64_t give_up = 0;
  for (uint16_t done = 0; done < n;) {
    const uint16_t k = port.tx_burst(frames + done, uint16_t(n - done), queue);
    done = uint16_t(done + k);
    if (k) {
      give_up = 0;
      continue;
    }
    const uint64_t now = rte_rdtsc();
    if (!give_up) give_up = now + rte_get_tsc_hz() * kStuckSeconds;
    if (now > give_up) {
      rte_pktmbuf_free_bulk(frames + done, n - done);
      return false;
    }
    rte_pause();
  }
  return true;
}

}  // namespace ndnic::ndperf
