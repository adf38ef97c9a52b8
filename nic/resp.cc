// The responder: executes the peer's requests against our memory and receive queue.
// States, as in rxe_resp.c: CHECK_PSN (expected / duplicate / out of sequence), DUPLICATE
// (re-ACK, re-serve a READ, replay an atomic), CHECK_OP_SEQ, CHECK_LENGTH, CHECK_RESOURCE
// (a posted receive, else RNR NAK), CHECK_RKEY (R_Key, VA, length, rights), EXECUTE (place
// SEND/WRITE data, accept a READ, run an atomic), REMOTE_INVALIDATE, COMPLETE (the receive
// completion), ACKNOWLEDGE; READ_REPLY generates READ responses packet by packet.
#include <algorithm>
#include <atomic>
#include <cstring>

#include <rte_mbuf.h>

#include "nic/engine.h"
#include "nic/payload_copy.h"
#include "nic/sge_walk.h"
#include "nic/wr_ring.h"

namespace ndnic::nic {
namespace {

constexpr uint8_t kNakPsnSeq = 0x60;
constexpr uint8_t kNakInvalidRequest = 0x61;
constexpr uint8_t kNakRemoteAccess = 0x62;
constexpr uint8_t kNakRemoteOperation = 0x63;
constexpr uint8_t kRnrNak = 0x20;

using wire::OpKind;
using wire::Position;

bool starts_message(Position p) { return p == Position::kFirst || p == Position::kOnly; }
bool ends_message(Position p) { return p == Position::kLast || p == Position::kOnly; }

/// A class C/D error (IBTA 9.9.3): NAK the request, fail the receive in progress, QP to ERROR.
void fatal_nak(Shard& s, Qp::Impl& qp, uint8_t nak, uint32_t psn, WcStatus recv_status) {
  qp.counters.naks_sent[nak & 3]++;
  send_ack(s, qp, nak, psn);
  RespState& r = qp.resp;
  if (r.recv) {
    complete_recv(qp, r.recv->wr_id, recv_status, WcOpcode::kRecv, r.recv_offset, 0, 0, false);
    end_recv(qp);
  }
  qp_to_error(s, qp);
}

}  // namespace

namespace {

/// CHECK_RESOURCE for a message that consumes a receive.
bool take_recv(Qp::Impl& qp) {
  RespState& r = qp.resp;
  if (r.recv) return true;
  r.recv = next_recv(qp);
  if (!r.recv) return false;
  r.recv_offset = 0;
  r.recv_capacity = 0;
  for (unsigned i = 0; i < r.recv->num_sge; i++) r.recv_capacity += r.recv->sge[i].length;
  return true;
}

/// Scatters SEND payload into the receive at recv_offset (through `copy`, which checks a
/// pending ICRC on the way). False: a region check failed. Flattened: GCC left the lkey check
/// (MemoryTable::check_local) a call, ~21 instructions more per SEND packet (BM_stream SEND
/// 64 B); inlined, the responder grew by 114 bytes.
[[gnu::flatten]] bool scatter(Shard& s, Qp::Impl& qp, const uint8_t* src, uint32_t len, PayloadCopy& copy) {
  RespState& r = qp.resp;
  return for_each_piece(r.recv->sge, r.recv->num_sge, r.recv_offset, len, [&](unsigned i, uint32_t at, uint32_t take) {
    const Sge& g = r.recv->sge[i];
    Resolved res;
    if (s.dev->memory.check_local(qp.pd, g.lkey, g.addr + at, take, true, &res) != KeyCheck::kOk) return false;
    copy.copy(res.host, src, take);
    src += take;
    r.recv_offset += take;
    return true;
  });
}

/// place_write()'s copy of a payload whose ICRC is pending: the first `n` bytes to `host`, and
/// the one after them (a message's last) only into the CRC. Out of line: the plain copy of every
/// other WRITE packet stays as small as it was.
[[gnu::noinline]] bool place_write_checked(uint8_t* host, const wire::RocePacket& pkt, uint32_t n, bool ends) {
  PayloadCopy copy(pkt);
  copy.copy(host, pkt.payload, n);
  uint8_t last;
  if (ends) copy.copy(&last, pkt.payload + n, 1);
  return copy.icrc_ok();
}

/// EXECUTE for a WRITE's payload: to `host`, a message's last byte (`ends`) stored last, so that
/// a poller of it sees the rest. A pending ICRC is checked as the rest is copied, before that
/// byte: false, the byte not stored, when the packet is corrupt.
bool place_write(uint8_t* host, const wire::RocePacket& pkt, bool ends) {
  const uint32_t n = pkt.payload_len - (ends ? 1 : 0);
  if (!pkt.icrc_pending)
    std::memcpy(host, pkt.payload, n);
  else if (!place_write_checked(host, pkt, n, ends))
    return false;
  if (ends) {
    std::atomic_thread_fence(std::memory_order_release);
    reinterpret_cast<volatile uint8_t*>(host)[n] = pkt.payload[n];
  }
  return true;
}

ReadResource* new_resource(Qp::Impl& qp) {
  RespState& r = qp.resp;
  ReadResource& res = r.res[r.res_next++ & (kMaxReadResources - 1)];
  if (res.active) r.reads_active--;  // the oldest slot is reused
  if (r.res_next - r.res_head > kMaxReadResources) r.res_head = r.res_next - kMaxReadResources;
  res = ReadResource{};
  res.valid = true;
  return &res;
}

void send_atomic_ack(Shard& s, Qp::Impl& qp, const ReadResource& res) {
  send_pending_ack(s, qp);
  wire::RocePacket p;
  p.bth.opcode = wire::kRcAtomicAck;
  p.bth.psn = res.first_psn;
  p.aeth.syndrome = kAckUnlimited;
  p.aeth.msn = res.msn & wire::kPsnMask;
  p.atomic_ack.orig = res.atomic_orig;
  send_packet(s, qp, p, nullptr);
}

/// DUPLICATE: never executes twice. SEND/WRITE are re-ACKed, a READ is served again from the
/// PSN asked for, an atomic's saved result is sent again.
void duplicate(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt) {
  qp.counters.duplicates++;
  RespState& r = qp.resp;
  const OpKind kind = wire::opcode_info(pkt.bth.opcode).kind;
  if (kind == OpKind::kSend || kind == OpKind::kWrite) {
    send_ack(s, qp, kAckUnlimited, psn_add(r.psn, wire::kPsnMask));  // r.psn - 1
    return;
  }
  for (ReadResource& res : r.res) {
    if (!res.valid) continue;
    if (kind == OpKind::kAtomic && res.atomic && res.first_psn == pkt.bth.psn) {
      send_atomic_ack(s, qp, res);
      return;
    }
    if (kind == OpKind::kReadRequest && !res.atomic && psn_diff(pkt.bth.psn, res.first_psn) >= 0 &&
        psn_diff(pkt.bth.psn, res.last_psn) <= 0) {
      // The requester resumes at pkt.psn; its RETH names the rest of the original READ.
      res.offset = uint32_t(psn_diff(pkt.bth.psn, res.first_psn)) * qp.attr.path_mtu;
      res.psn = pkt.bth.psn;
      if (!res.active) r.reads_active++;
      res.active = true;
      // READ_REPLY's walk must reach it again: its accept count is the newest one on its slot.
      const uint32_t slot = uint32_t(&res - r.res.data());
      const uint32_t accepted = r.res_next - 1 - ((r.res_next - 1 - slot) & (kMaxReadResources - 1));
      if (r.res_next - accepted > r.res_next - r.res_head) r.res_head = accepted;
      return;
    }
  }
}

/// A READ next in sequence behind READs still replying, and behind nothing else, is accepted
/// at once: READ_REPLY answers the resources oldest first, so it is answered after them as if
/// it had waited, and it is neither held nor copied (holding each READ of a burst behind the
/// one before, its decoded packet copied in and out, cost BM_responder READ 64 B a third of
/// its time). A SEND, WRITE or atomic, a duplicate, or a READ behind held requests waits.
bool joins_reads(const RespState& r, const wire::RocePacket& pkt) {
  return r.deferred.empty() && pkt.bth.opcode == wire::kRcReadRequest && pkt.bth.psn == r.psn &&
         !r.res[r.res_next & (kMaxReadResources - 1)].active;
}

}  // namespace

bool responder_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt, const wire::OpcodeInfo& info, rte_mbuf* m) {
  RespState& r = qp.resp;
  if (m && (r.reads_active > 0 || !r.deferred.empty()) && !joins_reads(r, pkt)) {
    // Held with its mbuf until the READ replies are out; a bounded number, or a peer that
    // keeps a reply going (duplicate READs restart it, a zero-length one checks no key) would
    // hold every mbuf of the port and stop every QP, QP1 and ARP with it.
    if (r.deferred.size() >= kMaxHeldPerQp || s.held >= kMaxHeldPerShard) {
      s.held_dropped++;
      return false;  // a loss to the requester: it goes back for it
    }
    r.deferred.push_back(m, pkt);
    s.held++;
    return true;
  }
  const uint32_t psn = pkt.bth.psn;
  const uint32_t mtu = qp.attr.path_mtu;
  MemoryTable& mem = s.dev->memory;
  // A SEND, or a WRITE's MIDDLE or LAST, may still have its payload's ICRC pending
  // (payload_copy.h): whatever acts on the packet other than that copy checks it first, and a
  // corrupt packet is taken off the QP's receive counts.
  const auto intact = [&] { return settle_counted_icrc(s, qp, pkt); };

  // CHECK_PSN
  const int32_t d = psn_diff(psn, r.psn);
  if (d > 0) {
    if (!intact()) return false;
    qp.counters.out_of_sequence++;
    if (!r.nak_sent) {
      r.nak_sent = true;
      qp.counters.naks_sent[0]++;
      send_ack(s, qp, kNakPsnSeq, r.psn);
    }
    return false;
  }
  if (d < 0) {
    if (!intact()) return false;
    duplicate(s, qp, pkt);
    return false;
  }
  r.nak_sent = false;

  // CHECK_OP_SEQ: a MIDDLE/LAST continues the message in progress, nothing else may.
  const bool cont = info.position == Position::kMiddle || info.position == Position::kLast;
  const bool in_msg = r.in_send || r.in_write;
  if (cont != in_msg || (r.in_send && info.kind != OpKind::kSend) ||
      (r.in_write && info.kind != OpKind::kWrite)) {
    if (!intact()) return false;
    fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
    return false;
  }
  // CHECK_LENGTH: FIRST/MIDDLE carry exactly one path MTU, LAST/ONLY at most one.
  if (info.has_payload && (pkt.payload_len > mtu || (!ends_message(info.position) && pkt.payload_len != mtu))) {
    if (!intact()) return false;
    fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
    return false;
  }

  switch (info.kind) {
    case OpKind::kSend: {
      // CHECK_RESOURCE
      if (starts_message(info.position) && !take_recv(qp)) {
        if (!intact()) return false;
        qp.counters.rnr_naks_sent++;
        send_ack(s, qp, uint8_t(kRnrNak | qp.attr.min_rnr_timer), psn);
        return false;
      }
      // EXECUTE
      if (r.recv_offset + pkt.payload_len > r.recv_capacity) {
        if (!intact()) return false;
        fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kLocalLength);
        return false;
      }
      const uint32_t offset_before = r.recv_offset;
      PayloadCopy copy(pkt);
      if (!scatter(s, qp, pkt.payload, pkt.payload_len, copy)) {
        if (!intact()) return false;
        fatal_nak(s, qp, kNakRemoteOperation, psn, WcStatus::kLocalProtection);
        return false;
      }
      if (!copy.icrc_ok()) {  // corrupt: as if it never came; the retransmission overwrites it
        r.recv_offset = offset_before;
        drop_corrupt(s, qp, pkt);
        return false;
      }
      r.in_send = !ends_message(info.position);
      if (r.in_send) break;
      uint8_t flags = 0;
      uint32_t imm_or_inv = 0;
      WcStatus st = WcStatus::kSuccess;
      if (info.ext & wire::kHdrImmDt) {
        flags |= kWcWithImm;
        imm_or_inv = pkt.imm;
      }
      if (info.ext & wire::kHdrIeth) {
        // REMOTE_INVALIDATE: the window goes invalid and its owner hears of it before the
        // receive completes.
        uint64_t ctx = 0;
        imm_or_inv = pkt.ieth_rkey;
        if (mem.invalidate_mw(qp.pd, qp.id, pkt.ieth_rkey, &ctx) == KeyCheck::kOk) {
          qp.counters.invalidations++;
          complete_recv(qp, ctx, WcStatus::kSuccess, WcOpcode::kRemoteInvalidate, 0, kWcWithInv,
                        pkt.ieth_rkey, false);
          flags |= kWcWithInv;
        } else {
          st = WcStatus::kInvalidation;
        }
      }
      // COMPLETE
      r.msn++;
      complete_recv(qp, r.recv->wr_id, st, WcOpcode::kRecv, r.recv_offset, flags, imm_or_inv, pkt.bth.se);
      end_recv(qp);
      if (st != WcStatus::kSuccess) {
        // The request itself arrived intact: ACK it, then stop (as rxe does).
        r.psn = psn_add(psn, 1);
        if (pkt.bth.ack_req) ack_later(s, qp, psn);
        qp_to_error(s, qp);
        return false;
      }
      break;
    }
    case OpKind::kWrite: {
      const bool imm_last = ends_message(info.position) && (info.ext & wire::kHdrImmDt);
      if (imm_last && !take_recv(qp)) {  // CHECK_RESOURCE before any byte is placed
        qp.counters.rnr_naks_sent++;
        send_ack(s, qp, uint8_t(kRnrNak | qp.attr.min_rnr_timer), psn);
        return false;
      }
      uint8_t* host = nullptr;
      if (starts_message(info.position)) {
        if (pkt.reth.dma_len > kMaxMessage) {  // IBTA: a message is at most 2^31 bytes
          fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
          return false;
        }
        // CHECK_RKEY: the whole DMA length up front
        Resolved res;
        if (mem.check_remote(qp.pd, qp.id, pkt.reth.rkey, pkt.reth.va, pkt.reth.dma_len,
                             kAccessRemoteWrite, &res) != KeyCheck::kOk) {
          fatal_nak(s, qp, kNakRemoteAccess, psn, WcStatus::kRemoteAccess);
          return false;
        }
        host = res.host;
        r.write_rkey = pkt.reth.rkey;
        r.write_standing = res.standing;
        r.write_va = pkt.reth.va;
        r.write_left = r.write_len = pkt.reth.dma_len;
      } else if (pkt.payload_len) {
        // CHECK_RKEY again for each later packet: the owner may have invalidated the window or
        // deregistered (and freed) the region since the FIRST, and no pointer is kept across
        // packets. The FIRST checked the whole DMA length, so what is asked is whether that
        // check still stands (remote_access_stands): ~50 instructions a packet less than
        // checking it all again.
        if (pkt.payload_len > r.write_left || !mem.remote_access_stands(r.write_rkey, r.write_standing)) {
          if (!intact()) return false;
          fatal_nak(s, qp, pkt.payload_len > r.write_left ? kNakInvalidRequest : kNakRemoteAccess, psn,
                    pkt.payload_len > r.write_left ? WcStatus::kRemoteInvalidRequest : WcStatus::kRemoteAccess);
          return false;
        }
        host = reinterpret_cast<uint8_t*>(r.write_va);
      }
      if (pkt.payload_len > r.write_left ||
          (ends_message(info.position) && pkt.payload_len != r.write_left)) {
        if (!intact()) return false;
        fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
        return false;
      }
      // EXECUTE
      if (pkt.payload_len) {
        const uint32_t n = pkt.payload_len;
        if (!place_write(host, pkt, ends_message(info.position))) {
          drop_corrupt(s, qp, pkt);
          return false;
        }
        r.write_va += n;
        r.write_left -= n;
      }
      r.in_write = !ends_message(info.position);
      if (r.in_write) break;
      r.msn++;
      if (imm_last) {
        complete_recv(qp, r.recv->wr_id, WcStatus::kSuccess, WcOpcode::kRecvWriteImm, r.write_len,
                      kWcWithImm, pkt.imm, pkt.bth.se);
        end_recv(qp);
      }
      break;
    }
    case OpKind::kReadRequest: {
      if (pkt.reth.dma_len > kMaxMessage) {  // IBTA: a message is at most 2^31 bytes
        fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
        return false;
      }
      Resolved res;
      if (mem.check_remote(qp.pd, qp.id, pkt.reth.rkey, pkt.reth.va, pkt.reth.dma_len,
                           kAccessRemoteRead, &res) != KeyCheck::kOk) {
        fatal_nak(s, qp, kNakRemoteAccess, psn, WcStatus::kRemoteAccess);
        return false;
      }
      const uint32_t npkts = packets_for(pkt.reth.dma_len, mtu);
      ReadResource* rr = new_resource(qp);
      rr->first_psn = psn;
      rr->last_psn = psn_add(psn, npkts - 1);
      rr->rkey = pkt.reth.rkey;
      rr->standing = res.standing;
      rr->va = pkt.reth.va;
      rr->length = pkt.reth.dma_len;
      rr->msn = ++r.msn;
      rr->active = true;
      r.reads_active++;
      rr->psn = psn;
      r.psn = psn_add(psn, npkts);
      return false;  // READ_REPLY sends the responses
    }
    case OpKind::kAtomic: {
      Resolved res;
      if (pkt.atomic.va & 7) {
        fatal_nak(s, qp, kNakInvalidRequest, psn, WcStatus::kRemoteInvalidRequest);
        return false;
      }
      if (mem.check_remote(qp.pd, qp.id, pkt.atomic.rkey, pkt.atomic.va, 8, kAccessRemoteAtomic,
                           &res) != KeyCheck::kOk) {
        fatal_nak(s, qp, kNakRemoteAccess, psn, WcStatus::kRemoteAccess);
        return false;
      }
      // Atomic with respect to every lcore and the host: the target is ordinary memory.
      auto* target = reinterpret_cast<uint64_t*>(res.host);
      uint64_t orig;
      if (pkt.bth.opcode == wire::kRcCompareSwap) {
        orig = pkt.atomic.compare;
        __atomic_compare_exchange_n(target, &orig, pkt.atomic.swap_add, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
      } else {
        orig = __atomic_fetch_add(target, pkt.atomic.swap_add, __ATOMIC_SEQ_CST);
      }
      ReadResource* rr = new_resource(qp);
      rr->atomic = true;
      rr->first_psn = rr->last_psn = psn;
      rr->atomic_orig = orig;
      rr->msn = ++r.msn;
      r.psn = psn_add(psn, 1);
      send_atomic_ack(s, qp, *rr);
      return false;
    }
    default:
      return false;
  }
  // ACKNOWLEDGE: only what the requester asked to have acknowledged, and one ACK for all that
  // asked in one RX burst (an ACK acknowledges every PSN before its own).
  r.psn = psn_add(psn, 1);
  if (pkt.bth.ack_req) ack_later(s, qp, psn);
  return false;
}

