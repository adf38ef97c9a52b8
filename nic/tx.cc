// Building a QP's packets: addressing from the QP, headers by the wire encoder, the payload
// gathered from registered memory, the ICRC over the result.
#include <algorithm>
#include <cassert>
#include <cstring>

#include <rte_mbuf.h>

#include "nic/engine.h"
#include "ndnic/port.h"
#include "wire/ext_headers.h"
#include "wire/icrc.h"

namespace ndnic::nic {

namespace {

/// The six bytes as a number, put together in registers: copied into a zeroed word, they were
/// read back wider than they were stored, which stalls until the stores complete.
uint64_t mac_bits(const rte_ether_addr& a) {
  uint32_t lo;
  uint16_t hi;
  std::memcpy(&lo, a.addr_bytes, 4);
  std::memcpy(&hi, a.addr_bytes + 4, 2);
  return lo | uint64_t(hi) << 32;
}

/// The pad (zeros) and the ICRC at `at`, the ICRC's state before them being `crc`.
void write_trailer(uint8_t* at, uint32_t crc, uint8_t pad) {
  std::memset(at, 0, pad);
  crc = wire::crc32(crc, at, pad);
  std::memcpy(at + pad, &crc, 4);  // little-endian on the wire, as on x86
}

/// The free callback of an attached payload: the frame is done with the region's bytes.
void release_pin(void*, void* opaque) {
  static_cast<TxPins*>(opaque)->released.fetch_add(1, std::memory_order_release);
}

/// Where attach_payload's shared-info block starts in the tail's data: past the largest pad
/// (kMaxPad) and the ICRC, aligned for its pointers.
constexpr size_t kMaxPad = 3;
constexpr size_t kShinfoAt = 8;
static_assert(kShinfoAt >= kMaxPad + wire::kIcrcLen && kShinfoAt % alignof(rte_mbuf_ext_shared_info) == 0);

/// Zero-copy: the payload goes out where it lies, in an mbuf attached to the region's bytes
/// (rte_pktmbuf_attach_extbuf) and chained behind the headers' mbuf `m`, with the pad and ICRC
/// in a third. The payload is read once, for the ICRC; the frame's lines, which the peer's core
/// touched last, are not written. The region stays pinned until the frame is freed. False
/// (nothing changed) when the pool is out of mbufs: the caller copies instead.
bool attach_payload(Shard& s, rte_mbuf* m, uint8_t* o, uint32_t crc, const Gather& g, uint8_t pad) {
  rte_mbuf* pay = s.new_segment();
  rte_mbuf* tail = pay ? s.new_segment() : nullptr;
  if (!tail) {
    if (pay) rte_pktmbuf_free(pay);
    return false;
  }
  // The shared-info block lives in the tail's buffer, just past the pad and ICRC: on the line
  // the receiver reads for the ICRC anyway, which the sender writes anyway. In the payload
  // mbuf's own buffer, as it was, it cost the freeing core a miss of its own on every frame
  // (perf, write_bw 64 KiB over net_ring: ~5% of the receiving thread). A chain is freed head
  // first (rte_pktmbuf_free, retire_segments), so the tail outlives the payload's detach,
  // which reads the block.
  uint8_t* trailer = rte_pktmbuf_mtod(tail, uint8_t*);
  auto* shinfo = reinterpret_cast<rte_mbuf_ext_shared_info*>(trailer + kShinfoAt);
  shinfo->free_cb = release_pin;
  shinfo->fcb_opaque = g.pins;
  rte_mbuf_ext_refcnt_set(shinfo, 1);
  auto* bytes = const_cast<uint8_t*>(g.ptr[0]);
  g.pins->attached.fetch_add(1, std::memory_order_relaxed);
  rte_pktmbuf_attach_extbuf(pay, bytes, rte_iova_t(uintptr_t(bytes)), uint16_t(g.len[0]), shinfo);
  pay->data_len = uint16_t(g.len[0]);
  crc = wire::crc32(crc, bytes, g.len[0]);
  write_trailer(trailer, crc, pad);
  set_if_new(tail->data_len, pad + 4);  // the tail's header line then stays shared
  set_if_new(m->data_len, o - rte_pktmbuf_mtod(m, uint8_t*));
  m->next = pay;
  pay->next = tail;
  m->nb_segs = 3;
  return true;
}

/// Whether a frame sends g's payload where it lies (attach_payload) rather than copying it in,
/// as long as the pool has the mbufs. Decided once per frame: start_frame asks for the lines
/// the frame will write, finish_frame attaches or copies.
bool attaches(const Shard& s, const Gather* g) {
  return g && g->pins && g->n == 1 && s.zero_copy_min && g->total >= s.zero_copy_min;
}

/// A built frame of `total` bytes (its segments' lengths set): counted, then queued.
void queue_frame(Shard& s, Qp::Impl& qp, rte_mbuf* m, size_t total) {
  set_if_new(m->pkt_len, total);
  qp.counters.tx_packets++;
  qp.counters.tx_bytes += total;
  s.send(m);
}

/// The rest of a frame whose headers are at [d, o) and whose ICRC state after them is `crc`:
/// each payload piece CRC'd while it is copied in (one read of the application's bytes), or,
/// with `attach` (attaches(), decided once by the caller), attached where it lies
/// (attach_payload); the pad, the ICRC; then it is queued.
void finish_frame(Shard& s, Qp::Impl& qp, rte_mbuf* m, uint8_t* o, uint32_t crc, const Gather* g, bool attach,
                  uint8_t pad, size_t total) {
  if (attach && attach_payload(s, m, o, crc, *g, pad)) {
    qp.counters.tx_zero_copy++;
  } else {
    if (g) {
      for (unsigned i = 0; i < g->n; i++) {
        crc = wire::crc32_copy(crc, o, g->ptr[i], g->len[i]);
        o += g->len[i];
      }
    }
    write_trailer(o, crc, pad);
    set_if_new(m->data_len, total);
  }
  queue_frame(s, qp, m, total);
}

/// An empty mbuf with room for `room` bytes, of which the first `written` are to be written
/// into it (the rest attached), or nullptr.
rte_mbuf* frame_for(Shard& s, size_t room, size_t written) {
  rte_mbuf* m = s.new_frame(written);
  if (m && size_t(m->buf_len - m->data_off) < room) {  // its data_len is the builder's to set
    rte_pktmbuf_free(m);
    return nullptr;
  }
  return m;
}

/// Makes the QP's header template again from what it is made of (a new peer address, MAC or
/// port): out of line, so that the check every packet makes stays small and inlined.
[[gnu::noinline]] void rebuild_tx_headers(const glue::Port& port, Qp::Impl& qp, const Qp::Impl::TxFlow& now) {
  wire::RocePacket flow;
  std::memcpy(flow.eth.dst, qp.dest_mac.addr_bytes, 6);
  std::memcpy(flow.eth.src, port.mac().addr_bytes, 6);
  flow.ip4.src = port.ipv4();
  flow.ip4.dst = qp.attr.dest_ipv4;
  flow.udp.src_port = qp.udp_sport;
  flow.bth.dest_qp = qp.attr.remote_qpn;
  qp.tx_headers.build(flow);
  qp.tx_flow = now;
}

/// What the QP's header template is made of, as it is now.
Qp::Impl::TxFlow tx_flow_now(const glue::Port& port, const Qp::Impl& qp) {
  return {mac_bits(qp.dest_mac) | uint64_t(qp.udp_sport) << 48, mac_bits(port.mac()),
          uint64_t(port.ipv4()) << 32 | qp.attr.dest_ipv4, qp.attr.remote_qpn, true};
}

/// The QP's header template (wire/header_template.h), made again after what it is made of
/// changed (Qp::Impl::tx_addressing_changed).
[[gnu::always_inline]] inline const wire::HeaderTemplate& tx_headers(const Shard& s, Qp::Impl& qp) {
  if (unlikely(!qp.tx_flow.built)) rebuild_tx_headers(*s.port, qp, tx_flow_now(*s.port, qp));
  // A change that did not call tx_addressing_changed() would send to the old peer.
  assert(qp.tx_flow == tx_flow_now(*s.port, qp));
  return qp.tx_headers;
}

/// A frame for a packet of `qp` whose UDP length is `udp_len`, `attached` of whose bytes (its
/// payload, where it is attached rather than copied) are not written into the mbuf, its headers
/// through the BTH written from the QP's template, `*crc` the ICRC's state after them; nullptr
/// when no mbuf was free. Each of the QP's packet kinds below goes on from here.
[[gnu::always_inline]] inline rte_mbuf* start_frame(Shard& s, Qp::Impl& qp, size_t udp_len, size_t attached,
                                                    uint8_t opcode, uint8_t bth_flags, uint32_t psn_word,
                                                    uint32_t* crc) {
  const wire::HeaderTemplate& headers = tx_headers(s, qp);
  const size_t room = std::max(wire::kEthHdrLen + wire::kIpv4HdrLen + udp_len, wire::kTemplateWriteLen);
  rte_mbuf* m = frame_for(s, room, room - attached);
  if (m)
    *crc = headers.write(rte_pktmbuf_mtod(m, uint8_t*), opcode, bth_flags, psn_word, s.ip_id++, uint16_t(udp_len));
  return m;
}

}  // namespace

bool send_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& p, const Gather* g) {
  p.payload_len = g ? g->total : 0;
  const uint8_t pad = wire::pad_for(p.payload_len);
  const size_t udp_len = wire::udp_length(p);
  const size_t total = wire::kEthHdrLen + wire::kIpv4HdrLen + udp_len;
  const uint32_t psn_word = (p.bth.ack_req ? 0x80000000u : 0) | (p.bth.psn & wire::kPsnMask);
  const bool attach = attaches(s, g);
  uint32_t crc;
  rte_mbuf* m =
      start_frame(s, qp, udp_len, attach ? g->total : 0, p.bth.opcode, wire::bth_flags(p), psn_word, &crc);
  if (!m) return false;
  uint8_t* ext = rte_pktmbuf_mtod(m, uint8_t*) + wire::kTemplateLen;
  uint8_t* o = wire::encode_ext_headers(p, ext);
  crc = wire::crc32(crc, ext, size_t(o - ext));
  finish_frame(s, qp, m, o, crc, g, attach, pad, total);
  return true;
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
  const bool attach = attaches(s, g);
  rte_mbuf* m = frame_for(s, total, attach ? total - g->total : total);
  if (!m) return false;
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t* o = d + wire::encode_headers(p, d);
  // The ICRC as the frame is built: the masked prefix up to the BTH from the packet's fields
  // (wire/icrc_prefix.h), then the extension headers and the payload.
  constexpr size_t kAfterBth = wire::kEthHdrLen + wire::kIpv4HdrLen + wire::kUdpHdrLen + wire::kBthLen;
  qp.icrc_prefix.set_flow(wire::icrc_flow_of(p));
  const uint32_t crc = wire::crc32(qp.icrc_prefix.crc_of(p), d + kAfterBth, size_t(o - d) - kAfterBth);
  finish_frame(s, qp, m, o, crc, g, attach, wire::pad_for(p.payload_len), total);
  return true;
}

