// The completer: matches ACKs, NAKs and responses against the oldest outstanding WQEs.
// States, as in rxe_comp.c: GET_WQE (the head of the SQ), CHECK_PSN (stale, covering, or
// inside this WQE), CHECK_ACK (what the packet says: ACK, RNR NAK, NAK, READ response,
// atomic ACK), READ / ATOMIC (place the returned data), COMP_WQE (in-order completion),
// RETRY (go-back-N, timer- or NAK-driven) and ERROR (the QP goes to ERROR).
#include <algorithm>
#include <cmath>
#include <cstring>

#include <rte_cycles.h>

#include "nic/engine.h"
#include "nic/sge_walk.h"

namespace ndnic::nic {
namespace {

constexpr uint8_t kSyndromeTypeMask = 0xE0;
constexpr uint8_t kSyndromeAck = 0x00;
constexpr uint8_t kSyndromeRnr = 0x20;
constexpr uint8_t kSyndromeNak = 0x60;

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

/// Go back to `psn`. Every out-of-order response behind one loss asks for the same go-back;
/// answering each would resend the window again and again, so a go-back to the PSN just
/// retried waits a quarter of the ACK timeout (the timer still catches a lost retransmission).
bool retry_from(Qp::Impl& qp, uint32_t psn, uint64_t now) {
  CompState& c = qp.comp;
  if (psn == c.last_retry_psn && now - c.last_retry_tsc < qp.timeout_tsc / 4) return false;
  c.retry_pending = true;
  c.retry_psn = psn;
  c.last_retry_psn = psn;
  c.last_retry_tsc = now;
  return true;
}

/// The WQE completed by the peer: mark it done, move the acknowledged PSN past it.
void wqe_done(Qp::Impl& qp, SendWqe& w, uint64_t now) {
  w.state = WqeState::kDone;
  if (w.rd_counted) {
    w.rd_counted = false;
    qp.req.rd_atomic_outstanding--;
  }
  qp.comp.psn = psn_add(w.last_psn, 1);
  qp.comp.retry_left = qp.attr.retry_cnt;  // progress resets the retry budget
  qp.comp.rnr_retry_left = qp.attr.rnr_retry;
  qp.comp.timer_tsc = qp.timeout_tsc ? now + qp.timeout_tsc : 0;
}

void wqe_failed(Qp::Impl& qp, SendWqe& w, WcStatus st) {
  w.state = WqeState::kError;
  w.status = st;
  if (w.rd_counted) {
    w.rd_counted = false;
    qp.req.rd_atomic_outstanding--;
  }
}

/// Scatters a READ response's payload into the WQE's SGEs at `off`.
void place(SendWqe& w, uint32_t off, const uint8_t* src, uint32_t len) {
  for_each_piece(w.wr.sge, w.wr.num_sge, off, len, [&](unsigned i, uint32_t at, uint32_t take) {
    std::memcpy(w.host[i] + at, src, take);
    src += take;
    return true;
  });
}

/// Writes an atomic's original value into its 8-byte sink.
void place_atomic(SendWqe& w, uint64_t orig) {
  uint8_t tmp[8];
  std::memcpy(tmp, &orig, 8);
  place(w, 0, tmp, 8);
}

}  // namespace

void completer_packet(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt) {
  ReqState& r = qp.req;
  const uint32_t psn = pkt.bth.psn;
  const wire::OpKind kind = wire::opcode_info(pkt.bth.opcode).kind;
  const uint8_t syn = pkt.aeth.syndrome;
  const uint64_t now = rte_rdtsc();

  // CHECK_PSN against the oldest unacknowledged PSN: older responses are duplicates.
  if (psn_diff(psn, qp.comp.psn) < 0 &&
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

    if (past_last > 0 || (past_last == 0 && kind == wire::OpKind::kAck &&
                          (syn & kSyndromeTypeMask) == kSyndromeAck)) {
      // The packet acknowledges beyond (or exactly to the end of) this WQE.
      if (needs_response(w.wr.opcode)) {
        // A READ/atomic the peer went past without our seeing its response: implied NAK.
        if (past_last > 0) {
          const uint32_t resume = psn_add(w.first_psn, w.placed / qp.attr.path_mtu);
          retry_from(qp, resume, now);
          return;
        }
      } else {
        wqe_done(qp, w, now);
        advance_completions(s, qp);
        continue;
      }
    }
    if (from_first < 0) return;  // stale: before this WQE

    // CHECK_ACK: the packet is about this WQE.
    switch (kind) {
      case wire::OpKind::kReadResponse: {
        if (w.wr.opcode != WrOpcode::kRead) {
          wqe_failed(qp, w, WcStatus::kBadResponse);
          advance_completions(s, qp);
          return;
        }
        const uint32_t expect = psn_add(w.first_psn, w.placed / qp.attr.path_mtu);
        if (psn != expect) {
          if (psn_diff(psn, expect) > 0) retry_from(qp, expect, now);  // a response was lost
          return;
        }
        const wire::Position pos = wire::opcode_info(pkt.bth.opcode).position;
        const bool last = pos == wire::Position::kLast || pos == wire::Position::kOnly;
        const uint32_t want = last ? w.length - w.placed : qp.attr.path_mtu;
        if (pkt.payload_len != want) {
          wqe_failed(qp, w, WcStatus::kBadResponse);
          advance_completions(s, qp);
          return;
        }
        place(w, w.placed, pkt.payload, pkt.payload_len);  // READ
        w.placed += pkt.payload_len;
        // Each response acknowledges its PSN: the window moves inside a long READ too.
        qp.comp.psn = psn_add(psn, 1);
        qp.comp.retry_left = qp.attr.retry_cnt;
        qp.comp.timer_tsc = qp.timeout_tsc ? now + qp.timeout_tsc : 0;
        if (last) {
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
          place_atomic(w, pkt.atomic_ack.orig);
          wqe_done(qp, w, now);
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
          qp.comp.psn = psn_add(psn, 1);
          qp.comp.retry_left = qp.attr.retry_cnt;
          qp.comp.timer_tsc = qp.timeout_tsc ? now + qp.timeout_tsc : 0;
        }
        return;
      case kSyndromeRnr:
        qp.counters.rnr_naks_received++;
        if (qp.comp.rnr_retry_left == 0) {
          wqe_failed(qp, w, WcStatus::kRnrRetryExceeded);
          advance_completions(s, qp);
          return;
        }
        if (qp.attr.rnr_retry != 7) qp.comp.rnr_retry_left--;  // 7 = retry forever
        qp.comp.rnr_tsc = now + uint64_t(rnr_timer_us(syn) * 1e-6 * double(s.tsc_hz));
        qp.comp.timer_tsc = 0;
        qp.comp.retry_pending = true;  // the RNR timer paces this one
        qp.comp.retry_psn = psn;
        return;
      case kSyndromeNak: {
        const uint8_t code = syn & 0x1f;
        if (code < 4) qp.counters.naks_received[code]++;
        if (code == 0) {  // PSN sequence error: the peer wants `psn` again
          // ... and so acknowledges every PSN before it: forward progress, which refills the
          // retry budget as an ACK does: only retries that gain nothing count against retry_cnt.
          if (psn_diff(psn, qp.comp.psn) > 0) qp.comp.retry_left = qp.attr.retry_cnt;
          qp.comp.psn = psn;
          if (!retry_from(qp, psn, now)) return;  // this go-back is already under way
          if (qp.comp.retry_left == 0) {
            qp.comp.retry_pending = false;
            wqe_failed(qp, w, WcStatus::kRetryExceeded);
            advance_completions(s, qp);
            return;
          }
          qp.comp.retry_left--;
          return;
        }
        wqe_failed(qp, w, code == 1   ? WcStatus::kRemoteInvalidRequest
                          : code == 2 ? WcStatus::kRemoteAccess
                                      : WcStatus::kRemoteOperation);
        advance_completions(s, qp);
        return;
      }
      default:
        return;  // reserved syndrome
    }
  }
}

void completer_timers(Shard& s, Qp::Impl& qp, uint64_t now) {
  CompState& c = qp.comp;
  if (c.rnr_tsc && now >= c.rnr_tsc) {
    c.rnr_tsc = 0;
    c.timer_tsc = qp.timeout_tsc ? now + qp.timeout_tsc : 0;
  }
  if (!c.timer_tsc || now < c.timer_tsc) return;
  ReqState& r = qp.req;
  if (r.head == r.tail || psn_diff(r.psn, c.psn) <= 0) {  // no PSN awaits an acknowledgement
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
    psn = psn_add(w.first_psn, w.placed / qp.attr.path_mtu);
  c.retry_pending = true;  // a timeout always goes back
  c.retry_psn = c.last_retry_psn = psn;
  c.last_retry_tsc = now;
  c.timer_tsc = now + qp.timeout_tsc;
}

}  // namespace ndnic::nic
