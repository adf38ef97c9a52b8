// QP state changes (RESET -> INIT -> RTR -> RTS, ERROR), in-order completions, and the flush
// of both queues when the QP enters ERROR.
#include <cstring>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "nic/engine.h"
#include "nic/wr_ring.h"
#include "ndnic/port.h"

namespace ndnic::nic {
namespace {

WcOpcode wc_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kSend:
    case WrOpcode::kSendImm:
    case WrOpcode::kSendInv:
      return WcOpcode::kSend;
    case WrOpcode::kWrite:
    case WrOpcode::kWriteImm:
      return WcOpcode::kWrite;
    case WrOpcode::kRead:
      return WcOpcode::kRead;
    case WrOpcode::kCompareSwap:
      return WcOpcode::kCompareSwap;
    case WrOpcode::kFetchAdd:
      return WcOpcode::kFetchAdd;
    case WrOpcode::kBindMw:
      return WcOpcode::kBindMw;
    case WrOpcode::kLocalInv:
      return WcOpcode::kLocalInv;
  }
  return WcOpcode::kSend;
}

bool valid_mtu(uint32_t mtu) {
  return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

/// The UDP source port rxe derives from the QPNs (flow label folded into 14 bits), so both
/// directions of a connection share one port, as with rxe.
uint16_t udp_sport_for(uint32_t lqpn, uint32_t rqpn) {
  uint64_t fl = uint64_t(lqpn) * rqpn;
  fl ^= fl >> 20;
  fl ^= fl >> 40;
  const uint32_t label = uint32_t(fl & 0xFFFFF);
  return uint16_t(0xC000 | ((label & 0x3FFF) ^ (label >> 14)));
}

/// A QP without a flow label (UD, QP1 among them) gets rxe's 0xC000 + hash_32(qpn, 14): one
/// port for all its datagrams, 0xd872 on QP1 as in rxe's CM MADs.
uint16_t ud_sport_for(uint32_t qpn) { return uint16_t(0xC000 + ((qpn * 0x61C88647u) >> 18)); }

void reset_transport(Qp::Impl& qp) {
  qp.req.head = qp.req.next = qp.req.tail = 0;
  qp.req.rd_atomic_outstanding = 0;
  qp.req.noack_pkts = 0;
  qp.comp = CompState{};
  const size_t nres = qp.resp.res.size();
  qp.resp = RespState{};
  qp.resp.res.assign(nres, ReadResource{});
}

/// A port that spreads flows by RSS puts this QP's frames on one queue: the shard polling that
/// queue takes the QP over (before any traffic: RTR is the first moment the 4-tuple is known),
/// so its frames need no dispatch. RoCE peers derive their UDP source port from the QPNs as
/// we do, so the incoming tuple is (peer, us, udp_sport, 4791).
void steer_by_rss(Shard& s, Qp::Impl& qp) {
  const int q = s.port->rss_queue(qp.attr.dest_ipv4, s.port->ipv4(), qp.udp_sport, wire::kRoceV2Port);
  if (q < 0 || q == s.queue) return;
  Shard* target = nullptr;
  for (auto& o : s.dev->shards)
    if (o->port == s.port && o->queue == q) target = o.get();
  if (!target) return;
  for (size_t i = 0; i < s.qps.size(); i++) {
    if (s.qps[i] == &qp) {
      s.qps[i] = s.qps.back();
      s.qps.pop_back();
      break;
    }
  }
  qp.shard.store(target, std::memory_order_release);
  if (!s.dev->worker_lcores) {
    target->qps.push_back(&qp);
    return;
  }
  // The application's next control request for this QP goes to the target after this one.
  if (!qp.migrate) qp.migrate = new ControlCmd;
  qp.migrate->kind = ControlCmd::kAttachQp;
  qp.migrate->qp = &qp;
  qp.migrate->done.store(false);
  void* cmd = qp.migrate;
  while (rte_ring_mp_enqueue(target->control, cmd) != 0) rte_pause();
}

}  // namespace

Completion& new_completion(Qp::Impl& qp, Cq* cq) {
  // Completions are made only by the thread running the QP's shard (create_qp gives every QP
  // one before it can be used), so its batch is ours to add to.
  Completion& c = qp.shard.load(std::memory_order_relaxed)->stage_completion(cq->impl());
  // Copied from a zero constant, not assigned `Completion{}`: after LTO, GCC (at the
  // -march=corei7 DPDK asks for) made that assignment a `rep stosd`, which takes ~30 cycles
  // to start on AMD, on every completion. The copy stays two 16-byte stores.
  static constexpr Completion kNone{};
  std::memcpy(&c, &kNone, sizeof c);
  return c;
}