namespace {

constexpr uint16_t kAckUdpLen = wire::udp_length(wire::kAethLen, 0);
constexpr size_t kAckFrameLen = wire::kEthHdrLen + wire::kIpv4HdrLen + kAckUdpLen;

/// An ACK or NAK, written straight from the QP's template: the receiver of a message ACKs it
/// before its application sees it, so every half round trip of a ping-pong waits for one.
/// Through send_packet (a RocePacket, the general extension-header, pad and CRC paths) it
/// was ~430 instructions.
void emit_ack(Shard& s, Qp::Impl& qp, uint8_t syndrome, uint32_t psn, uint32_t msn) {
  uint32_t crc;
  rte_mbuf* m = start_frame(s, qp, kAckUdpLen, 0, wire::kRcAck, 0, psn & wire::kPsnMask, &crc);
  if (!m) return;  // as a lost ACK: the requester's timer or the next ACK covers it
  uint8_t* aeth = rte_pktmbuf_mtod(m, uint8_t*) + wire::kTemplateLen;
  uint8_t* const after = wire::write_aeth(aeth, syndrome, msn);
  crc = wire::crc32_4(crc, aeth);
  std::memcpy(after, &crc, 4);  // little-endian on the wire, as on x86
  set_if_new(m->data_len, kAckFrameLen);
  queue_frame(s, qp, m, kAckFrameLen);
}

}  // namespace

