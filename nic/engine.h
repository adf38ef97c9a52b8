// The engine's private types: a Shard is one poll loop (one lcore, or the caller of
// Device::poll) with its port queue, its QPs and its TX batch; DeviceImpl holds the tables.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "nic/cq_impl.h"
#include "nic/fault.h"
#include "nic/memory.h"
#include "nic/qp_impl.h"
#include "wire/rx_flow_cache.h"
#include "ndnic/wire/packet.h"

struct rte_mbuf;
struct rte_ring;
struct rte_rcu_qsbr;

namespace ndnic::glue {
class Port;
}

namespace ndnic::nic {

/// Stores `v` into a transmit mbuf's field only where it holds something else. A pool mbuf
/// comes back with what its last frame left, which in a run of like frames is what this one
/// needs: unstored, the mbuf's line stays shared with the receiving core, which reads it for
/// every frame, rather than going back and forth (Shard::take_fresh).
template <class T, class V>
[[gnu::always_inline]] inline void set_if_new(T& field, V v) {
  if (field != T(v)) field = T(v);
}

constexpr uint16_t kRxBurst = 32;
constexpr uint16_t kTxBatch = 64;
/// mbufs new_frame takes from the pool at once. The receiving core freed them last, so each
/// header and first line misses in our cache: taken together, they can be fetched ahead.
constexpr uint16_t kFreshMbufs = 32;
/// Received frames retired (Shard::retire) before they go back to their pool together.
constexpr uint16_t kSpentFrames = kRxBurst;
constexpr uint16_t kTxReserve = 8;          ///< batch slots kept for ACKs and NAKs
constexpr uint32_t kFirstQpn = 0x11;          ///< as rxe: QPNs below are reserved (QP0, QP1)
constexpr uint32_t kGsiQpn = 1;               ///< the GSI QP (QpCaps::gsi), one per device
constexpr uint32_t kSendBudget = 64;          ///< packets one QP may send per poll iteration
constexpr uint8_t kAckUnlimited = 0x1F;       ///< AETH syndrome: ACK, credits not limited
constexpr uint16_t kCqBatch = 32;             ///< completions staged per CQ before a publish
constexpr unsigned kCqBatches = 4;            ///< CQs staged at once by one shard

/// A control request from the application thread, applied by the owning shard.
struct ControlCmd {
  enum Kind : uint8_t { kAttachQp, kDetachQp, kModifyQp, kBarrier, kSetFaults } kind;
  Qp::Impl* qp = nullptr;
  /// kSetFaults: the shard's new switches; the old ones come back here, to be freed by the
  /// caller once the shard no longer looks at them.
  std::unique_ptr<FaultSwitch> fault_rx, fault_tx;
  QpState to = QpState::kReset;
  QpAttr attr;
  bool ok = false;
  std::atomic<bool> done{false};
};

struct DeviceImpl;

/// Completions for one CQ made during one poll iteration, published together at its end: one
/// ring enqueue and one fence (Cq::Impl::push_batch) instead of one of each per completion.
struct CqBatch {
  Cq::Impl* cq = nullptr;
  uint16_t n = 0;
  Completion c[kCqBatch];
};

struct Shard {
  DeviceImpl* dev = nullptr;
  glue::Port* port = nullptr;
  uint16_t queue = 0;
  unsigned lcore = 0;
  unsigned index = 0;
  std::vector<Qp::Impl*> qps;              ///< QPs this shard owns
  rte_ring* control = nullptr;             ///< ControlCmd*, app -> shard
  rte_ring* dispatch = nullptr;            ///< rte_mbuf*, frames another shard received for our QPs
  rte_ring* resolve = nullptr;             ///< QPN (as a pointer), shards -> the ARP owner
  Shard* arp_owner = this;                 ///< the shard polling queue 0 of our port
  std::vector<uint32_t> resolving;         ///< QPNs waiting for their peer's MAC (ARP owner only)
  std::vector<Qp::Impl*> acks_due;         ///< QPs with a coalesced ACK pending (this RX burst)
  rte_mbuf* tx[kTxBatch];
  uint16_t ntx = 0;
  rte_mbuf* fresh[kFreshMbufs];             ///< raw mbufs taken from the pool together (new_frame)
  size_t mbuf_data_at = 0;                 ///< the port's (Port::mbuf_data_at), read per frame
  uint16_t nfresh = 0, fresh_next = 0;
  void* spent[kSpentFrames];                ///< retired frames of `spent_pool`, not yet put back
  uint16_t nspent = 0;
  rte_mempool* spent_pool = nullptr;
  std::unique_ptr<FaultSwitch> fault_rx, fault_tx;
  wire::RejectCounters rejects;            ///< frames the decoder refused
  uint64_t unknown_qp = 0;                 ///< frames for a QPN we do not have (or in RESET)
  uint64_t tx_dropped = 0;                 ///< frames the port did not take in time
  uint64_t dispatched = 0;                 ///< frames handed to the owning shard
  uint64_t dispatch_dropped = 0;           ///< ... that found its ring full
  uint32_t held = 0;                       ///< mbufs responders hold behind READ replies
  uint64_t held_dropped = 0;               ///< requests dropped: a responder's or the shard's limit
  uint64_t tsc_hz = 0;
  uint16_t ip_id = 0;
  uint32_t zero_copy_min = 0;              ///< payloads sent where they lie from here on; 0: never
  Device::ShardLoad load;                  ///< how busy the loop is (shard_loads())
  /// One iteration in `load`, `cycles` long; `busy`: it found work. Its total cycles are the
  /// caller's (a worker's loop counts the time between iterations too).
  void count_iteration(uint64_t cycles, bool busy) {
    load.polls++;
    if (busy) {
      load.busy_polls++;
      load.busy_cycles += cycles;
    }
  }
  CqBatch cq_batch[kCqBatches];
  wire::RxFlowCache rx_flows;              ///< the flows we receive: ICRC prefixes, known headers