namespace {

/// complete_wqe, inlined where ACKs complete requests one after another (complete_head):
/// called there, each completion cost ~13 instructions more (BM_stream SEND 64 B).
[[gnu::always_inline]] inline void complete_wqe_here(Qp::Impl& qp, const SendWqe& w) {
  count_one(qp.sends_completed);
  if (w.status == WcStatus::kSuccess && !(w.wr.flags & kWrSignaled)) return;
  Completion& c = new_completion(qp, qp.send_cq);
  c.wr_id = w.wr.wr_id;
  c.status = w.status;
  c.opcode = wc_opcode(w.wr.opcode);
  c.qpn = qp.qpn;
  c.byte_len = (w.wr.opcode == WrOpcode::kCompareSwap || w.wr.opcode == WrOpcode::kFetchAdd)
                   ? 8 : w.length;
  if (w.wr.opcode == WrOpcode::kBindMw) c.imm_or_inv = w.wr.bind.mw_key;
}

}  // namespace

void complete_wqe(Qp::Impl& qp, const SendWqe& w) { complete_wqe_here(qp, w); }

void complete_recv(Qp::Impl& qp, uint64_t wr_id, WcStatus st, WcOpcode op, uint32_t len,
                   uint8_t flags, uint32_t imm_or_inv, bool solicited) {
  if (op != WcOpcode::kRemoteInvalidate) count_one(qp.recvs_completed);
  Completion& c = new_completion(qp, qp.recv_cq);
  c.wr_id = wr_id;
  c.status = st;
  c.opcode = op;
  c.byte_len = len;
  c.flags = flags;
  c.imm_or_inv = imm_or_inv;
  c.qpn = qp.qpn;
  c.solicited = solicited;
}

void complete_head(Qp::Impl& qp) {
  ReqState& r = qp.req;
  SendWqe& w = r.sq[r.head & r.mask];
  if (r.next == r.head) {
    // Acknowledged while the requester was still sending it again after a go-back (the peer
    // had all of it): the requester moves past it and past the rest of its PSNs. Left where
    // its retransmission stopped, the next request would take its first PSN from the middle
    // of this one's range, which the peer has accepted as this one's; and the slot, freed
    // here, could be refilled under the requester.
    if (w.psn_assigned) r.psn = psn_add(w.last_psn, 1);
    r.next++;
  }
  complete_wqe_here(qp, w);
  r.head++;
}

void advance_completions(Shard& s, Qp::Impl& qp) {
  ReqState& r = qp.req;
  // Up to tail: after a go-back a WQE past r.next may already be acknowledged.
  while (r.head != r.tail) {
    SendWqe& w = r.sq[r.head & r.mask];
    if (w.state == WqeState::kDone) {
      complete_head(qp);
      continue;
    }
    if (w.state == WqeState::kError) {
      complete_wqe(qp, w);
      r.head++;
      qp_to_error(s, qp);
    }
    return;
  }
}

