// The poll loop of one shard: control requests, a receive burst through the decoder to the
// responder and completer, the requester and READ replies of every QP, timers, one TX flush.
#include <algorithm>
#include <cstring>

#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "nic/engine.h"
#include "wire/prefetch.h"
#include "ndnic/port.h"

namespace ndnic::nic {
namespace {

constexpr unsigned kTxSpins = 4;  ///< tries per flush; what is left waits for the next one

/// Hands frames to the port, trying again a few times while it takes only part; returns how
/// many it took (the first ones).
uint16_t to_port(glue::Port& port, uint16_t queue, rte_mbuf** frames, uint16_t n) {
  uint16_t done = 0;
  for (unsigned spin = 0; done < n && spin < kTxSpins; spin++)
    done += port.tx_burst(frames + done, uint16_t(n - done), queue);
  return done;
}

}  // namespace

void Shard::process_frame(rte_mbuf* m) {
  wire::RocePacket& pkt = rx_pkt;
  wire::DecodeOptions opt;
  // A port that verified the IPv4 header checksum saves us the sum.
  opt.check_ip_checksum = !((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD);
  opt.defer_payload_icrc = true;  // SEND and READ payloads: checked as they are copied out
  opt.flows = &rx_flows;
  if (m->nb_segs > 1 && !(m = take_chain(m, pkt, opt))) return;
  if (wire::decode_frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, &pkt, opt, &rejects) == wire::Reject::kOk &&
      recv_packet(*this, pkt, m))
    return;  // kept by the responder
  retire(m);
}

rte_mbuf* Shard::take_chain(rte_mbuf* m, wire::RocePacket& pkt, const wire::DecodeOptions& opt) {
  if (m->nb_segs == 3 && wire::decode_frame(pieces_of(m), &pkt, opt) == wire::Reject::kOk) {
    rejects.add(wire::Reject::kOk);  // a zero-copy sender's chain, read where its pieces are
    if (!recv_packet(*this, pkt, m)) retire(m);
    return nullptr;
  }
  // Any other chain, or one refused in pieces: made contiguous, it is decoded (and counted) as
  // every frame is.
  rte_mbuf* lin = linearize(m);
  if (!lin) rejects.add(wire::Reject::kTruncatedEthernet);
  return lin;
}

void Shard::retire_segments(rte_mbuf* m) {
  while (m != nullptr) {
    rte_mbuf* next = m->next;  // prefree clears it
    if (rte_mbuf* seg = rte_pktmbuf_prefree_seg(m)) spend(seg);
    m = next;
  }
}

wire::FramePieces Shard::pieces_of(const rte_mbuf* m) {
  const rte_mbuf* pay = m->next;
  const rte_mbuf* tail = pay->next;
  return {rte_pktmbuf_mtod(m, const uint8_t*),    m->data_len,
          rte_pktmbuf_mtod(pay, const uint8_t*),  pay->data_len,
          rte_pktmbuf_mtod(tail, const uint8_t*), tail->data_len};
}

Completion& Shard::stage_completion(Cq::Impl* cq) {
  // The batches in use are a prefix of cq_batch (a flush empties them all), so the first
  // empty one is past every batch that could hold this CQ: one CQ's completions stay in order.
  CqBatch* b = nullptr;
  for (CqBatch& x : cq_batch) {
    if (x.cq == cq || x.n == 0) {
      b = &x;
      break;
    }
  }
  if (!b || b->n == kCqBatch) {  // every batch taken, or this CQ's is full: publish them all
    flush_completions();
    b = &cq_batch[0];
  }
  b->cq = cq;
  return b->c[b->n++];
}

void Shard::publish_completions() {
  for (CqBatch& b : cq_batch) {
    if (b.n == 0) break;  // the batches in use are a prefix (stage_completion)
    const unsigned k = b.cq->push_batch(b.c, b.n);
    for (unsigned i = k; i < b.n; i++) {
      Qp::Impl* qp = dev->qp_by_number(b.c[i].qpn);
      if (qp && qp->caps.type != QpType::kUd) qp->cq_overrun = true;
    }
    b.n = 0;
    b.cq = nullptr;
  }
}

void Shard::send_due_acks() {
  for (Qp::Impl* qp : acks_due) send_pending_ack(*this, *qp);
  acks_due.clear();
}

Shard* Shard::owner_of(const rte_mbuf* m) const {
  // The glue passes only untagged IPv4/UDP 4791 frames; the BTH follows the UDP header.
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t ihl = size_t(d[wire::kEthHdrLen] & 0x0f) * 4;
  const size_t dqp = wire::kEthHdrLen + ihl + wire::kUdpHdrLen + 5;
  if (m->data_len < dqp + 3) return const_cast<Shard*>(this);
  const Qp::Impl* qp = dev->qp_by_number(wire::load_be24(d + dqp));
  return qp ? qp->shard.load(std::memory_order_acquire) : const_cast<Shard*>(this);
}

bool Shard::resolve_mac(Qp::Impl& qp) {
  if (arp_owner == this) {
    const bool resolved = port->resolve(qp.attr.dest_ipv4, &qp.dest_mac) == glue::Resolve::kResolved;
    qp.tx_addressing_changed();
    if (!resolved) return false;
    qp.mac_known = true;
    return true;
  }
  if (qp.mac_published.load(std::memory_order_acquire)) {
    qp.dest_mac = qp.published_mac;
    qp.mac_known = true;
    qp.tx_addressing_changed();
    return true;
  }
  if (!qp.resolve_requested &&
      rte_ring_mp_enqueue(arp_owner->resolve, reinterpret_cast<void*>(uintptr_t(qp.qpn))) == 0)
    qp.resolve_requested = true;
  return false;
}

void Shard::serve_resolves() {
  void* req;
  while (rte_ring_sc_dequeue(resolve, &req) == 0) resolving.push_back(uint32_t(uintptr_t(req)));
  for (size_t i = 0; i < resolving.size();) {
    Qp::Impl* qp = dev->qp_by_number(resolving[i]);  // by number: the QP may be gone
    rte_ether_addr mac;
    const glue::Resolve r = qp ? port->resolve(qp->attr.dest_ipv4, &mac) : glue::Resolve::kFailed;
    if (r == glue::Resolve::kPending) {
      i++;
      continue;
    }
    if (r == glue::Resolve::kResolved) {
      qp->published_mac = mac;
      qp->mac_published.store(true, std::memory_order_release);
    }
    resolving[i] = resolving.back();
    resolving.pop_back();
  }
}

rte_mbuf* Shard::linearize(rte_mbuf* m) {
  const uint32_t len = rte_pktmbuf_pkt_len(m);
  rte_mbuf* lin = rte_pktmbuf_alloc(port->mempool());
  if (lin && rte_pktmbuf_tailroom(lin) >= len) {
    rte_pktmbuf_read(m, 0, len, rte_pktmbuf_mtod(lin, void*));
    lin->data_len = uint16_t(len);
    lin->pkt_len = len;
    lin->ol_flags = m->ol_flags;
  } else if (lin) {
    rte_pktmbuf_free(lin);
    lin = nullptr;
  }
  rte_pktmbuf_free(m);
  return lin;
}

namespace {

/// What rte_pktmbuf_alloc does after taking an mbuf from its pool (rte_pktmbuf_reset), with
/// nothing stored that the mbuf holds already (set_if_new), and its lengths left to the frame's
/// builder, which sets both (finish_frame or emit_ack, then queue_frame). A pooled mbuf's next
/// is NULL (DPDK frees no mbuf otherwise; rte_mbuf_raw_alloc asserts it in debug builds), and
/// tx_offload is zero unless a port that offloads checksums set it. The receiving core reads
/// both of the mbuf's lines for every frame (lengths and offsets, then next to free it): stored
/// to by the sender each time, they crossed between the two cores twice per frame; in a run of
/// frames of one length nothing in them changes, and both cores keep them.
[[gnu::always_inline]] inline void reset_fresh(rte_mbuf* m) {
  if (unlikely(m->next != nullptr)) m->next = nullptr;  // as a PMD that broke the rule left it
  if (unlikely(m->tx_offload != 0)) m->tx_offload = 0;
  set_if_new(m->vlan_tci, 0);
  set_if_new(m->vlan_tci_outer, 0);
  set_if_new(m->nb_segs, 1);
  set_if_new(m->port, RTE_MBUF_PORT_INVALID);
  if (unlikely(m->ol_flags & ~RTE_MBUF_F_EXTERNAL)) m->ol_flags &= RTE_MBUF_F_EXTERNAL;
  set_if_new(m->packet_type, 0);
  set_if_new(m->data_off, std::min<uint16_t>(RTE_PKTMBUF_HEADROOM, m->buf_len));
}

}  // namespace

[[gnu::always_inline]] inline rte_mbuf* Shard::take_fresh(size_t room) {
  constexpr uint16_t kAhead = 4;  // frames ahead whose header and data lines are asked for
  rte_mempool* pool = port->mempool();
  // A pool mbuf's buffer follows its header and private area (rte_pktmbuf_init), so the data
  // address comes from the pointer alone (mbuf_data_at): asking for the data lines need not
  // wait for the header line, which the peer's core touched last.
  const size_t data_at = mbuf_data_at;
  // The frame a few ahead is asked for as long as this one: a message's packets come in a run
  // of one length, and all of a frame's lines are written as it is built. With only the first
  // two asked for, a copied 1 KiB payload waited for the receiving core to give up each line
  // (ndperf sendinv, MTU 1024, run to completion, binaries alternated on the 2-CPU VM: 16 of
  // 20 pairs faster, median +13%; send_bw 64 B, whose frames fit two lines, unchanged). The two
  // every frame has are asked for without a loop: counted and looped over, they cost each small
  // frame ~16 instructions more (BM_pingpong, callgrind).
  const size_t lines = (room + RTE_CACHE_LINE_SIZE - 1) / RTE_CACHE_LINE_SIZE;
  auto ask = [data_at, lines](rte_mbuf* m) {
    char* base = reinterpret_cast<char*>(m);
    // Both header lines to read: reset_fresh and the frame's builder store into them only
    // what changed, and a line asked for to write would be taken from the receiving core.
    rte_prefetch0(base);
    rte_prefetch0(base + RTE_CACHE_LINE_SIZE);
    char* data = base + data_at;
    wire::prefetch_to_write(data);
    wire::prefetch_to_write(data + RTE_CACHE_LINE_SIZE);
    for (size_t i = 2; i < lines; i++) wire::prefetch_to_write(data + i * RTE_CACHE_LINE_SIZE);
  };
  if (fresh_next == nfresh) {
    fresh_next = nfresh = 0;
    if (rte_mempool_get_bulk(pool, reinterpret_cast<void**>(fresh), kFreshMbufs) != 0)
      return rte_pktmbuf_alloc(pool);  // the pool is nearly empty: what is left, one at a time
    nfresh = kFreshMbufs;
    for (uint16_t i = 0; i < std::min<uint16_t>(nfresh, kAhead); i++) ask(fresh[i]);
  }
  if (fresh_next + kAhead < nfresh) ask(fresh[fresh_next + kAhead]);
  rte_mbuf* m = fresh[fresh_next++];
  reset_fresh(m);
  return m;
}

rte_mbuf* Shard::new_frame(size_t room) { return take_fresh(room); }
rte_mbuf* Shard::new_segment() { return take_fresh(0); }

void Shard::return_fresh() {
  if (fresh_next < nfresh)
    rte_mempool_put_bulk(port->mempool(), reinterpret_cast<void**>(fresh + fresh_next), nfresh - fresh_next);
  fresh_next = nfresh = 0;
}

void Shard::send(rte_mbuf* m) {
  if (ntx == kTxBatch) flush_tx();
  if (ntx == kTxBatch) {  // the port is still full: this one is lost, the transport recovers
    tx_dropped++;
    rte_pktmbuf_free(m);
    return;
  }
  tx[ntx++] = m;
}

void Shard::send_batch() {
  if (!fault_tx) {  // the batch goes to the port as it is; what it did not take moves up
    const uint16_t done = to_port(*port, queue, tx, ntx);
    if (done != 0 && done < ntx) std::memmove(tx, tx + done, (ntx - done) * sizeof tx[0]);
    ntx = uint16_t(ntx - done);
    return;
  }
  // With a TX fault switch holding frames back, an empty batch still releases them.
  if (ntx == 0 && !fault_tx->held()) return;
  rte_mbuf* out[kTxBatch * 2];
  uint16_t n = ntx;
  for (uint16_t i = 0; i < n; i++) out[i] = tx[i];
  ntx = 0;
  n = fault_tx->apply(out, n, kTxBatch * 2, port->mempool());
  const uint16_t done = to_port(*port, queue, out, n);
  // Keep what the port did not take, in order, for the next flush; only what does not fit
  // (duplicates the fault switch added) is dropped.
  for (uint16_t i = done; i < n; i++) {
    if (ntx < kTxBatch) {
      tx[ntx++] = out[i];
    } else {
      tx_dropped++;
      rte_pktmbuf_free(out[i]);
    }
  }
}

void Shard::apply(ControlCmd* cmd) {
  Qp::Impl* qp = cmd->qp;
  switch (cmd->kind) {
    case ControlCmd::kAttachQp:
      qps.push_back(qp);
      qp->tx_addressing_changed();  // this shard's port may be another's
      cmd->ok = true;
      break;
    case ControlCmd::kDetachQp:
      for (size_t i = 0; i < qps.size(); i++) {
        if (qps[i] == qp) {
          qps[i] = qps.back();
          qps.pop_back();
          break;
        }
      }
      acks_due.erase(std::remove(acks_due.begin(), acks_due.end(), qp), acks_due.end());
      // Requests held behind a READ reply go back to the pool with the QP.
      held -= qp->resp.deferred.free_all();
      cmd->ok = true;
      break;
    case ControlCmd::kModifyQp:
      cmd->ok = qp_modify(*this, *qp, cmd->to, cmd->attr);
      break;
    case ControlCmd::kBarrier:  // the shard holds no reference across iterations
      cmd->ok = true;
      break;
    case ControlCmd::kSetFaults:
      fault_rx.swap(cmd->fault_rx);
      fault_tx.swap(cmd->fault_tx);
      cmd->ok = true;
      break;
  }
  flush_completions();  // a flush on the way to ERROR is seen when the command returns
  flush_tx();
  cmd->done.store(true, std::memory_order_release);
}

namespace {

/// What the next frame's processing will read past the headers the port asked for, asked for
/// while this one is processed: lines the sending core wrote last, which otherwise come one
/// miss at a time.
///  - A zero-copy sender's chain (the port asked for its segments' headers): the trailer, whose
///    ICRC is read once the payload is CRC'd. Its payload is left to the hardware's stream
///    prefetch: asked for whole as well, write_bw 64 KiB (MTU 4096) lost 15%.
///  - A contiguous frame: its payload, into L2, so that the copy into the application's buffer
///    streams from there. Interleaved runs on the 2-CPU VM, polled, run to completion: ndperf
///    sendinv (its 4 KiB WRITEs as 1 KiB frames) 605 -> 833 thousand cycles/s (mean of six; in
///    a phase where the VM's cores sat nearer, 573 -> 602), write_bw 64 KiB with every payload
///    copied (NDNIC_ZERO_COPY_MIN=0, MTU 4096) 62.5 -> 88.9 Gb/s (mean of four); send_bw 64 B
///    unchanged.
[[gnu::noinline]] void prefetch_payload(const char* d, uint32_t len) {
  constexpr uint32_t kMaxFrame = 4096 + 256;  ///< an MTU of 4096 and its headers: no more is asked for
  const uint32_t end = std::min(len, kMaxFrame);
  for (uint32_t off = 2 * RTE_CACHE_LINE_SIZE; off < end; off += RTE_CACHE_LINE_SIZE) rte_prefetch1(d + off);
}

inline void prefetch_body(const rte_mbuf* m) {
  if (unlikely(m->nb_segs > 2))
    rte_prefetch0(rte_pktmbuf_mtod(m->next->next, const void*));
  else if (unlikely(m->data_len > 2 * RTE_CACHE_LINE_SIZE))
    prefetch_payload(rte_pktmbuf_mtod(m, const char*), m->data_len);
}

}  // namespace

unsigned Shard::poll_once(uint64_t tsc) {
  unsigned work = 0;
  void* cmd;
  while (control && rte_ring_sc_dequeue(control, &cmd) == 0) {
    apply(static_cast<ControlCmd*>(cmd));
    work++;
  }

  rte_mbuf* pkts[kRxBurst * 2];
  uint16_t n = port->rx_burst(pkts, kRxBurst, queue);
  if (fault_rx) n = fault_rx->apply(pkts, n, kRxBurst * 2, port->mempool());
  work += n;
  load.rx_frames += n;
  load.rx_bursts += n != 0;
  const bool sharded = dev->shards.size() > 1;
  // The port prefetched each frame's mbuf and headers while it sorted them (Port::poll), all
  // but the first frame's, which it reads at once. That one's second mbuf line (next, pool) is
  // read only when the frame is retired, after it has run and before its completions are
  // published: the sending core wrote it last, so it was a miss of its own at the end of every
  // exchange. ndperf send_lat 8 B, polled, run to completion, binaries interleaved on the 2-CPU
  // VM: 1.59 -> 1.50 us typical (means of six).
  if (n != 0) rte_prefetch0(reinterpret_cast<const char*>(pkts[0]) + RTE_CACHE_LINE_SIZE);
  if (n != 0) port->prepare_send(queue);
  for (uint16_t i = 0; i < n; i++) {
    if (i + 1 < n) prefetch_body(pkts[i + 1]);
    Shard* owner = sharded ? owner_of(pkts[i]) : this;
    if (owner == this) {
      process_frame(pkts[i]);
    } else if (rte_ring_mp_enqueue(owner->dispatch, pkts[i]) == 0) {
      dispatched++;
    } else {
      dispatch_dropped++;  // the transport recovers it like a loss
      rte_pktmbuf_free(pkts[i]);
    }
  }
  if (sharded) {
    const unsigned k = rte_ring_sc_dequeue_burst(dispatch, reinterpret_cast<void**>(pkts), kRxBurst, nullptr);
    for (unsigned i = 1; i < k; i++) rte_prefetch0(pkts[i]);  // written by the shard that received them
    for (unsigned i = 0; i < k; i++) process_frame(pkts[i]);
    work += k;
    if (resolve) serve_resolves();
  }
  free_spent();
  // What the burst completed is published before its ACKs are built: an application thread
  // waiting on the CQ beside the worker lcores sees its results one ACK's build sooner.
  if (work != 0) flush_completions();
  send_due_acks();

  LazyTsc now(tsc);  // read once, by the first QP with a timer armed (completer_timers)
  for (Qp::Impl* qp : qps) {
    if (qp->state.load(std::memory_order_relaxed) == QpState::kReset) continue;
    if (qp->caps.type == QpType::kUd) {  // no timers, no READ replies
      work += ud_requester_run(*this, *qp);
      continue;
    }
    completer_timers(*this, *qp, now);
    work += requester_run(*this, *qp);
    work += responder_run(*this, *qp);
    if (qp->cq_overrun) {  // a lost completion: the QP cannot go on as if nothing happened
      qp->cq_overrun = false;
      if (qp->state.load(std::memory_order_relaxed) != QpState::kError) qp_to_error(*this, *qp);
    }
  }
  end_iteration();
  return work;
}

unsigned Shard::send_now(Qp::Impl& qp) {
  if (qp.state.load(std::memory_order_relaxed) == QpState::kReset) return 0;
  const unsigned work = qp.caps.type == QpType::kUd ? ud_requester_run(*this, qp) : requester_run(*this, qp);
  end_iteration();  // a request that failed before the wire completes at once
  return work;
}

void Shard::end_iteration() {
  flush_completions();
  flush_tx();
  // Regions read in the iteration may be deregistered once a grace period ends.
  if (dev->qsbr) rte_rcu_qsbr_quiescent(dev->qsbr, index);
}

}  // namespace ndnic::nic
