#include "tests/pmd_glue/frames.h"

#include <cstdio>
#include <cstring>

#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

namespace ndnic::itest {
namespace {

using wire::RocePacket;

constexpr uint32_t kDestQp = 0x000011;
constexpr uint16_t kUdpSrcPort = 0xC000;
constexpr uint8_t kAckSyndrome = 0x1F;   ///< ACK, unlimited credits

// Payload bytes differ per frame and per position, so a misplaced or stale byte shows.
std::vector<std::vector<uint8_t>>& payload_store() {
  static std::vector<std::vector<uint8_t>> store;
  return store;
}

const uint8_t* payload_bytes(uint32_t seed, uint32_t len) {
  std::vector<uint8_t> b(len);
  for (uint32_t i = 0; i < len; i++) b[i] = uint8_t(seed * 31 + i * 7 + (i >> 8));
  payload_store().push_back(std::move(b));
  return payload_store().back().data();
}

RocePacket base(const Endpoints& ep, uint8_t opcode, uint32_t psn) {
  RocePacket p;
  std::memcpy(p.eth.src, ep.src_mac.addr_bytes, 6);
  std::memcpy(p.eth.dst, ep.dst_mac.addr_bytes, 6);
  p.ip4.src = ep.src_ip;
  p.ip4.dst = ep.dst_ip;
  p.ip4.id = uint16_t(psn);
  p.udp.src_port = kUdpSrcPort;
  p.bth.opcode = opcode;
  p.bth.dest_qp = kDestQp;
  p.bth.psn = psn;
  return p;
}

#define EXPECT_FIELD(field)                                                        \
  if (got.field != want.field)                                                     \
    return std::string(#field) + ": got " + std::to_string(uint64_t(got.field)) + \
           " want " + std::to_string(uint64_t(want.field));

}  // namespace

std::vector<RocePacket> request_set(const Endpoints& ep) {
  struct Spec { uint8_t opcode; uint32_t len; };
  const Spec specs[] = {
      {wire::kRcSendOnly, 64},        {wire::kRcSendOnly, 0},
      {wire::kRcSendFirst, 1024},     {wire::kRcSendLast, 13},
      {wire::kRcSendOnlyImm, 257},    {wire::kRcSendOnlyInv, 100},
      {wire::kRcWriteOnly, 512},      {wire::kRcWriteOnlyImm, 3},
      {wire::kRcReadRequest, 0},      {wire::kRcReadResponseOnly, 1000},
      {wire::kRcAck, 0},              {wire::kRcCompareSwap, 0},
      {wire::kRcFetchAdd, 0},         {wire::kRcAtomicAck, 0},
  };
  std::vector<RocePacket> out;
  uint32_t psn = 1;
  for (const Spec& s : specs) {
    RocePacket p = base(ep, s.opcode, psn);
    p.payload_len = s.len;
    p.payload = s.len ? payload_bytes(psn, s.len) : nullptr;
    p.bth.ack_req = (psn % 3) == 1;
    p.bth.se = s.opcode == wire::kRcSendOnlyImm;
    p.reth = {0x7f0000001000ull + psn * 0x100, 0x1234 + psn, s.len ? s.len : 4096};
    p.aeth = {kAckSyndrome, psn};
    p.imm = 0xC0FFEE00 | psn;
    p.ieth_rkey = 0xABCD0000 | psn;
    p.atomic = {0x7f0000002000ull + psn * 8, 0x4321, 0x1111222233334444ull + psn, 0x5555666677778888ull};
    p.atomic_ack = {0x0102030405060708ull + psn};
    p.bth.pad = wire::pad_for(s.len);
    out.push_back(p);
    psn++;
  }
  return out;
}

RocePacket ack_for(const RocePacket& request, const Endpoints& ep) {
  RocePacket p = base(ep, wire::kRcAck, request.bth.psn);
  p.aeth = {kAckSyndrome, request.bth.psn};
  return p;
}

rte_mbuf* to_mbuf(const RocePacket& p, rte_mempool* pool) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  const size_t len = wire::frame_length(p);
  auto* data = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len)));
  if (data == nullptr || wire::encode_frame(p, data, len) != len) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  return m;
}