  /// A slot for a completion of one of our QPs for `cq`, behind the ones staged before it: the
  /// caller fills it in place (a completion built elsewhere and copied in was read back while
  /// its stores were in flight, which stalls the copy).
  Completion& stage_completion(Cq::Impl* cq);
  /// Publishes what is staged. A completion its CQ could not take takes its RC QP to ERROR
  /// (cq_overrun, as Cq::Impl::push's callers did); a UD QP goes on. The test for nothing
  /// staged is inline: an iteration ends with a flush whether or not it completed anything
  /// (two of a ping-pong's six flushes per round trip), and the call alone saved and restored
  /// the registers the publishing needs.
  void flush_completions() {
    if (cq_batch[0].n != 0) publish_completions();  // the batches in use are a prefix
  }
  [[gnu::noinline]] void publish_completions();

  /// One iteration: receive and process a burst, drain rings, send, run timers. `tsc`: the
  /// clock as the caller just read it, which the timers then take (0: they read it if needed).
  unsigned poll_once(uint64_t tsc = 0);
  /// The requester's part of an iteration, for `qp` alone: what was posted to it leaves now.
  /// Run to completion, a post to an idle QP calls this rather than poll_once: the receive
  /// path's look at an empty port, the control ring and the other QPs wait for the next full
  /// iteration, which the application's next look at a CQ runs anyway.
  unsigned send_now(Qp::Impl& qp);
  /// What ends poll_once and send_now: completions published, frames handed to the port, the
  /// shard quiescent.
  void end_iteration();
  /// An mbuf for a frame this shard builds, `room` bytes of which it writes, or nullptr when
  /// the pool is empty: reset as rte_pktmbuf_alloc resets one, except for its data_len and
  /// pkt_len, which the builder sets (set_if_new). Taken from the pool kFreshMbufs at a time,
  /// each asked into the cache a few frames before its turn (as many lines as this frame
  /// writes).
  rte_mbuf* new_frame(size_t room);
  /// new_frame() for a chain's further segments (zero-copy), out of line: a second caller of
  /// new_frame made the compiler stop inlining it into every frame's path.
  [[gnu::noinline]] rte_mbuf* new_segment();
  /// What both take: the next mbuf of the batch, the one a few ahead asked into the cache.
  rte_mbuf* take_fresh(size_t room);
  /// Gives the mbufs new_frame has not handed out back to the pool (the device closes).
  void return_fresh();
  /// Queues a built frame; flushes when the batch is full.
  void send(rte_mbuf* m);
  /// Hands the batch to the port; what the port does not take stays queued (backpressure).
  /// The test for nothing to send is inline, as flush_completions' is: every iteration ends
  /// with a flush, and an idle one paid for the call and its saved registers.
  void flush_tx() {
    if (ntx != 0 || fault_tx) send_batch();
  }
  /// flush_tx's work, called only from it: a batch to send, or a fault switch to run.
  [[gnu::noinline]] void send_batch();
  /// Room for a few more frames: the requester and READ replies stop while the port is full,
  /// rather than build frames that would be dropped and cost a go-back.
  bool tx_room() const { return ntx + kTxReserve <= kTxBatch; }
  /// One contiguous mbuf with the frame of a multi-segment one (nullptr if it cannot).
  rte_mbuf* linearize(rte_mbuf* m);
  /// A chained frame: a zero-copy sender's three pieces decoded and run where they lie
  /// (nullptr back), any other chain made contiguous for process_frame (nullptr if it cannot).
  /// Apart from process_frame, so that the decoder of every frame keeps one call site.
  [[gnu::noinline]] rte_mbuf* take_chain(rte_mbuf* m, wire::RocePacket& pkt, const wire::DecodeOptions& opt);
  /// The three segments of a chained frame, as the decoder takes a zero-copy sender's frame.
  static wire::FramePieces pieces_of(const rte_mbuf* m);
  void apply(ControlCmd* cmd);
  /// Decodes a frame and runs it through its QP; retires it unless the responder kept it.
  void process_frame(rte_mbuf* m);
  /// Frees a received frame. The usual one (one segment, direct, no other reference) goes back
  /// to its pool with the others of the RX burst in one bulk put (free_spent): freed one by
  /// one, each took ~60 instructions, a lookup of this lcore's pool cache each time.
  void retire(rte_mbuf* m) {
    if (m->nb_segs == 1 && m->next == nullptr && RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1) {
      spend(m);
      return;
    }
    retire_segments(m);
  }
  /// Any other frame (a zero-copy sender's chain, say): each segment let go as rte_pktmbuf_free
  /// lets it go (an attached buffer detached, its free callback run, another reference
  /// dropped), and those that go back to a pool join the bulk put. BM_responder
  /// WRITE/32768/chained, instructions per packet: 1491 so, 1526 by rte_pktmbuf_free (three
  /// puts), 1561 by rte_pktmbuf_free_bulk of the one chain.
  [[gnu::noinline]] void retire_segments(rte_mbuf* m);
  /// Queues a segment that is ready to go back to its pool (rte_pktmbuf_prefree_seg's result).
  void spend(rte_mbuf* m) {
    if (m->pool != spent_pool || nspent == kSpentFrames) {
      free_spent();
      spent_pool = m->pool;
    }
    spent[nspent++] = m;
  }
  /// Puts the retired frames back in their pool. The put is out of line and the test inline:
  /// every iteration calls this, and inlined whole it was compiled as a call anyway, whose
  /// saved registers an idle iteration paid for.
  void free_spent() {
    if (nspent != 0) put_spent();
  }
  [[gnu::noinline]] void put_spent() {
    rte_mempool_put_bulk(spent_pool, spent, nspent);
    nspent = 0;
  }
  /// Ends an RX burst: one ACK for each QP whose requests in it asked for one.
  void send_due_acks();
  /// The owner of the QP a frame is for, read from the BTH before any checks (the owner does
  /// them); this shard when it cannot tell.
  Shard* owner_of(const rte_mbuf* m) const;
  /// Makes qp.dest_mac known: ARP on our own port queue 0, or through the ARP owner.
  bool resolve_mac(Qp::Impl& qp);
  void serve_resolves();

