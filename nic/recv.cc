// Receive dispatch: a decoded packet goes to its QP's responder (requests) or completer
// (responses), or to the UD path; anything for a QP that cannot take it is counted and dropped.
#include <cstring>

#include "nic/engine.h"
#include "nic/payload_copy.h"
#include "wire/icrc.h"

namespace ndnic::nic {

namespace {

/// Whether `pkt` is intact, its pending ICRC (if any) checked now and no longer pending.
bool icrc_settles(wire::RocePacket& pkt) {
  if (!pkt.icrc_pending) return true;
  pkt.icrc_pending = false;
  return wire::icrc_check_pending(pkt);
}

}  // namespace

bool settle_icrc(Shard& s, wire::RocePacket& pkt) {
  if (icrc_settles(pkt)) return true;
  s.rejects.add(wire::Reject::kIcrcMismatch);
  return false;
}

// Cold: a corrupt packet is rare, and the responder calls these from each of its refusals.
[[gnu::cold]] void drop_corrupt(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt) {
  s.rejects.add(wire::Reject::kIcrcMismatch);
  qp.counters.rx_packets--;  // counted on arrival, before its copy found it corrupt
  qp.counters.rx_bytes -= pkt.frame_len;
}

[[gnu::cold]] bool settle_counted_icrc(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt) {
  if (icrc_settles(pkt)) return true;
  drop_corrupt(s, qp, pkt);
  return false;
}

bool recv_packet(Shard& s, wire::RocePacket& pkt, rte_mbuf* m) {
  Qp::Impl* qp = s.dev->qp_by_number(pkt.bth.dest_qp);
  // A packet for no QP of ours is dropped either way; anything else counted is intact.
  if (!qp || qp->shard.load(std::memory_order_relaxed) != &s) {
    if (settle_icrc(s, pkt)) s.unknown_qp++;
    return false;
  }
  const wire::OpcodeInfo& info = wire::opcode_info(pkt.bth.opcode);
  const wire::OpKind kind = info.kind;
  // Only payloads copied where no one may act on them yet keep a pending ICRC (payload_copy.h).
  if (pkt.icrc_pending && !copy_checks_icrc(info) && !settle_icrc(s, pkt)) return false;
  if (qp->caps.type == QpType::kUd || pkt.bth.opcode == wire::kUdSendOnly) {
    if (!settle_icrc(s, pkt)) return false;
    ud_recv_packet(s, *qp, pkt);  // the payload is copied out: `m` is never kept
    return false;
  }
  const QpState st = qp->state.load(std::memory_order_relaxed);
  // A QP receives from RTR on; from its own peer only.
  if (st == QpState::kReset || st == QpState::kInit || st == QpState::kError ||
      pkt.ip4.src != qp->attr.dest_ipv4) {
    if (settle_icrc(s, pkt)) s.unknown_qp++;
    return false;
  }
  if (!qp->mac_known) {
    if (!settle_icrc(s, pkt)) return false;
    // The peer's MAC (or its router's) as the request arrived: replies need no ARP of their own.
    std::memcpy(qp->dest_mac.addr_bytes, pkt.eth.src, 6);
    qp->mac_known = true;
    qp->tx_addressing_changed();
  }
  qp->counters.rx_packets++;
  qp->counters.rx_bytes += pkt.frame_len;  // as tx_bytes: whole frames
  switch (kind) {
    case wire::OpKind::kSend:
    case wire::OpKind::kWrite:
    case wire::OpKind::kReadRequest:
    case wire::OpKind::kAtomic:
      return responder_packet(s, *qp, pkt, info, m);
    case wire::OpKind::kReadResponse:
    case wire::OpKind::kAck:
    case wire::OpKind::kAtomicAck:
      if (st == QpState::kRts) completer_packet(s, *qp, pkt, info);
      return false;
  }
  return false;
}

}  // namespace ndnic::nic