std::string check_bytes(const uint8_t* frame, size_t len, const RocePacket& want) {
  RocePacket got;
  const wire::Reject r = wire::decode_frame(frame, len, &got);
  if (r != wire::Reject::kOk) return std::string("decode: ") + wire::reject_name(r);
  if (std::memcmp(got.eth.src, want.eth.src, 6) || std::memcmp(got.eth.dst, want.eth.dst, 6))
    return "MAC addresses differ";
  EXPECT_FIELD(ip4.src)
  EXPECT_FIELD(ip4.dst)
  EXPECT_FIELD(udp.src_port)
  EXPECT_FIELD(udp.dst_port)
  EXPECT_FIELD(bth.opcode)
  EXPECT_FIELD(bth.se)
  EXPECT_FIELD(bth.ack_req)
  EXPECT_FIELD(bth.pad)
  EXPECT_FIELD(bth.dest_qp)
  EXPECT_FIELD(bth.psn)
  EXPECT_FIELD(bth.pkey)
  const uint8_t ext = wire::opcode_info(want.bth.opcode).ext;
  if (ext & wire::kHdrReth) {
    EXPECT_FIELD(reth.va)
    EXPECT_FIELD(reth.rkey)
    EXPECT_FIELD(reth.dma_len)
  }
  if (ext & wire::kHdrAeth) {
    EXPECT_FIELD(aeth.syndrome)
    EXPECT_FIELD(aeth.msn)
  }
  if (ext & wire::kHdrImmDt) EXPECT_FIELD(imm)
  if (ext & wire::kHdrIeth) EXPECT_FIELD(ieth_rkey)
  if (ext & wire::kHdrAtomicEth) {
    EXPECT_FIELD(atomic.va)
    EXPECT_FIELD(atomic.rkey)
    EXPECT_FIELD(atomic.swap_add)
    EXPECT_FIELD(atomic.compare)
  }
  if (ext & wire::kHdrAtomicAckEth) EXPECT_FIELD(atomic_ack.orig)
  EXPECT_FIELD(payload_len)
  if (want.payload_len && std::memcmp(got.payload, want.payload, want.payload_len))
    return "payload bytes differ";
  return {};
}

std::string check_frame(const rte_mbuf* m, const RocePacket& want) {
  std::vector<uint8_t> copy(m->pkt_len);
  const auto* data = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, copy.data()));
  return check_bytes(data, m->pkt_len, want);
}

bool send_all(glue::Port& port, const std::vector<RocePacket>& pkts, uint32_t timeout_ms) {
  const uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
  for (const RocePacket& p : pkts) {
    rte_mbuf* m = to_mbuf(p, port.mempool());
    if (m == nullptr) return false;
    while (port.tx_burst(&m, 1) != 1) {
      if (rte_rdtsc() > deadline) {
        rte_pktmbuf_free(m);
        return false;
      }
      rte_mbuf* drain[32];  // keep answering ARP while the ring drains
      for (uint16_t i = port.rx_burst(drain, 32); i > 0; i--) rte_pktmbuf_free(drain[i - 1]);
    }
  }
  return true;
}

bool receive_and_check(glue::Port& port, const std::vector<RocePacket>& want, uint32_t timeout_ms,
                       const char* who, glue::Port* also) {
  const uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
  size_t next = 0;
  bool ok = true;
  while (next < want.size() && rte_rdtsc() < deadline) {
    rte_mbuf* burst[32];
    if (also != nullptr) {
      const uint16_t n = also->rx_burst(burst, 32);
      for (uint16_t i = 0; i < n; i++) rte_pktmbuf_free(burst[i]);
    }
    const uint16_t n = port.rx_burst(burst, 32);
    for (uint16_t i = 0; i < n; i++) {
      if (next < want.size()) {
        const std::string diff = check_frame(burst[i], want[next]);
        if (!diff.empty()) {
          std::printf("%s: frame %zu (%s psn %u): %s\n", who, next,
                      wire::opcode_info(want[next].bth.opcode).name, want[next].bth.psn, diff.c_str());
          ok = false;
        }
      } else {
        std::printf("%s: unexpected extra frame\n", who);
        ok = false;
      }
      next++;
      rte_pktmbuf_free(burst[i]);
    }
    if (n == 0) rte_delay_us_sleep(50);
  }
  if (next < want.size()) {
    std::printf("%s: received %zu of %zu frames before the timeout\n", who, next, want.size());
    return false;
  }
  std::printf("%s: %zu frames received, decoded and checked (fields, payload, ICRC): %s\n", who,
              want.size(), ok ? "all match" : "MISMATCH");
  return ok;
}

std::string mac_str(const rte_ether_addr& mac) {
  char buf[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(buf, sizeof buf, &mac);
  return buf;
}

std::string ip_str(uint32_t ip) {
  char buf[INET_ADDRSTRLEN];
  const uint32_t be = htonl(ip);
  inet_ntop(AF_INET, &be, buf, sizeof buf);
  return buf;
}

bool parse_ip(const std::string& s, uint32_t* ip) {
  uint32_t be;
  if (inet_pton(AF_INET, s.c_str(), &be) != 1) return false;
  *ip = ntohl(be);
  return true;
}

void print_counters(const char* who, const glue::Port& port) {
  const glue::PortCounters c = port.counters();
  std::printf("%s: rx %lu (roce %lu, arp %lu) tx %lu (arp req %lu, arp rep %lu) tx_err %lu drops %lu",
              who, c.rx_frames, c.rx_roce, c.rx_arp, c.tx_frames, c.tx_arp_requests,
              c.tx_arp_replies, c.tx_errors, c.dropped());
  for (size_t i = 0; i < size_t(glue::Drop::kCount); i++)
    if (c.drops[i]) std::printf(" %s=%lu", glue::drop_name(glue::Drop(i)), c.drops[i]);
  std::printf("\n");
}

}  // namespace ndnic::itest