  /// The frame process_frame is decoding, kept between frames: a RocePacket made new for each
  /// one cost ~40 instructions of zeroing (callgrind, BM_stream SEND 64 B). The decoder sets
  /// every field but those of extension headers the opcode does not carry, which keep an
  /// earlier frame's values: read an extension header's fields only where the opcode has it.
  wire::RocePacket rx_pkt;
};

struct DeviceImpl {
  DeviceConfig config;
  MemoryTable memory;
  rte_rcu_qsbr* qsbr = nullptr;
  GracePeriod grace;  ///< over qsbr, helped by quiesce_idle where application threads drive
  std::vector<std::unique_ptr<Shard>> shards;
  std::unique_ptr<std::atomic<Qp::Impl*>[]> qp_table;  ///< by QPN; lcores read, the app writes
  uint32_t qp_table_size = 0;
  std::atomic<bool> running{false};
  std::atomic<uint32_t> next_pd{1};
  unsigned serial = 0;                     ///< names of rings
  /// Application threads: QP number choice, QP instance ids and the CQ list (the control
  /// path; lcores never take it).
  std::mutex control;
  uint32_t next_qpn = kFirstQpn;
  uint32_t next_qp_id = 0;                 ///< the last QP instance id given out
  std::vector<std::unique_ptr<Cq::Impl>> cqs;
  std::vector<std::unique_ptr<Qp::Impl>> qps;
  bool worker_lcores = false;
  /// App-driven devices: held by the thread inside progress() or applying a control request,
  /// so one thread at a time runs the shards (uncontended when one thread drives).
  std::atomic_flag driving = ATOMIC_FLAG_INIT;

