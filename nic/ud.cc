// UD datagrams, as rxe sends and receives them on QP1 and ordinary UD QPs: one UD SEND ONLY
// per work request, with a DETH (Q_Key, source QP); no ACKs, no retries, no RNR. A request
// completes once its packet is in the TX batch; a datagram completes a receive with the
// sender's address and QP in the completion rather than a GRH in front of the payload.
#include <cstring>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "nic/engine.h"
#include "nic/sge_walk.h"
#include "ndnic/port.h"

namespace ndnic::nic {
namespace {

/// The destination's MAC: from the work request, else from the port's neighbour table (UD
/// QPs live on the shard that owns it), so ARP is per destination and shared by all QPs.
glue::Resolve dest_mac(Shard& s, const UdDest& ud, rte_ether_addr* mac) {
  static constexpr uint8_t kZero[6] = {};
  if (std::memcmp(ud.dest_mac, kZero, 6) != 0) {
    std::memcpy(mac->addr_bytes, ud.dest_mac, 6);
    return glue::Resolve::kResolved;
  }
  return s.port->resolve(ud.dest_ipv4, mac);
}

/// What became of a datagram: sent or failed (done either way), or waiting.
enum class Datagram : uint8_t { kDone, kWaitForArp, kNoRoom };

/// Sends the datagram of `w`, or fails it.
Datagram send_datagram(Shard& s, Qp::Impl& qp, SendWqe& w) {
  // IBTA C10-93.1.1 has the CI drop an oversize UD message silently (rxe fakes success);
  // failing it tells the sender (the CM) at once instead.
  if (w.length > qp.attr.path_mtu) {
    w.state = WqeState::kError;
    w.status = WcStatus::kLocalLength;
    return Datagram::kDone;
  }
  rte_ether_addr mac;
  switch (dest_mac(s, w.wr.ud, &mac)) {
    case glue::Resolve::kPending:
      return Datagram::kWaitForArp;
    case glue::Resolve::kFailed:  // ARP went unanswered: the nearest thing to retries exhausted
      w.state = WqeState::kError;
      w.status = WcStatus::kRetryExceeded;
      return Datagram::kDone;
    case glue::Resolve::kResolved:
      break;
  }
  wire::RocePacket p;
  std::memcpy(p.eth.dst, mac.addr_bytes, 6);
  p.ip4.dst = w.wr.ud.dest_ipv4;
  p.bth.opcode = wire::kUdSendOnly;
  p.bth.dest_qp = w.wr.ud.remote_qpn;
  p.bth.psn = qp.req.psn;
  p.bth.ack_req = true;  // as rxe sets it on every UD packet; nobody answers it
  p.bth.se = w.wr.flags & kWrSolicited;
  p.deth.qkey = qp.caps.gsi ? kGsiQkey : w.wr.ud.qkey;
  p.deth.src_qp = qp.qpn;
  Gather g;
  // Checked again here: a datagram may have waited for ARP since FETCH, and its region with it.
  if (!requester_gather_checked(s, qp, w, 0, w.length, &g)) {
    w.state = WqeState::kError;
    w.status = WcStatus::kLocalProtection;
    return Datagram::kDone;
  }
  // Always copied: a datagram completes as it is sent, and its buffer may be reused or its
  // region deregistered while the frame still waits for the peer, which nothing acknowledges.
  g.pins = nullptr;
  if (!send_packet_to(s, qp, p, &g)) return Datagram::kNoRoom;
  qp.req.psn = psn_add(qp.req.psn, 1);
  w.state = WqeState::kDone;
  return Datagram::kDone;
}

/// Scatters a datagram into a receive; the status its completion carries.
WcStatus scatter(Shard& s, const Qp::Impl& qp, const RecvWr& rw, const uint8_t* src, uint32_t len) {
  uint64_t capacity = 0;
  for (unsigned i = 0; i < rw.num_sge; i++) capacity += rw.sge[i].length;
  if (len > capacity) return WcStatus::kLocalLength;
  const bool ok = for_each_piece(rw.sge, rw.num_sge, 0, len, [&](unsigned i, uint32_t at, uint32_t take) {
    const Sge& g = rw.sge[i];
    Resolved res;
    if (s.dev->memory.check_local(qp.pd, g.lkey, g.addr + at, take, true, &res) != KeyCheck::kOk) return false;
    std::memcpy(res.host, src, take);
    src += take;
    return true;
  });
  return ok ? WcStatus::kSuccess : WcStatus::kLocalProtection;
}

}  // namespace

unsigned ud_requester_run(Shard& s, Qp::Impl& qp) {
  if (!requester_ready(s, qp)) return 0;
  ReqState& r = qp.req;
  unsigned done = 0;
  // A datagram waiting for its destination's ARP does not hold back those behind it: a CM
  // peer that never answers ARP (a spoofed source, say) would otherwise stall every MAD of QP1
  // for a second each time. Datagrams to one destination keep their order (they all wait for
  // the same answer), and completions stay in order.
  for (uint32_t i = r.next; done < kSendBudget && i != r.tail && s.tx_room(); i++) {
    SendWqe& w = r.sq[i & r.mask];
    if (w.state != WqeState::kPosted) continue;
    const Datagram d = send_datagram(s, qp, w);
    if (d == Datagram::kNoRoom) break;
    if (d == Datagram::kDone) done++;
  }
  while (r.next != r.tail && r.sq[r.next & r.mask].state != WqeState::kPosted) r.next++;
  // A failed request does not take the QP to ERROR: QP1 serves every peer of the device, and
  // one bad datagram must not cut off the others.
  for (; r.head != r.next; r.head++) complete_wqe(qp, r.sq[r.head & r.mask]);
  return done;
}

void ud_recv_packet(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt) {
  const QpState st = qp.state.load(std::memory_order_relaxed);
  if (qp.caps.type != QpType::kUd || pkt.bth.opcode != wire::kUdSendOnly ||
      (st != QpState::kRtr && st != QpState::kRts)) {
    s.unknown_qp++;
    return;
  }
  qp.counters.rx_packets++;
  qp.counters.rx_bytes += pkt.frame_len;
  if (pkt.deth.qkey != qp.attr.qkey) {
    qp.counters.qkey_drops++;
    return;
  }
  const RecvWr* rw = next_recv(qp);
  if (!rw) {
    qp.counters.no_recv_drops++;
    return;
  }
  Completion c{};
  c.wr_id = rw->wr_id;
  // Unlike RC, an error fails this receive only, not the QP (QP1 again).
  c.status = scatter(s, qp, *rw, pkt.payload, pkt.payload_len);
  c.opcode = WcOpcode::kRecv;
  c.byte_len = pkt.payload_len;
  c.qpn = qp.qpn;
  c.solicited = pkt.bth.se;
  c.src_ipv4 = pkt.ip4.src;
  c.src_qpn = pkt.deth.src_qp;
  end_recv(qp);  // everything is read from it
  count_one(qp.recvs_completed);
  // A datagram is unreliable anyway: one lost on a full CQ is counted there (Cq::overrun), and
  // the QP (QP1, the CM's, among them) goes on: a flood must not take the CM down.
  new_completion(qp, qp.recv_cq) = c;
}

}  // namespace ndnic::nic
