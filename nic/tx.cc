// Building a QP's packets: addressing from the QP, headers by the wire encoder, the payload
// gathered from registered memory, the ICRC over the result.
#include <cstring>

#include <rte_mbuf.h>

#include "nic/engine.h"
#include "ndnic/port.h"
#include "wire/icrc.h"

namespace ndnic::nic {

bool send_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& p, const Gather* g) {
  std::memcpy(p.eth.dst, qp.dest_mac.addr_bytes, 6);
  p.ip4.dst = qp.attr.dest_ipv4;
  p.bth.dest_qp = qp.attr.remote_qpn;
  return send_packet_to(s, qp, p, g);
}

bool send_packet_to(Shard& s, Qp::Impl& qp, wire::RocePacket& p, const Gather* g) {
  const glue::Port& port = *s.port;
  std::memcpy(p.eth.src, port.mac().addr_bytes, 6);
  p.ipv6 = false;
  p.ip4.src = port.ipv4();
  p.ip4.id = s.ip_id++;
  p.udp.src_port = qp.udp_sport;
  p.payload_len = g ? g->total : 0;

  const size_t total = wire::frame_length(p);
  rte_mbuf* m = s.new_frame();
  if (!m) return false;
  if (rte_pktmbuf_tailroom(m) < total) {
    rte_pktmbuf_free(m);
    return false;
  }
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t* o = d + wire::encode_headers(p, d);
  // The ICRC as the frame is built: the masked prefix up to the BTH from the packet's fields
  // (wire/icrc_prefix.h), the extension headers, then each payload piece CRC'd while it is
  // copied in (one read of the application's bytes).
  constexpr size_t kAfterBth = wire::kEthHdrLen + wire::kIpv4HdrLen + wire::kUdpHdrLen + wire::kBthLen;
  qp.icrc_prefix.set_flow(wire::icrc_flow_of(p));
  uint32_t crc = wire::crc32(qp.icrc_prefix.crc_of(p), d + kAfterBth, size_t(o - d) - kAfterBth);
  if (g) {
    for (unsigned i = 0; i < g->n; i++) {
      crc = wire::crc32_copy(crc, o, g->ptr[i], g->len[i]);
      o += g->len[i];
    }
  }
  const uint8_t pad = wire::pad_for(p.payload_len);
  std::memset(o, 0, pad);
  crc = wire::crc32(crc, o, pad);
  o += pad;
  std::memcpy(o, &crc, 4);  // little-endian on the wire, as on x86
  m->data_len = uint16_t(total);
  m->pkt_len = uint32_t(total);
  qp.counters.tx_packets++;
  qp.counters.tx_bytes += total;
  s.send(m);
  return true;
}

namespace {

void emit_ack(Shard& s, Qp::Impl& qp, uint8_t syndrome, uint32_t psn, uint32_t msn) {
  wire::RocePacket p;
  p.bth.opcode = wire::kRcAck;
  p.bth.psn = psn;
  p.aeth.syndrome = syndrome;
  p.aeth.msn = msn & wire::kPsnMask;
  send_packet(s, qp, p, nullptr);
}

}  // namespace

void send_pending_ack(Shard& s, Qp::Impl& qp) {
  RespState& r = qp.resp;
  if (!r.ack_pending) return;
  r.ack_pending = false;
  emit_ack(s, qp, kAckUnlimited, r.ack_psn, r.ack_msn);
}

void send_ack(Shard& s, Qp::Impl& qp, uint8_t syndrome, uint32_t psn) {
  send_pending_ack(s, qp);
  emit_ack(s, qp, syndrome, psn, qp.resp.msn);
}

void ack_later(Shard& s, Qp::Impl& qp, uint32_t psn) {
  RespState& r = qp.resp;
  if (!r.ack_pending) {
    r.ack_pending = true;
    s.acks_due.push_back(&qp);
  }
  r.ack_psn = psn;
  r.ack_msn = r.msn;
}

}  // namespace ndnic::nic