  bool try_drive() { return !driving.test_and_set(std::memory_order_acquire); }
  void drive_blocking();
  void stop_driving() { driving.clear(std::memory_order_release); }
  /// One iteration of every shard, as the driving thread: each reports a quiescent state at
  /// its end, so a deregistration on another thread waits for the iteration, as for a worker.
  unsigned drive_once();
  /// Runs step() as the driving thread; 0 without running it where worker lcores run the engine
  /// or another thread is driving (that thread does the work).
  template <class Step>
  unsigned drive_if_free(Step&& step) {
    if (worker_lcores || !try_drive()) return 0;
    const unsigned work = step();
    stop_driving();
    return work;
  }
  /// GracePeriod's help for app-driven devices: where no thread is driving, reports every
  /// shard quiescent (none can be inside an iteration while the driving flag is held here).
  static void quiesce_idle(void* self);

  Qp::Impl* qp_by_number(uint32_t qpn) const {
    return qpn < qp_table_size ? qp_table[qpn].load(std::memory_order_acquire) : nullptr;
  }
  /// Runs `cmd` on its QP's shard: through the control ring to a worker lcore (and waits), or
  /// directly when the application polls.
  bool run_control(Shard& s, ControlCmd& cmd);
};

// ---- pipeline stages (one file each) ----------------------------------------------------

/// recv.cc: a decoded packet for this shard -> responder or completer. True when the
/// responder kept `m` (a deferred request); otherwise the caller frees it.
bool recv_packet(Shard& s, wire::RocePacket& pkt, rte_mbuf* m);
/// recv.cc: the ICRC that decode left pending (the payload's part, for a fused copy), checked
/// now: before a packet is acted on in any other way than that copy. False, and counted as an
/// ICRC mismatch, when the packet is corrupt; it must then be dropped without a trace.
bool settle_icrc(Shard& s, wire::RocePacket& pkt);
/// A packet whose fused copy found its ICRC bad: counted as rejected, not as received.
void drop_corrupt(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt);
/// settle_icrc() for a packet its QP has counted as received (the responder's and completer's):
/// a corrupt one is taken off those counts again (drop_corrupt).
bool settle_counted_icrc(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt);
/// req.cc: FETCH, ring -> SQ with the local key checks (the UD requester shares it).
void requester_fetch(Shard& s, Qp::Impl& qp);
/// req.cc: requester_ready's FETCH and flush, for a QP that has something to look at.
bool requester_take(Shard& s, Qp::Impl& qp, QpState st);
/// FETCH, then whether the QP may send (RTS); a QP in ERROR has its queues flushed. Nothing
/// posted and nothing in the SQ (most polls of a QP that only receives, every poll of QP1) is
/// no ring operation. That test is inline: out of line, with the fetch inlined behind it, each
/// such look saved and restored the registers the fetch uses (~30 instructions).
inline bool requester_ready(Shard& s, Qp::Impl& qp) {
  const QpState st = qp.state.load(std::memory_order_relaxed);
  // ERROR goes on: its flush also completes the receives.
  if (st != QpState::kError && qp.req.head == qp.req.tail && qp.send_ring.empty()) return false;
  return requester_take(s, qp, st);
}
/// req.cc: what the window allows of the SQ, for a QP that may send (requester_ready).
unsigned requester_send(Shard& s, Qp::Impl& qp);
/// Drain the send ring and send what the window allows; inline as requester_ready's test is.
inline unsigned requester_run(Shard& s, Qp::Impl& qp) { return requester_ready(s, qp) ? requester_send(s, qp) : 0; }
/// ud.cc: UD SEND ONLY datagrams, out (one per work request, no ACKs) and in.
unsigned ud_requester_run(Shard& s, Qp::Impl& qp);
void ud_recv_packet(Shard& s, Qp::Impl& qp, const wire::RocePacket& pkt);
/// The oldest posted receive not yet ended, RC and UD alike, read where it lies in the receive
/// ring (valid until end_recv); nullptr when there is none. Inline: every SEND takes one.
inline const RecvWr* next_recv(Qp::Impl& qp) { return qp.recv_ring.next_in_place(qp.resp.recvs_ready); }
/// Ends the receive next_recv gave, once its completion is made from it: its slot goes back to
/// the application, before that completion can be seen, so a receive posted in answer to it
/// always finds room.
inline void end_recv(Qp::Impl& qp) {
  qp.recv_ring.release_in_place(qp.resp.recvs_ready);
  qp.resp.recv = nullptr;
}
/// resp.cc: a request packet (true: `m` was kept, deferred), `info` its opcode's (looked up once
/// a packet, by recv_packet); READ response generation.
bool responder_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt, const wire::OpcodeInfo& info, rte_mbuf* m);
/// resp.cc: READ responses, the requests held behind them, a coalesced ACK still pending.
unsigned responder_serve(Shard& s, Qp::Impl& qp);
/// responder_serve, where there is anything for it: most polls have no READ to answer, nothing
/// held and no ACK pending, and find that inline (~10 instructions a look less).
inline unsigned responder_run(Shard& s, Qp::Impl& qp) {
  const RespState& r = qp.resp;
  if (r.reads_active == 0 && r.res_head == r.res_next && r.deferred.empty() && !r.ack_pending) return 0;
  return responder_serve(s, qp);
}
/// The TSC, read at the first call and then kept: a poll or a response that moves no timer
/// reads no clock (a read is ~10 ns in a VM, a third of an idle poll, and one came before every
/// reply a ping-pong sends).
class LazyTsc {
 public:
  LazyTsc() = default;
  /// Already read (0: not yet).
  explicit LazyTsc(uint64_t tsc) : tsc_(tsc) {}
  uint64_t operator()() { return tsc_ ? tsc_ : (tsc_ = rte_rdtsc()); }