bool send_request(Shard& s, Qp::Impl& qp, const RequestHeaders& h, const Gather& g) {
  const wire::OpcodeInfo& info = wire::opcode_info(h.opcode);
  const uint8_t pad = wire::pad_for(g.total);
  const size_t udp_len = wire::udp_length(info.ext_len, g.total);
  const uint8_t flags = uint8_t((h.se ? 0x80 : 0) | pad << 4);
  const uint32_t psn_word = (h.ack_req ? 0x80000000u : 0) | (h.psn & wire::kPsnMask);
  const bool attach = attaches(s, &g);
  uint32_t crc;
  rte_mbuf* m = start_frame(s, qp, udp_len, attach ? g.total : 0, h.opcode, flags, psn_word, &crc);
  if (!m) return false;
  uint8_t* const ext = rte_pktmbuf_mtod(m, uint8_t*) + wire::kTemplateLen;
  uint8_t* o = ext;
  // In the order IBTA puts them (wire/encode.cc); no SEND or WRITE opcode has another.
  if (info.ext & wire::kHdrReth) o = wire::write_reth(o, h.va, h.rkey, h.dma_len);
  if (info.ext & wire::kHdrImmDt) o = wire::write_immdt(o, h.imm);
  if (info.ext & wire::kHdrIeth) o = wire::write_ieth(o, h.invalidate_rkey);
  crc = wire::crc32(crc, ext, size_t(o - ext));
  finish_frame(s, qp, m, o, crc, &g, attach, pad, wire::kEthHdrLen + wire::kIpv4HdrLen + udp_len);
  return true;
}

bool send_read_response(Shard& s, Qp::Impl& qp, uint8_t opcode, uint32_t psn, uint32_t msn, const Gather& g) {
  const bool aeth = opcode != wire::kRcReadResponseMiddle;
  const uint8_t pad = wire::pad_for(g.total);
  const size_t udp_len = wire::udp_length(aeth ? wire::kAethLen : 0, g.total);
  const bool attach = attaches(s, &g);
  uint32_t crc;
  rte_mbuf* m =
      start_frame(s, qp, udp_len, attach ? g.total : 0, opcode, uint8_t(pad << 4), psn & wire::kPsnMask, &crc);
  if (!m) return false;
  uint8_t* o = rte_pktmbuf_mtod(m, uint8_t*) + wire::kTemplateLen;
  if (aeth) {
    uint8_t* const at = o;
    o = wire::write_aeth(o, kAckUnlimited, msn);
    crc = wire::crc32_4(crc, at);
  }
  finish_frame(s, qp, m, o, crc, &g, attach, pad, wire::kEthHdrLen + wire::kIpv4HdrLen + udp_len);
  return true;
}

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

}  // namespace ndnic::nic
