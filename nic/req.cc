// The requester: takes work requests off the QP's send ring and turns them into packets.
// States, as in rxe_req.c: FETCH (ring -> SQ, local key checks), then per WQE: LOCAL_OP
// (bind / local invalidate, executed in order), FENCE_WAIT, RD_ATOMIC_LIMIT, WINDOW_FULL,
// SEND_PACKET (segmented by path MTU); RETRY rewinds to a PSN (go-back-N).
#include <algorithm>
#include <cstring>

#include "nic/engine.h"
#include "nic/sge_walk.h"
#include "nic/wr_ring.h"
#include "ndnic/port.h"

namespace ndnic::nic {
namespace {

bool is_rd_atomic(WrOpcode op) {
  return op == WrOpcode::kRead || op == WrOpcode::kCompareSwap || op == WrOpcode::kFetchAdd;
}
bool is_atomic(WrOpcode op) { return op == WrOpcode::kCompareSwap || op == WrOpcode::kFetchAdd; }
bool is_local(WrOpcode op) { return op == WrOpcode::kBindMw || op == WrOpcode::kLocalInv; }

}  // namespace

/// FETCH: ring -> SQ slot; SGEs checked against their regions now, so a bad lkey fails the
/// request before anything goes on the wire.
void requester_fetch(Shard& s, Qp::Impl& qp) {
  ReqState& r = qp.req;
  const uint32_t room = r.mask + 1 - (r.tail - r.head);
  if (room == 0) return;
  const bool ud = qp.caps.type == QpType::kUd;
  qp.send_ring.take_burst(room, [&](const SendWr& posted) {
    SendWqe& w = r.sq[r.tail & r.mask];
    wr_copy(&w.wr, posted, ud);
    w.state = WqeState::kPosted;
    w.status = WcStatus::kSuccess;
    w.sent = w.placed = 0;
    w.rd_counted = false;
    w.psn_assigned = false;
    w.atomic_orig = 0;
    w.length = 0;
    // The checks read the ring's copy, written long before: the WQE's was just written (a
    // wide copy), and narrower loads from it would wait for those stores to complete.
    if (posted.flags & kWrInline) {
      w.length = posted.inline_len;
    } else if (!is_local(posted.opcode)) {
      const bool sink = is_rd_atomic(posted.opcode);  // READ/atomic results are written locally
      w.region_epoch = s.dev->memory.region_epoch();  // read before the checks it vouches for
      for (unsigned i = 0; i < posted.num_sge; i++) {
        const Sge& g = posted.sge[i];
        Resolved res;
        if (s.dev->memory.check_local(qp.pd, g.lkey, g.addr, g.length, sink, &res) != KeyCheck::kOk) {
          w.state = WqeState::kError;
          w.status = WcStatus::kLocalProtection;
          break;
        }
        w.host[i] = res.host;
        if (i == 0) w.pins = res.pins;
        w.length += g.length;
      }
    }
    if (w.state == WqeState::kPosted && is_atomic(posted.opcode) && w.length < 8) {
      w.state = WqeState::kError;
      w.status = WcStatus::kLocalLength;
    }
    r.tail++;
  });
}

/// Gathers [off, off+len) of the WQE's payload from the addresses FETCH resolved (only for
/// payloads known to be valid now; packets use requester_gather_checked).
void requester_gather(const SendWqe& w, uint32_t off, uint32_t len, Gather* g) {
  g->n = 0;
  g->total = len;
  g->pins = nullptr;
  if (len == 0) return;
  if (w.wr.flags & kWrInline) {
    g->ptr[0] = w.wr.inline_data + off;
    g->len[0] = len;
    g->n = 1;
    return;
  }
  for_each_piece(w.wr.sge, w.wr.num_sge, off, len, [&](unsigned i, uint32_t at, uint32_t take) {
    g->ptr[g->n] = w.host[i] + at;
    g->len[g->n++] = take;
    return true;
  });
}

/// Gathers [off, off+len) of a WQE's payload for one packet, each piece checked against
/// its lkey now, not only at FETCH: a retransmission, or a first transmission that waited
/// behind the window, may come after the application deregistered (and freed) the region.
/// Deregistration clears the key before it waits for a grace period, so bytes that pass the
/// check here stay the region's until this packet is built; FETCH's check stands in for it
/// while the region epoch has not moved. False when a check fails.
bool requester_gather_checked(Shard& s, const Qp::Impl& qp, const SendWqe& w, uint32_t off, uint32_t len, Gather* g) {
  if (len == 0 || (w.wr.flags & kWrInline)) {
    requester_gather(w, off, len, g);  // inline data lives in the WQE itself
    return true;
  }
  // No deregistration has started since FETCH checked the one SGE: its check still holds
  // (MemoryTable::region_epoch), and the key lookup is saved on every packet. Written out
  // rather than through requester_gather: that call cost BM_stream SEND 64 B 27 instructions
  // per message (2194.6 -> 2221.6).
  if (w.wr.num_sge == 1 && s.dev->memory.region_epoch() == w.region_epoch) {
    g->n = 1;
    g->total = len;
    g->ptr[0] = w.host[0] + off;
    g->len[0] = len;
    g->pins = w.pins;
    return true;
  }
  g->n = 0;
  g->total = len;
  g->pins = nullptr;
  return for_each_piece(w.wr.sge, w.wr.num_sge, off, len, [&](unsigned i, uint32_t at, uint32_t take) {
    const Sge& sge = w.wr.sge[i];
    Resolved res;
    if (s.dev->memory.check_local(qp.pd, sge.lkey, sge.addr + at, take, false, &res) != KeyCheck::kOk)
      return false;
    g->ptr[g->n] = res.host;
    g->len[g->n++] = take;
    g->pins = g->n == 1 ? res.pins : nullptr;
    return true;
  });
}

namespace {

/// Everything before `next` has been on the wire: the completer believes no response past it.
void note_sent(Qp::Impl& qp, uint32_t next) {
  CompState& c = qp.comp;
  if (!c.sent_any || psn_diff(next, c.sent_psn) > 0) c.sent_psn = next;
  c.sent_any = true;
}

/// LOCAL_OP: bind and local invalidate run when the requester reaches them, in order.
void local_op(Shard& s, Qp::Impl& qp, SendWqe& w) {
  MemoryTable& mem = s.dev->memory;
  KeyCheck k;
  const MwName name = (w.wr.flags & kWrWindowHandle) ? MwName::kHandle : MwName::kCurrentKey;
  if (w.wr.opcode == WrOpcode::kBindMw) {
    const MwBind& b = w.wr.bind;
    uint32_t key = 0;
    // Bound to this QP instance (not its number, which a later QP may reuse).
    k = mem.bind_mw(qp.pd, qp.id, b.mw_key, b.mr_lkey, b.addr, b.length, b.access, b.new_key, &key, name);
    if (k == KeyCheck::kOk) w.wr.bind.mw_key = key;  // reported in the completion
    w.status = k == KeyCheck::kOk ? WcStatus::kSuccess : WcStatus::kMwBind;
  } else {
    uint64_t ctx;
    k = mem.invalidate_mw(qp.pd, qp.id, w.wr.invalidate_rkey, &ctx, name);
    w.status = k == KeyCheck::kOk ? WcStatus::kSuccess : WcStatus::kLocalProtection;
  }
  w.state = w.status == WcStatus::kSuccess ? WqeState::kDone : WqeState::kError;
}

uint8_t send_opcode(const SendWqe& w, bool first, bool last) {
  using namespace wire;
  const WrOpcode op = w.wr.opcode;
  if (op == WrOpcode::kWrite || op == WrOpcode::kWriteImm) {
    const bool imm = op == WrOpcode::kWriteImm;
    if (first && last) return imm ? kRcWriteOnlyImm : kRcWriteOnly;
    if (first) return kRcWriteFirst;
    if (last) return imm ? kRcWriteLastImm : kRcWriteLast;
    return kRcWriteMiddle;
  }
  if (first && last) {
    if (op == WrOpcode::kSendImm) return kRcSendOnlyImm;
    if (op == WrOpcode::kSendInv) return kRcSendOnlyInv;
    return kRcSendOnly;
  }
  if (first) return kRcSendFirst;
  if (last) {
    if (op == WrOpcode::kSendImm) return kRcSendLastImm;
    if (op == WrOpcode::kSendInv) return kRcSendLastInv;
    return kRcSendLast;
  }
  return kRcSendMiddle;
}

/// SEND_PACKET: the next packet of `w`. Returns false when nothing was sent: no mbuf was
/// available, or the payload's region is gone (then `w` has failed).
bool send_next_packet(Shard& s, Qp::Impl& qp, SendWqe& w) {
  ReqState& r = qp.req;
  const uint32_t mtu = qp.attr.path_mtu;
  const WrOpcode op = w.wr.opcode;

  if (op == WrOpcode::kRead) {
    wire::RocePacket p;
    // A READ request asks for everything not yet placed; a retry resumes at the first
    // missing response. The completer never places past the length; bounded here as well,
    // so that no state can make `length - from` wrap into a request for ~4 GiB.
    const uint32_t done_pkts = whole_mtus(std::min(w.placed, w.length), mtu);
    const uint32_t from = done_pkts * mtu;
    p.bth.opcode = wire::kRcReadRequest;
    p.bth.psn = psn_add(w.first_psn, done_pkts);
    p.bth.ack_req = true;
    p.reth.va = w.wr.remote_addr + from;
    p.reth.rkey = w.wr.rkey;
    p.reth.dma_len = w.length - from;
    if (!send_packet(s, qp, p, nullptr)) return false;
    w.sent = w.length;
    r.psn = psn_add(w.last_psn, 1);
    note_sent(qp, r.psn);
    return true;
  }
  if (is_atomic(op)) {
    wire::RocePacket p;
    p.bth.opcode = op == WrOpcode::kCompareSwap ? wire::kRcCompareSwap : wire::kRcFetchAdd;
    p.bth.psn = w.first_psn;
    p.bth.ack_req = true;
    p.atomic.va = w.wr.remote_addr;
    p.atomic.rkey = w.wr.rkey;
    p.atomic.swap_add = op == WrOpcode::kCompareSwap ? w.wr.swap : w.wr.compare_add;
    p.atomic.compare = op == WrOpcode::kCompareSwap ? w.wr.compare_add : 0;
    if (!send_packet(s, qp, p, nullptr)) return false;
    w.sent = w.length;
    r.psn = psn_add(w.first_psn, 1);
    note_sent(qp, r.psn);
    return true;
  }
  // SEND and WRITE: segmented by path MTU.
  const uint32_t off = w.sent;
  const uint32_t len = std::min(w.length - off, mtu);
  const bool first = off == 0;
  const bool last = off + len >= w.length;
  RequestHeaders h;
  h.opcode = send_opcode(w, first, last);
  h.psn = psn_add(w.first_psn, whole_mtus(off, mtu));
  h.ack_req = last || ++r.noack_pkts >= kAckReqEvery;
  h.se = last && (w.wr.flags & kWrSolicited);
  h.va = w.wr.remote_addr;  // RETH: read for a first packet only
  h.rkey = w.wr.rkey;
  h.dma_len = w.length;
  h.imm = w.wr.imm;
  h.invalidate_rkey = w.wr.invalidate_rkey;
  Gather g;
  if (!requester_gather_checked(s, qp, w, off, len, &g)) {
    // As a bad lkey at FETCH: the request fails, the QP goes to ERROR when it completes.
    w.state = WqeState::kError;
    w.status = WcStatus::kLocalProtection;
    return false;
  }
  if (!send_request(s, qp, h, g)) return false;
  if (h.ack_req) r.noack_pkts = 0;
  w.sent = off + len;
  r.psn = psn_add(h.psn, 1);
  note_sent(qp, r.psn);
  return true;
}

/// RETRY: go back to comp.retry_psn. Every sent WQE at or after it is sent again from there.
void rewind(Qp::Impl& qp) {
  ReqState& r = qp.req;
  const uint32_t mtu = qp.attr.path_mtu;
  const uint32_t psn = qp.comp.retry_psn;
  bool found = false;
  // Every WQE with PSNs on the wire, the one still being sent (at r.next) included.
  for (uint32_t i = r.head; i != r.tail; i++) {
    SendWqe& w = r.sq[i & r.mask];
    if (is_local(w.wr.opcode)) continue;  // no PSNs: executed once, in order
    if (!w.psn_assigned) break;           // nothing from here on has been sent
    if (w.state != WqeState::kSent && w.state != WqeState::kPosted) continue;
    if (psn_diff(w.last_psn, psn) < 0) continue;  // entirely before the retry point
    if (!found) {
      r.next = i;
      found = true;
    }
    w.state = WqeState::kPosted;
    if (w.wr.opcode == WrOpcode::kRead || is_atomic(w.wr.opcode)) {
      w.sent = 0;
    } else {
      const int32_t d = psn_diff(psn, w.first_psn);
      w.sent = d > 0 ? uint32_t(d) * mtu : 0;
    }
  }
  if (found) r.psn = psn;
  qp.comp.retry_pending = false;
}

}  // namespace

bool requester_take(Shard& s, Qp::Impl& qp, QpState st) {
  requester_fetch(s, qp);
  if (st == QpState::kError) qp_flush(s, qp);  // posts to a QP in ERROR complete as flushed
  return st == QpState::kRts;
}

unsigned requester_send(Shard& s, Qp::Impl& qp) {
  if (qp.comp.rnr_tsc) return 0;  // waiting out an RNR NAK
  ReqState& r = qp.req;
  if (qp.comp.retry_pending) {
    const uint32_t before = psn_diff(r.psn, qp.comp.retry_psn) > 0 ? psn_diff(r.psn, qp.comp.retry_psn) : 0;
    rewind(qp);
    qp.counters.retransmits += before;
  }
  unsigned sent = 0;
  while (sent < kSendBudget && r.next != r.tail && s.tx_room()) {
    SendWqe& w = r.sq[r.next & r.mask];
    if (w.state == WqeState::kDone) {  // acknowledged already: a go-back passes over it
      r.next++;
      continue;
    }
    // Failed (in FETCH, or a region gone under a packet): the QP goes to ERROR once it
    // completes in order, and what is behind it is flushed. Sent now, the peer would execute
    // requests the application is told were flushed.
    if (w.state == WqeState::kError) break;
    const WrOpcode op = w.wr.opcode;
    // FENCE_WAIT: a fenced request (and a local op, which changes memory) waits for earlier
    // READs and atomics.
    if ((w.wr.flags & kWrFence || is_local(op)) && r.rd_atomic_outstanding > 0 && !w.rd_counted) break;
    if (is_local(op)) {
      local_op(s, qp, w);
      // A failed bind or invalidate stays at `next`, like a request that failed in FETCH: the
      // QP goes to ERROR when it completes in order, and nothing behind it runs first.
      if (w.state == WqeState::kError) break;
      r.next++;
      continue;
    }
    // RD_ATOMIC_LIMIT
    if (is_rd_atomic(op) && !w.rd_counted && r.rd_atomic_outstanding >= qp.attr.max_rd_atomic) break;
    // WINDOW_FULL
    if (psn_diff(r.psn, qp.comp.psn) >= int32_t(kMaxUnackedPsns)) break;
    if (!qp.mac_known && !s.resolve_mac(qp)) break;
    if (!w.psn_assigned) {
      // First transmission: the WQE takes its PSN range and keeps it through retries.
      w.npkts = is_atomic(op) ? 1 : packets_for(w.length, qp.attr.path_mtu);
      w.first_psn = r.psn;
      w.last_psn = psn_add(r.psn, w.npkts - 1);
      w.psn_assigned = true;
    }
    if (is_rd_atomic(op) && !w.rd_counted) {
      w.rd_counted = true;
      r.rd_atomic_outstanding++;
    }
    if (!send_next_packet(s, qp, w)) break;
    sent++;
    if (w.sent >= w.length) {
      w.state = WqeState::kSent;
      r.next++;
    }
    if (!qp.comp.timer_tsc && qp.timeout_tsc) qp.comp.timer_tsc = kArmAtNextLook;
  }
  advance_completions(s, qp);
  return sent;
}

}  // namespace ndnic::nic