// responder_run (engine.h) calls this only where one of the four things it serves is there (a
// READ replying, a slot to move res_head past, a held request, a pending ACK): what this comes
// to serve besides goes into that test too.
unsigned responder_serve(Shard& s, Qp::Impl& qp) {
  RespState& r = qp.resp;
  const QpState st = qp.state.load(std::memory_order_relaxed);
  if (st != QpState::kRtr && st != QpState::kRts) return 0;
  unsigned sent = 0;
  const uint32_t mtu = qp.attr.path_mtu;
  if (r.reads_active > 0) send_pending_ack(s, qp);  // responses leave in PSN order
  // READ_REPLY: oldest accepted READ first, so responses leave in PSN order.
  // Most polls have no READ to answer: the slots are walked only when one is, from the oldest
  // that may still be replying.
  for (uint32_t i = r.res_head; r.reads_active > 0 && i != r.res_next && sent < kSendBudget; i++) {
    ReadResource& res = r.res[i & (kMaxReadResources - 1)];
    if (!res.valid || !res.active) continue;
    while (sent < kSendBudget && s.tx_room()) {
      const uint32_t len = std::min(res.length - res.offset, mtu);
      const bool first = res.offset == 0;
      const bool last = res.offset + len >= res.length;
      // The region or window may have gone since the request was accepted, which checked the
      // whole DMA length (a zero-length READ checks no key, C9-88).
      if (len != 0 && !s.dev->memory.remote_access_stands(res.rkey, res.standing)) {
        res.active = false;
        r.reads_active--;
        fatal_nak(s, qp, kNakRemoteAccess, res.psn, WcStatus::kRemoteAccess);
        return sent;
      }
      const uint8_t opcode = first && last ? wire::kRcReadResponseOnly
                             : first       ? wire::kRcReadResponseFirst
                             : last        ? wire::kRcReadResponseLast
                                           : wire::kRcReadResponseMiddle;
      Gather g;
      g.n = len ? 1 : 0;
      g.ptr[0] = reinterpret_cast<const uint8_t*>(res.va + res.offset);
      g.len[0] = len;
      g.total = len;
      if (!send_read_response(s, qp, opcode, res.psn, res.msn, g)) return sent;
      sent++;
      res.offset += len;
      res.psn = psn_add(res.psn, 1);
      if (last) {
        res.active = false;
        r.reads_active--;
        break;
      }
    }
  }
  while (r.res_head != r.res_next && !r.res[r.res_head & (kMaxReadResources - 1)].active) r.res_head++;
  // Requests held behind the READs run now, in order, until one starts another READ.
  while (r.reads_active == 0 && !r.deferred.empty()) {
    auto [m, pkt] = r.deferred.pop_front();
    s.held--;
    responder_packet(s, qp, pkt, wire::opcode_info(pkt.bth.opcode), nullptr);
    rte_pktmbuf_free(m);
    sent++;
    const QpState now = qp.state.load(std::memory_order_relaxed);
    if (now != QpState::kRtr && now != QpState::kRts) break;
  }
  send_pending_ack(s, qp);  // what the held requests asked for: they are not in an RX burst
  return sent;
}

}  // namespace ndnic::nic
