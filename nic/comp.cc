// The completer: matches ACKs, NAKs and responses against the oldest outstanding WQEs.
// States, as in rxe_comp.c: GET_WQE (the head of the SQ), CHECK_PSN (never sent, stale,
// covering, or inside this WQE), CHECK_ACK (what the packet says: ACK, RNR NAK, NAK, READ
// response, atomic ACK), READ / ATOMIC (place the returned data), COMP_WQE (in-order
// completion), RETRY (go-back-N, timer- or NAK-driven) and ERROR (the QP goes to ERROR).
// RoCE has no authentication: any packet here may be forged, so none may complete, place or
// move more than the requester actually sent and asked for.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "nic/engine.h"
#include "nic/payload_copy.h"
#include "nic/sge_walk.h"

namespace ndnic::nic {
namespace {

constexpr uint8_t kSyndromeTypeMask = 0xE0;
constexpr uint8_t kSyndromeAck = 0x00;
constexpr uint8_t kSyndromeRnr = 0x20;
constexpr uint8_t kSyndromeNak = 0x60;
constexpr uint8_t kRnrRetryForever = 7;  ///< IBTA: an RNR retry count of 7 never runs out

bool needs_response(WrOpcode op) {
  return op == WrOpcode::kRead || op == WrOpcode::kCompareSwap || op == WrOpcode::kFetchAdd;
}

/// IBTA table 45: RNR NAK timer codes in microseconds (code 0 is 655.36 ms).
double rnr_timer_us(uint8_t code) {
  static const double kUs[32] = {655360, 10,   20,   30,   40,    60,    80,    120,
                                 160,    240,  320,  480,  640,   960,   1280,  1920,
                                 2560,   3840, 5120, 7680, 10240, 15360, 20480, 30720,
                                 40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return kUs[code & 0x1f];
}

/// Whether a PSN sent still awaits its acknowledgement (sent_psn is one past the highest sent).
bool awaits_ack(const CompState& c) { return c.sent_any && psn_diff(c.sent_psn, c.psn) > 0; }

/// The retransmission timer once acknowledgements moved comp.psn: restarted while a PSN sent
/// still awaits one, off when none does, so that a QP with nothing in flight costs its shard
/// no clock read per poll (the requester arms it again with the next packet it sends).
void restart_timer(Qp::Impl& qp, LazyTsc& now) {
  qp.comp.timer_tsc = qp.timeout_tsc && awaits_ack(qp.comp) ? now() + qp.timeout_tsc : 0;
}

/// Go back to `psn`. Every out-of-order response behind one loss asks for the same go-back;
/// answering each would resend the window again and again, so a go-back to the PSN just
/// retried waits a quarter of the ACK timeout (the timer still catches a lost retransmission).
bool retry_from(Qp::Impl& qp, uint32_t psn, LazyTsc& now) {
  CompState& c = qp.comp;
  if (psn == c.last_retry_psn && now() - c.last_retry_tsc < qp.timeout_tsc / 4) return false;
  c.retry_pending = true;
  c.retry_psn = psn;
  c.last_retry_psn = psn;
  c.last_retry_tsc = now();
  return true;
}

/// CHECK_PSN's upper bound: a genuine response answers a PSN that was sent. Without it an ACK
/// in the "future" half of PSN space completed a message of which only part had been sent
/// (and disarmed the timer), and a NAK there moved the go-back past packets never sent.
bool was_sent(const CompState& c, uint32_t psn) { return c.sent_any && psn_diff(psn, c.sent_psn) < 0; }

/// A sequence NAK for the PSN last RNR-NAKed, nothing past it acknowledged since: the packets
/// sent behind the RNR-NAKed one arrive out of sequence and draw it. The RNR retry (its timer,
/// its budget) already goes back there; counted as a transport retry it ended long messages in
/// kRetryExceeded while the peer was only slow to post a receive, and a one-packet message not.
bool rnr_echo(CompState& c, uint32_t psn) {
  if (!c.rnr_gap) return false;
  if (c.psn != c.rnr_psn) {  // acknowledged past it: that RNR wait is over
    c.rnr_gap = false;
    return false;
  }
  return psn == c.rnr_psn;
}

/// The WQE completed by the peer: mark it done, move the acknowledged PSN past it.
void wqe_done(Qp::Impl& qp, SendWqe& w, LazyTsc& now) {
  w.state = WqeState::kDone;
  if (w.rd_counted) {
    w.rd_counted = false;
    qp.req.rd_atomic_outstanding--;
  }
  qp.comp.psn = psn_add(w.last_psn, 1);
  qp.comp.retry_left = qp.attr.retry_cnt;  // progress resets the retry budget
  qp.comp.rnr_retry_left = qp.attr.rnr_retry;
  restart_timer(qp, now);
}

void wqe_failed(Qp::Impl& qp, SendWqe& w, WcStatus st) {
  w.state = WqeState::kError;
  w.status = st;
  if (w.rd_counted) {
    w.rd_counted = false;
    qp.req.rd_atomic_outstanding--;
  }
}

/// Scatters response data into the WQE's SGEs at `off`, each piece checked against its lkey
/// now: the application may have deregistered (and freed) the region since it posted the
/// request. Deregistration clears the key before it waits for a grace period, so memory that
/// passes the check here stays the region's while this packet is processed. False when a
/// check fails (pieces before it are written: their regions are still registered). A READ
/// response's payload goes through `copy`, which checks its pending ICRC on the way.
bool place(Shard& s, const Qp::Impl& qp, const SendWqe& w, uint32_t off, const uint8_t* src, uint32_t len,
           PayloadCopy* copy = nullptr) {
  return for_each_piece(w.wr.sge, w.wr.num_sge, off, len, [&](unsigned i, uint32_t at, uint32_t take) {
    const Sge& g = w.wr.sge[i];
    Resolved res;
    if (s.dev->memory.check_local(qp.pd, g.lkey, g.addr + at, take, true, &res) != KeyCheck::kOk) return false;
    if (copy)
      copy->copy(res.host, src, take);
    else
      std::memcpy(res.host, src, take);
    src += take;
    return true;
  });
}

/// Writes an atomic's original value into its 8-byte sink.
bool place_atomic(Shard& s, const Qp::Impl& qp, const SendWqe& w, uint64_t orig) {
  uint8_t tmp[8];
  std::memcpy(tmp, &orig, 8);
  return place(s, qp, w, 0, tmp, 8);
}

/// Whether a READ response of position `pos` carrying `len` bytes is the one due next: FIRST
/// and MIDDLE carry one path MTU and leave more to come, LAST and ONLY carry exactly the rest,
/// FIRST and ONLY start the READ. Anything else (a full MIDDLE where a short LAST is due) would
/// place bytes past what the READ asked for, and a go-back would then ask for
/// `length - placed` bytes, which wraps.
bool response_due(const SendWqe& w, wire::Position pos, uint32_t len, uint32_t mtu) {
  const uint32_t left = w.length - w.placed;  // placed never passes length: checked here
  const bool starts = w.placed == 0;
  const bool ends = left <= mtu;
  switch (pos) {
    case wire::Position::kFirst:
      return starts && !ends && len == mtu;
    case wire::Position::kMiddle:
      return !starts && !ends && len == mtu;
    case wire::Position::kLast:
      return !starts && ends && len == left;
    case wire::Position::kOnly:
      return starts && ends && len == left;
  }
  return false;
}

void fail(Shard& s, Qp::Impl& qp, SendWqe& w, WcStatus st) {
  wqe_failed(qp, w, st);
  advance_completions(s, qp);
}

/// Whether `pkt` is the READ response the oldest WQE waits for next. The one packet the
/// completer acts on only by placing its payload, before anything else moves, so the one whose
/// ICRC may still be pending (payload_copy.h); every other is checked first.
bool next_read_response(const Qp::Impl& qp, const wire::RocePacket& pkt) {
  const ReqState& r = qp.req;
  if (r.head == r.tail || !was_sent(qp.comp, pkt.bth.psn)) return false;
  const SendWqe& w = r.sq[r.head & r.mask];
  const uint32_t mtu = qp.attr.path_mtu;
  return w.wr.opcode == WrOpcode::kRead && w.psn_assigned &&
         (w.state == WqeState::kPosted || w.state == WqeState::kSent) &&
         pkt.bth.psn == first_unplaced_psn(w, mtu) &&
         response_due(w, wire::opcode_info(pkt.bth.opcode).position, pkt.payload_len, mtu);
}

}  // namespace

void completer_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt, const wire::OpcodeInfo& info) {
  ReqState& r = qp.req;
  CompState& c = qp.comp;
  const uint32_t psn = pkt.bth.psn;
  const wire::OpKind kind = info.kind;
  const uint8_t syn = pkt.aeth.syndrome;
  const uint32_t mtu = qp.attr.path_mtu;
  LazyTsc now;
  if (pkt.icrc_pending && !next_read_response(qp, pkt) && !settle_counted_icrc(s, qp, pkt)) return;

  // CHECK_PSN against the next PSN never sent: nothing may answer it.
  if (!was_sent(c, psn)) {
    c.ignored++;
    return;
  }
  // CHECK_PSN against the oldest unacknowledged PSN: older responses are duplicates.
  if (psn_diff(psn, c.psn) < 0 &&
      !(kind == wire::OpKind::kReadResponse || kind == wire::OpKind::kAtomicAck)) {
    return;
  }

  // Every WQE with PSNs on the wire is a candidate, the one still being sent (at r.next)
  // included: coalesced ACKs inside a long message move comp.psn.
  while (r.head != r.tail) {
    // GET_WQE
    SendWqe& w = r.sq[r.head & r.mask];
    if (w.state == WqeState::kDone || w.state == WqeState::kError) {
      advance_completions(s, qp);
      if (qp.state.load(std::memory_order_relaxed) == QpState::kError) return;
      continue;
    }
    if (!w.psn_assigned) return;  // nothing of it is on the wire yet
    const int32_t past_last = psn_diff(psn, w.last_psn);
    const int32_t from_first = psn_diff(psn, w.first_psn);

    // A packet at or past the WQE's last PSN was sent after all of it (was_sent): it may
    // complete the WQE, never one still partly unsent.
    if (past_last > 0 || (past_last == 0 && kind == wire::OpKind::kAck &&
                          (syn & kSyndromeTypeMask) == kSyndromeAck)) {
      // The packet acknowledges beyond (or exactly to the end of) this WQE.
      if (needs_response(w.wr.opcode)) {
        // A READ/atomic the peer went past without our seeing its response: implied NAK.
        if (past_last > 0) {
          const uint32_t resume = first_unplaced_psn(w, mtu);
          retry_from(qp, resume, now);
          return;
        }
      } else {
        wqe_done(qp, w, now);
        complete_head(qp);  // w is the head: the loop looks at the next WQE
        continue;
      }
    }
    if (from_first < 0) return;  // stale: before this WQE

    // CHECK_ACK: the packet is about this WQE.
    switch (kind) {
      case wire::OpKind::kReadResponse: {
        if (w.wr.opcode != WrOpcode::kRead) {
          fail(s, qp, w, WcStatus::kBadResponse);
          return;
        }
        const uint32_t expect = first_unplaced_psn(w, mtu);
        if (psn != expect) {
          if (psn_diff(psn, expect) > 0) retry_from(qp, expect, now);  // a response was lost
          return;
        }
        if (!response_due(w, info.position, pkt.payload_len, mtu)) {
          fail(s, qp, w, WcStatus::kBadResponse);
          return;
        }
        // READ: into the sink, which the application may not look at before the completion.
        PayloadCopy copy(pkt);
        if (!place(s, qp, w, w.placed, pkt.payload, pkt.payload_len, &copy)) {
          if (settle_counted_icrc(s, qp, pkt)) fail(s, qp, w, WcStatus::kLocalProtection);
          return;
        }
        if (!copy.icrc_ok()) {  // corrupt: as if it never came; the go-back overwrites it
          drop_corrupt(s, qp, pkt);
          return;
        }
        w.placed += pkt.payload_len;
        // Each response acknowledges its PSN: the window moves inside a long READ too.
        c.psn = psn_add(psn, 1);
        c.retry_left = qp.attr.retry_cnt;
        restart_timer(qp, now);
        if (w.placed == w.length) {
          wqe_done(qp, w, now);
          advance_completions(s, qp);
        }
        return;
      }
      case wire::OpKind::kAtomicAck:  // ATOMIC
        if (w.wr.opcode != WrOpcode::kCompareSwap && w.wr.opcode != WrOpcode::kFetchAdd) {
          wqe_failed(qp, w, WcStatus::kBadResponse);
        } else if (psn == w.first_psn) {
          w.atomic_orig = pkt.atomic_ack.orig;
          if (place_atomic(s, qp, w, pkt.atomic_ack.orig)) {
            wqe_done(qp, w, now);
          } else {
            wqe_failed(qp, w, WcStatus::kLocalProtection);
          }
        }
        advance_completions(s, qp);
        return;
      case wire::OpKind::kAck:
        break;
      default:
        return;
    }

    switch (syn & kSyndromeTypeMask) {
      case kSyndromeAck:
        // A coalesced ACK inside a multi-packet message: progress, not completion.
        if (!needs_response(w.wr.opcode)) {
          c.psn = psn_add(psn, 1);
          c.retry_left = qp.attr.retry_cnt;
          restart_timer(qp, now);
        }
        return;
      case kSyndromeRnr:
        qp.counters.rnr_naks_received++;
        if (c.rnr_retry_left == 0) {
          fail(s, qp, w, WcStatus::kRnrRetryExceeded);
          return;
        }
        if (qp.attr.rnr_retry != kRnrRetryForever) c.rnr_retry_left--;
        // Like a sequence NAK, an RNR NAK acknowledges every PSN before it.
        if (psn_diff(psn, c.psn) > 0) {
          c.psn = psn;
          c.retry_left = qp.attr.retry_cnt;
        }
        c.rnr_psn = psn;
        c.rnr_gap = true;
        c.rnr_tsc = now() + uint64_t(rnr_timer_us(syn) * 1e-6 * double(s.tsc_hz));
        c.timer_tsc = 0;
        c.retry_pending = true;  // the RNR timer paces this one
        c.retry_psn = psn;
        return;
      case kSyndromeNak: {
        const uint8_t code = syn & 0x1f;
        if (code < 4) qp.counters.naks_received[code]++;
        if (code == 0) {  // PSN sequence error: the peer wants `psn` again
          if (rnr_echo(c, psn)) return;
          // ... and so acknowledges every PSN before it: forward progress, which refills the
          // retry budget as an ACK does: only retries that gain nothing count against retry_cnt.
          if (psn_diff(psn, c.psn) > 0) c.retry_left = qp.attr.retry_cnt;
          c.psn = psn;
          if (!retry_from(qp, psn, now)) return;  // this go-back is already under way
          if (c.retry_left == 0) {
            c.retry_pending = false;
            fail(s, qp, w, WcStatus::kRetryExceeded);
            return;
          }
          c.retry_left--;
          return;
        }
        fail(s, qp, w, code == 1   ? WcStatus::kRemoteInvalidRequest
                       : code == 2 ? WcStatus::kRemoteAccess
                                   : WcStatus::kRemoteOperation);
        return;
      }
      default:
        return;  // reserved syndrome
    }
  }
}

void completer_timers(Shard& s, Qp::Impl& qp, LazyTsc& tsc) {
  CompState& c = qp.comp;
  if (!c.timer_tsc && !c.rnr_tsc) return;  // neither armed: no clock to read
  const uint64_t now = tsc();
  if (c.timer_tsc == kArmAtNextLook) c.timer_tsc = now + qp.timeout_tsc;
  if (c.rnr_tsc && now >= c.rnr_tsc) {
    c.rnr_tsc = 0;
    c.timer_tsc = qp.timeout_tsc ? now + qp.timeout_tsc : 0;
  }
  if (!c.timer_tsc || now < c.timer_tsc) return;
  ReqState& r = qp.req;
  // Against the highest PSN sent, not the next to send: after a go-back the PSNs between
  // them are still unacknowledged.
  if (r.head == r.tail || !awaits_ack(c)) {
    c.timer_tsc = 0;
    return;
  }
  qp.counters.timeouts++;
  if (c.retry_left == 0) {
    SendWqe& w = r.sq[r.head & r.mask];
    wqe_failed(qp, w, WcStatus::kRetryExceeded);
    advance_completions(s, qp);
    return;
  }
  c.retry_left--;
  // Resume at the oldest PSN not acknowledged (a READ resumes at its first missing response).
  SendWqe& w = r.sq[r.head & r.mask];
  uint32_t psn = c.psn;
  if (w.psn_assigned && w.wr.opcode == WrOpcode::kRead)
    psn = first_unplaced_psn(w, qp.attr.path_mtu);
  c.retry_pending = true;  // a timeout always goes back
  c.retry_psn = c.last_retry_psn = psn;
  c.last_retry_tsc = now;
  c.timer_tsc = now + qp.timeout_tsc;
}

}  // namespace ndnic::nic