 private:
  uint64_t tsc_ = 0;
};

/// comp.cc: a response packet; timers (the clock read only for a QP with one armed);
/// completions.
void completer_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& pkt, const wire::OpcodeInfo& info);
void completer_timers(Shard& s, Qp::Impl& qp, LazyTsc& now);
/// qp.cc: state changes, ERROR and the flush of both queues.
bool qp_modify(Shard& s, Qp::Impl& qp, QpState to, const QpAttr& attr);
void qp_to_error(Shard& s, Qp::Impl& qp);
void qp_flush(Shard& s, Qp::Impl& qp);
/// qp.cc: a completion to its CQ, through the owning shard's batch (Shard::stage_completion):
/// the slot to fill, zeroed.
Completion& new_completion(Qp::Impl& qp, Cq* cq);
/// Completions (qp.cc): a send-side WQE, in order; a receive.
void complete_wqe(Qp::Impl& qp, const SendWqe& w);
void complete_recv(Qp::Impl& qp, uint64_t wr_id, WcStatus st, WcOpcode op, uint32_t len,
                   uint8_t flags, uint32_t imm_or_inv, bool solicited);
/// Completes every WQE at the head that is done (or failed: then the QP goes to ERROR).
void advance_completions(Shard& s, Qp::Impl& qp);
/// qp.cc: completes the WQE at the send queue's head, which is kDone (what advance_completions
/// does for each such WQE); the completer's loop, which goes on to the next WQE itself.
void complete_head(Qp::Impl& qp);
/// tx.cc: builds one packet of `qp` into an mbuf and queues it, its headers from the QP's
/// template (wire/header_template.h). `p` carries the BTH and extension headers; the payload
/// is gathered from `src` (host pointers) or not at all.
struct Gather {
  const uint8_t* ptr[kMaxSge + 1];
  uint32_t len[kMaxSge + 1];
  unsigned n = 0;
  uint32_t total = 0;
  TxPins* pins = nullptr;  ///< one piece of a registered region: its pins (zero-copy allowed)
};
bool send_packet(Shard& s, Qp::Impl& qp, wire::RocePacket& p, const Gather* payload);
/// The same to the destination already in `p` (eth.dst, ip4.dst, bth.dest_qp): UD datagrams.
bool send_packet_to(Shard& s, Qp::Impl& qp, wire::RocePacket& p, const Gather* payload);
/// req.cc: [off, off+len) of a fetched WQE's payload (the UD requester shares it).
void requester_gather(const SendWqe& w, uint32_t off, uint32_t len, Gather* g);
/// The same, each piece's lkey checked now (a packet built after the region may have gone);
/// false when a check fails.
bool requester_gather_checked(Shard& s, const Qp::Impl& qp, const SendWqe& w, uint32_t off, uint32_t len,
                              Gather* g);