bool qp_modify(Shard& s, Qp::Impl& qp, QpState to, const QpAttr& a) {
  const QpState from = qp.state.load(std::memory_order_relaxed);
  switch (to) {
    case QpState::kReset:
      qp_flush(s, qp);
      reset_transport(qp);
      qp.closed.store(false, std::memory_order_relaxed);
      qp.state.store(QpState::kReset, std::memory_order_release);
      return true;
    case QpState::kError:
      qp.closed.store(true, std::memory_order_relaxed);
      qp_to_error(s, qp);
      return true;
    case QpState::kInit:
      if (from != QpState::kReset && from != QpState::kInit) return false;
      if (qp.caps.type == QpType::kUd) {
        qp.attr.qkey = qp.caps.gsi ? kGsiQkey : a.qkey;
        qp.udp_sport = ud_sport_for(qp.qpn);
      }
      break;
    case QpState::kRtr: {
      if (from != QpState::kInit) return false;
      const bool ud = qp.caps.type == QpType::kUd;
      if (!valid_mtu(a.path_mtu) || (!ud && (a.dest_ipv4 == 0 || a.remote_qpn > wire::kPsnMask)))
        return false;
      // A full packet must fit one mbuf.
      const size_t frame = wire::kEthHdrLen + wire::kIpv4HdrLen + wire::kUdpHdrLen + wire::kBthLen +
                           wire::kRethLen + wire::kImmDtLen + a.path_mtu + wire::kIcrcLen;
      if (frame > size_t(rte_pktmbuf_data_room_size(s.port->mempool())) - RTE_PKTMBUF_HEADROOM)
        return false;
      qp.attr.path_mtu = a.path_mtu;
      // A UD QP has no peer: each work request names one, datagrams come from anyone, and
      // with many peers there is no single RSS flow to move the QP to.
      if (ud) break;
      qp.attr.remote_qpn = a.remote_qpn;
      qp.attr.rq_psn = a.rq_psn & wire::kPsnMask;
      qp.attr.dest_ipv4 = a.dest_ipv4;
      std::memcpy(qp.attr.dest_mac, a.dest_mac, 6);
      qp.attr.min_rnr_timer = a.min_rnr_timer & 0x1f;
      qp.attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
      static const uint8_t kZero[6] = {};
      qp.mac_known = std::memcmp(a.dest_mac, kZero, 6) != 0;
      std::memcpy(qp.dest_mac.addr_bytes, a.dest_mac, 6);
      qp.udp_sport = a.udp_src_port ? a.udp_src_port : udp_sport_for(qp.qpn, a.remote_qpn);
      qp.tx_addressing_changed();
      qp.resp.psn = qp.attr.rq_psn;
      qp.state.store(to, std::memory_order_release);
      steer_by_rss(s, qp);
      return true;
    }
    case QpState::kRts:
      if (from != QpState::kRtr) return false;
      qp.attr.sq_psn = a.sq_psn & wire::kPsnMask;
      qp.attr.retry_cnt = a.retry_cnt & 7;
      qp.attr.rnr_retry = a.rnr_retry & 7;
      qp.attr.timeout = a.timeout & 0x1f;
      qp.attr.max_rd_atomic = a.max_rd_atomic ? a.max_rd_atomic : 1;
      qp.req.psn = qp.attr.sq_psn;
      qp.comp.psn = qp.attr.sq_psn;
      qp.comp.retry_left = qp.attr.retry_cnt;
      qp.comp.rnr_retry_left = qp.attr.rnr_retry;
      // IBTA: 4.096 us * 2^timeout; 0 means wait forever.
      qp.timeout_tsc = qp.attr.timeout
                           ? uint64_t(4.096e-6 * double(1ull << qp.attr.timeout) * double(s.tsc_hz))
                           : 0;
      break;
  }
  qp.state.store(to, std::memory_order_release);
  return true;
}

void qp_to_error(Shard& s, Qp::Impl& qp) {
  qp.state.store(QpState::kError, std::memory_order_release);
  qp_flush(s, qp);
}

void qp_flush(Shard& s, Qp::Impl& qp) {
  // Send side: everything not yet completed, then whatever is still on the ring. What already
  // ran keeps its result: a bind or invalidate that executed (kDone) did change the window, and
  // reporting it canceled would put the application's view of the window out of step.
  ReqState& r = qp.req;
  for (; r.head != r.tail; r.head++) {
    SendWqe& w = r.sq[r.head & r.mask];
    if (w.state == WqeState::kPosted || w.state == WqeState::kSent) w.status = WcStatus::kWrFlushed;
    complete_wqe(qp, w);
  }
  r.next = r.tail = r.head;
  r.rd_atomic_outstanding = 0;
  SendWqe w;
  while (wr_dequeue(qp.send_ring, &w.wr, qp.caps.type == QpType::kUd)) {
    w.status = WcStatus::kWrFlushed;
    w.length = 0;
    complete_wqe(qp, w);
  }
  qp.comp.timer_tsc = qp.comp.rnr_tsc = 0;
  qp.comp.retry_pending = false;
  // Receive side: the receive in progress, then the ring.
  RespState& rs = qp.resp;
  if (rs.recv) {
    complete_recv(qp, rs.recv->wr_id, WcStatus::kWrFlushed, WcOpcode::kRecv, 0, 0, 0, false);
    end_recv(qp);
  }
  rs.in_send = rs.in_write = false;
  while (const RecvWr* rw = next_recv(qp)) {
    complete_recv(qp, rw->wr_id, WcStatus::kWrFlushed, WcOpcode::kRecv, 0, 0, 0, false);
    end_recv(qp);
  }
  for (auto& res : rs.res) res.active = false;
  rs.reads_active = 0;
  s.held -= rs.deferred.free_all();
}

}  // namespace ndnic::nic