/// A SEND or WRITE packet's BTH fields and the extension headers its opcode may have (RETH,
/// ImmDt, IETH: those the opcode has are read, the others may hold anything).
struct RequestHeaders {
  uint8_t opcode;
  bool se;
  bool ack_req;
  uint32_t psn;
  uint64_t va;               ///< RETH
  uint32_t rkey;             ///< RETH
  uint32_t dma_len;          ///< RETH
  uint32_t imm;              ///< ImmDt, as RocePacket::imm
  uint32_t invalidate_rkey;  ///< IETH
};
/// A SEND or WRITE packet written from the QP's template without a RocePacket (its zeroing,
/// the general extension-header encoder and two opcode-table walks were ~90 of the requester's
/// ~780 instructions per 64-byte packet).
bool send_request(Shard& s, Qp::Impl& qp, const RequestHeaders& h, const Gather& payload);
/// One READ response packet (`opcode` one of the four), written from the QP's template
/// without a RocePacket: the responder's READ stage was ~530 instructions per response through
/// send_packet. Its AETH (first, last, only) is an unlimited ACK with `msn`.
bool send_read_response(Shard& s, Qp::Impl& qp, uint8_t opcode, uint32_t psn, uint32_t msn, const Gather& g);
/// An ACK, NAK or RNR NAK for `psn`, now (after the QP's pending coalesced ACK).
void send_ack(Shard& s, Qp::Impl& qp, uint8_t syndrome, uint32_t psn);
/// ACKNOWLEDGE coalesced: `psn` is acknowledged at the end of the RX burst, with later ones.
/// Inline: every request that asks for an ACK comes here, and out of line (where LTO's budget
/// for the responder ran out) it cost ~20 instructions a packet.
inline void ack_later(Shard& s, Qp::Impl& qp, uint32_t psn) {
  RespState& r = qp.resp;
  if (!r.ack_pending) {
    r.ack_pending = true;
    s.acks_due.push_back(&qp);
  }
  r.ack_psn = psn;
  r.ack_msn = r.msn;
}
/// Sends the QP's pending coalesced ACK, if any: before any other response of the QP.
void send_pending_ack(Shard& s, Qp::Impl& qp);

}  // namespace ndnic::nic
