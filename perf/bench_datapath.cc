// The packet path, per packet, on two devices over a net_ring pair (A sends to B), polled from
// this thread:
//
// - responder: the engine's own RX entry point, Shard::process_frame (decode, dispatch to the
//   QP, the responder's checks, placement or the receive's scatter, its completion), then the
//   burst's coalesced ACKs, responder_run (READ responses, deferred requests), the completions'
//   publication and the TX flush, once per RX burst as the poll loop does. The frames are built beforehand as a PMD would deliver them
//   (mbufs from B's pool holding A's requests with consecutive PSNs), outside the timing.
// - requester: requester_run (FETCH with its L_Key checks, segmentation, building each packet:
//   mbuf, headers, payload gather, ICRC) and the TX flush, on work requests posted beforehand.
// - completer: Shard::process_frame on the responses to requests A's requester sent (one ACK
//   per SEND or WRITE, or the READ responses, built beforehand in A's pool): the completer's
//   checks, READ placement, the completions.
// - stream: everything, end to end: post, both engines, ACKs, the completer, the CQs.
// - idle iteration: one engine iteration that finds nothing to do (run to completion's look at
//   an empty CQ).
//
// The stage functions are driven as the shard's own poll loop drives them (the devices have no
// worker lcores, so this thread is their lcore); nothing in nic/ is changed for it. After every
// pass the untimed part lets the real engines finish the exchange (ACKs back, completions) and
// checks that every packet arrived and every request succeeded.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "nic/engine.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/fixtures/node_pair.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kMtu = 1024;                 ///< rxe's default path MTU
constexpr uint32_t kBufSize = 1 << 20;
constexpr uint32_t kQueueDepth = 1024;          ///< send and receive rings, CQs
constexpr uint32_t kPsnA = 0x100;               ///< A's first PSN (B's expected PSN)
constexpr uint32_t kPsnB = 0x200;
constexpr uint32_t kRespPassPackets = 256;      ///< responder pass: packets it handles
constexpr uint32_t kReqPassPackets = 128;       ///< requester / stream pass: under the 256-PSN window
constexpr uint32_t kIpA = 0xC6125201;           ///< 198.18.82.1
constexpr uint32_t kIpB = 0xC6125202;
constexpr double kMinTime = 0.1;                ///< each pass is tens of microseconds of work

enum class Op { kSend, kWrite, kRead };

/// One message shape: what A asks of B, and how long the message is.
struct Shape {
  Op op;
  uint32_t len;
  /// Each request packet with a payload arrives as a zero-copy sender's chain: headers,
  /// payload and trailer in three mbufs (the responder benchmark only).
  bool chained = false;
  uint32_t packets() const { return len == 0 ? 1 : (len + kMtu - 1) / kMtu; }
  const char* name() const { return op == Op::kSend ? "SEND" : op == Op::kWrite ? "WRITE" : "READ"; }
};

struct Node : ndnic::testing::VerbsEnd {
  Shard& shard() { return *dev.impl()->shards[0]; }
  Qp::Impl& qpi() { return *qp->impl(); }
};

/// Frees whatever the port has received; returns how many RoCE frames that was.
unsigned drain_port(glue::Port& port) {
  unsigned n = 0;
  rte_mbuf* m[32];
  for (uint16_t k; (k = port.rx_burst(m, 32)) != 0; n += k) rte_pktmbuf_free_bulk(m, k);
  return n;
}

/// Takes n completions from `cq` (no engine runs here: they must be queued already) and checks
/// each succeeded with `len` bytes.
bool take_completions(Cq* cq, uint32_t n, uint32_t len) {
  Completion c[64];
  for (uint32_t got = 0; got < n;) {
    const unsigned k = cq->poll(c, std::min<uint32_t>(64, n - got));
    if (k == 0) return false;
    for (unsigned i = 0; i < k; i++)
      if (c[i].status != WcStatus::kSuccess || c[i].byte_len != len) return false;
    got += k;
  }
  return true;
}

struct Pair {
  Node a, b;
  std::string error;

  Pair() {
    ndnic::testing::PairSpec spec;
    spec.name = "bench_dp";
    spec.ipv4 = {kIpA, kIpB};
    spec.macs = true;     // the QPs are given their peer's MAC rather than resolving it
    spec.mbufs = 8191;    // the pass's prebuilt frames, both rings and the TX batches at once
    error = ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev});
    if (!error.empty()) return;
    for (Node* n : {&a, &b}) {
      if (!n->open(kBufSize, kQueueDepth, kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessMwBind)) {
        error = "device setup failed";
        return;
      }
    }
    for (uint32_t i = 0; i < kBufSize; i++) a.buf[i] = uint8_t(i * 7);
  }
  ~Pair() { ndnic::testing::close_pair({&a.port, &b.port}, {&a.dev, &b.dev}); }

  /// Fresh QPs, connected (MACs given, so no ARP), with nothing in flight: every benchmark
  /// run starts from the same state whatever the previous one left.
  bool connect() {
    for (Node* n : {&a, &b}) {
      if (n->qp) n->dev.destroy_qp(n->qp);
      QpCaps caps;
      caps.send_cq = n->scq;
      caps.recv_cq = n->rcq;
      caps.pd = n->pd;
      caps.max_send_wr = kQueueDepth;
      caps.max_recv_wr = kQueueDepth;
      n->qp = n->dev.create_qp(caps);
      if (!n->qp || !n->qp->modify(QpState::kInit, {})) return false;
    }
    for (auto [me, peer, sq, rq] : {std::tuple{&a, &b, kPsnA, kPsnB}, std::tuple{&b, &a, kPsnB, kPsnA}}) {
      QpAttr at;
      at.remote_qpn = peer->qp->qpn();
      at.sq_psn = sq;
      at.rq_psn = rq;
      at.path_mtu = kMtu;
      at.dest_ipv4 = peer->port.ipv4();
      std::memcpy(at.dest_mac, peer->port.mac().addr_bytes, 6);
      if (!me->qp->modify(QpState::kRtr, at) || !me->qp->modify(QpState::kRts, at)) return false;
    }
    for (Node* n : {&a, &b}) {
      drain_port(n->port);
      Completion c[64];
      while (n->scq->poll(c, 64) || n->rcq->poll(c, 64)) {
      }
    }
    return true;
  }

  bool healthy() { return a.qp->state() == QpState::kRts && b.qp->state() == QpState::kRts; }
};

Pair* pair(benchmark::State& state) {
  static Pair p;  // built on first use, after EAL; destroyed before EAL (see bench_main.cc)
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return nullptr;
  }
  if (!p.connect()) {
    state.SkipWithError("connecting the QPs failed");
    return nullptr;
  }
  return &p;
}

void report(benchmark::State& state, uint64_t packets_per_pass, uint64_t bytes_per_pass) {
  state.SetItemsProcessed(int64_t(state.iterations() * packets_per_pass));
  state.SetBytesProcessed(int64_t(state.iterations() * bytes_per_pass));
  state.counters["packets"] = double(packets_per_pass);
  // Time per packet, next to the time per pass the Time column shows.
  state.counters["per_packet"] = benchmark::Counter(double(packets_per_pass),
                                                    benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}

// ---- responder -----------------------------------------------------------------------------

uint8_t request_opcode(Op op, bool first, bool last) {
  using namespace wire;
  if (op == Op::kRead) return kRcReadRequest;
  if (op == Op::kWrite) return first && last ? kRcWriteOnly : first ? kRcWriteFirst : last ? kRcWriteLast : kRcWriteMiddle;
  return first && last ? kRcSendOnly : first ? kRcSendFirst : last ? kRcSendLast : kRcSendMiddle;
}

/// Moves the payload and the trailer (pad and ICRC) of the frame in `head` into two mbufs
/// chained behind it, as a zero-copy sender's frame arrives over net_ring. False when the pool
/// is out of mbufs (`head` unchanged).
bool split_into_chain(rte_mempool* pool, rte_mbuf* head, const wire::RocePacket& pkt) {
  rte_mbuf* pay = rte_pktmbuf_alloc(pool);
  rte_mbuf* tail = pay ? rte_pktmbuf_alloc(pool) : nullptr;
  if (!tail) {
    rte_pktmbuf_free(pay);
    return false;
  }
  const uint16_t trailer = uint16_t(pkt.bth.pad + wire::kIcrcLen);
  const uint16_t at = uint16_t(head->data_len - trailer - pkt.payload_len);
  const uint8_t* f = rte_pktmbuf_mtod(head, const uint8_t*);
  std::memcpy(rte_pktmbuf_mtod(pay, uint8_t*), f + at, pkt.payload_len);
  std::memcpy(rte_pktmbuf_mtod(tail, uint8_t*), f + at + pkt.payload_len, trailer);
  pay->data_len = uint16_t(pkt.payload_len);
  tail->data_len = trailer;
  head->data_len = at;
  head->next = pay;
  pay->next = tail;
  head->nb_segs = 3;
  return true;
}

/// Encodes `pkt` into an mbuf from `pool` at the end of `out`, as a PMD would deliver it (in
/// three pieces where `chained` and it has a payload). On failure every mbuf in `out` goes
/// back and `out` is emptied.
bool append_frame(rte_mempool* pool, const wire::RocePacket& pkt, std::vector<rte_mbuf*>* out, bool chained = false) {
  rte_mbuf* mb = rte_pktmbuf_alloc(pool);
  const size_t len = mb ? wire::encode_frame(pkt, rte_pktmbuf_mtod(mb, uint8_t*), rte_pktmbuf_tailroom(mb)) : 0;
  if (mb) out->push_back(mb);
  if (len != 0) {
    mb->data_len = uint16_t(len);
    mb->pkt_len = uint32_t(len);
  }
  if (len == 0 || (chained && pkt.payload_len != 0 && !split_into_chain(pool, mb, pkt))) {
    rte_pktmbuf_free_bulk(out->data(), unsigned(out->size()));
    out->clear();
    return false;
  }
  return true;
}

/// The packets A's requester would send for `msgs` messages of `shape`, starting at `*psn`,
/// as mbufs in B's pool; `*acks` counts the RX bursts (kRxBurst frames) with a packet that asks
/// for an acknowledgement: the responder sends one ACK per such burst. On failure nothing is
/// left allocated.
bool build_requests(Pair& p, const Shape& shape, uint32_t msgs, uint32_t* psn, std::vector<rte_mbuf*>* out,
                    uint32_t* acks) {
  out->clear();
  *acks = 0;
  const uint32_t req_pkts = shape.op == Op::kRead ? 1 : shape.packets();
  size_t acked_burst = SIZE_MAX;
  for (uint32_t m = 0; m < msgs; m++) {
    for (uint32_t j = 0; j < req_pkts; j++) {
      const uint32_t off = j * kMtu;
      const bool first = j == 0, last = j + 1 == req_pkts;
      wire::RocePacket pkt;
      std::memcpy(pkt.eth.src, p.a.port.mac().addr_bytes, 6);
      std::memcpy(pkt.eth.dst, p.b.port.mac().addr_bytes, 6);
      pkt.ip4.src = kIpA;
      pkt.ip4.dst = kIpB;
      pkt.udp.src_port = 0xC000;
      pkt.bth.opcode = request_opcode(shape.op, first, last);
      pkt.bth.dest_qp = p.b.qp->qpn();
      pkt.bth.psn = *psn;
      // As A's requester: AckReq on the last packet, and every 32 packets inside a message.
      pkt.bth.ack_req = last || j % kAckReqEvery == kAckReqEvery - 1;
      if (first && shape.op != Op::kSend)
        pkt.reth = {.va = reinterpret_cast<uint64_t>(p.b.buf.data()), .rkey = p.b.mr.rkey, .dma_len = shape.len};
      if (shape.op != Op::kRead) {
        pkt.payload = p.a.buf.data() + off;
        pkt.payload_len = std::min(kMtu, shape.len - off);
        pkt.bth.pad = wire::pad_for(pkt.payload_len);
      }
      if (!append_frame(p.b.port.mempool(), pkt, out, shape.chained)) return false;
      const size_t burst = (out->size() - 1) / kRxBurst;
      if (shape.op != Op::kRead && pkt.bth.ack_req && burst != acked_burst) {
        acked_burst = burst;
        ++*acks;
      }
      *psn = psn_add(*psn, shape.op == Op::kRead ? shape.packets() : 1);
    }
  }
  return true;
}

void BM_responder(benchmark::State& state, Shape shape) {
  Pair* p = pair(state);
  if (!p) return;
  Shard& s = p->b.shard();
  Qp::Impl& qp = p->b.qpi();
  const uint32_t msgs = std::max(1u, kRespPassPackets / shape.packets());
  // The responder's work is per request packet for SEND and WRITE, per response for READ.
  const uint32_t packets = msgs * shape.packets();
  uint32_t psn = kPsnA;
  std::vector<rte_mbuf*> frames;
  RecvWr rwr{};
  rwr.num_sge = 1;
  rwr.sge[0] = {reinterpret_cast<uint64_t>(p->b.buf.data()), std::max(shape.len, 1u), p->b.mr.lkey};
  const double tsc_hz = double(rte_get_tsc_hz());
  for (auto _ : state) {
    if (shape.op == Op::kSend)
      for (uint32_t i = 0; i < msgs; i++)
        if (!p->b.qp->post_recv(rwr)) return state.SkipWithError("post_recv refused");
    uint32_t acks = 0;
    if (!build_requests(*p, shape, msgs, &psn, &frames, &acks)) return state.SkipWithError("building the frames failed");
    const uint64_t t0 = rte_rdtsc();
    for (size_t i = 0; i < frames.size();) {
      // One RX burst, then what the poll loop does for the QP and the port after it.
      for (const size_t end = std::min(frames.size(), i + kRxBurst); i < end; i++) s.process_frame(frames[i]);
      s.send_due_acks();
      while (responder_run(s, qp) != 0) s.flush_tx();
      s.flush_completions();
      s.flush_tx();
    }
    const uint64_t t1 = rte_rdtsc();
    state.SetIterationTime(double(t1 - t0) / tsc_hz);
    // Every ACK or READ response reached A; every receive completed; the QP is still fine.
    const unsigned want = shape.op == Op::kRead ? packets : acks;
    if (const unsigned got = drain_port(p->a.port); got != want)
      return state.SkipWithError(("A received " + std::to_string(got) + " frames, not " + std::to_string(want)).c_str());
    if (shape.op == Op::kSend && !take_completions(p->b.rcq, msgs, shape.len))
      return state.SkipWithError("a receive did not complete with success");
    const Qp::Counters& c = qp.counters;
    const uint64_t naks = c.naks_sent[0] + c.naks_sent[1] + c.naks_sent[2] + c.naks_sent[3] + c.rnr_naks_sent;
    if (naks != 0 || !p->healthy() || s.ntx != 0) return state.SkipWithError("the responder NAKed or kept frames");
  }
  if (shape.op == Op::kWrite && std::memcmp(p->b.buf.data(), p->a.buf.data(), shape.len) != 0)
    state.SkipWithError("the WRITE data did not land");
  report(state, packets, uint64_t(msgs) * shape.len);
}

// ---- requester -----------------------------------------------------------------------------

/// Polls both devices until A's send CQ has n completions (and B's receive CQ m), all
/// successful. False on a failure or after 5 s.
bool finish_exchange(Pair& p, uint32_t n, uint32_t m, uint32_t len) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Completion c[64];
  uint32_t sends = 0, recvs = 0;
  while (sends < n || recvs < m) {
    p.a.dev.poll();
    p.b.dev.poll();
    for (auto [cq, count] : {std::pair{p.a.scq, &sends}, std::pair{p.b.rcq, &recvs}}) {
      const unsigned k = cq->poll(c, 64);
      for (unsigned i = 0; i < k; i++)
        if (c[i].status != WcStatus::kSuccess || c[i].byte_len != len) return false;
      *count += k;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

/// Posts `msgs` requests of `shape` from A (and, for SEND, as many receives on B).
bool post_requests(Pair& p, const Shape& shape, uint32_t msgs) {
  SendWr wr{};
  wr.opcode = shape.op == Op::kSend ? WrOpcode::kSend : shape.op == Op::kWrite ? WrOpcode::kWrite : WrOpcode::kRead;
  wr.flags = kWrSignaled;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(p.a.buf.data()), shape.len, p.a.mr.lkey};
  wr.remote_addr = reinterpret_cast<uint64_t>(p.b.buf.data());
  wr.rkey = p.b.mr.rkey;
  RecvWr rwr{};
  rwr.num_sge = 1;
  rwr.sge[0] = {reinterpret_cast<uint64_t>(p.b.buf.data()), shape.len, p.b.mr.lkey};
  for (uint32_t i = 0; i < msgs; i++) {
    wr.wr_id = i;
    if (!p.a.qp->post_send(wr)) return false;
    if (shape.op == Op::kSend && !p.b.qp->post_recv(rwr)) return false;
  }
  return true;
}

void BM_requester(benchmark::State& state, Shape shape) {
  Pair* p = pair(state);
  if (!p) return;
  Shard& s = p->a.shard();
  Qp::Impl& qp = p->a.qpi();
  const uint32_t msgs = std::max(1u, kReqPassPackets / shape.packets());
  const uint32_t packets = msgs * shape.packets();
  const double tsc_hz = double(rte_get_tsc_hz());
  for (auto _ : state) {
    if (!post_requests(*p, shape, msgs)) return state.SkipWithError("posting failed");
    const uint64_t sent_before = qp.counters.tx_packets;
    const uint64_t t0 = rte_rdtsc();
    while (requester_run(s, qp) != 0) s.flush_tx();
    s.flush_tx();
    const uint64_t t1 = rte_rdtsc();
    state.SetIterationTime(double(t1 - t0) / tsc_hz);
    if (qp.counters.tx_packets - sent_before != packets || s.ntx != 0)
      return state.SkipWithError("the requester left packets unsent");
    // B takes them, ACKs come back, A completes every request.
    if (!finish_exchange(*p, msgs, shape.op == Op::kSend ? msgs : 0, shape.len) || !p->healthy())
      return state.SkipWithError("a request did not complete with success");
  }
  report(state, packets, uint64_t(msgs) * shape.len);
}

// ---- completer -----------------------------------------------------------------------------

/// The responses B would send for A's WQEs [first, first + msgs), which A's requester has sent,
/// as mbufs in A's pool: the READ responses, or for WRITE one ACK per message (no coalescing:
/// the completer's most expensive case per message).
bool build_responses(Pair& p, const Shape& shape, uint32_t first, uint32_t msgs, std::vector<rte_mbuf*>* out) {
  out->clear();
  const ReqState& req = p.a.qpi().req;
  for (uint32_t k = 0; k < msgs; k++) {
    const SendWqe& w = req.sq[(first + k) & req.mask];
    const uint32_t n = shape.op == Op::kRead ? w.npkts : 1;
    for (uint32_t j = 0; j < n; j++) {
      wire::RocePacket pkt;
      std::memcpy(pkt.eth.src, p.b.port.mac().addr_bytes, 6);
      std::memcpy(pkt.eth.dst, p.a.port.mac().addr_bytes, 6);
      pkt.ip4.src = kIpB;
      pkt.ip4.dst = kIpA;
      pkt.udp.src_port = 0xC000;
      pkt.bth.dest_qp = p.a.qp->qpn();
      pkt.aeth.syndrome = kAckUnlimited;
      pkt.aeth.msn = first + k + 1;
      if (shape.op == Op::kRead) {
        const bool f = j == 0, l = j + 1 == n;
        pkt.bth.opcode = f && l ? wire::kRcReadResponseOnly
                         : f    ? wire::kRcReadResponseFirst
                         : l    ? wire::kRcReadResponseLast
                                : wire::kRcReadResponseMiddle;
        pkt.bth.psn = psn_add(w.first_psn, j);
        pkt.payload = p.b.buf.data() + j * kMtu;
        pkt.payload_len = std::min(kMtu, shape.len - j * kMtu);
        pkt.bth.pad = wire::pad_for(pkt.payload_len);
      } else {
        pkt.bth.opcode = wire::kRcAck;
        pkt.bth.psn = w.last_psn;
      }
      if (!append_frame(p.a.port.mempool(), pkt, out)) return false;
    }
  }
  return true;
}

void BM_completer(benchmark::State& state, Shape shape) {
  Pair* p = pair(state);
  if (!p) return;
  Shard& s = p->a.shard();
  Qp::Impl& qp = p->a.qpi();
  // READs: as many as the requester may have outstanding at once.
  const uint32_t msgs = std::min<uint32_t>(std::max(1u, kReqPassPackets / shape.packets()),
                                           shape.op == Op::kRead ? qp.attr.max_rd_atomic : kReqPassPackets);
  const uint32_t packets = shape.op == Op::kRead ? msgs * shape.packets() : msgs;
  std::vector<rte_mbuf*> frames;
  const double tsc_hz = double(rte_get_tsc_hz());
  for (auto _ : state) {
    // A sends the requests (B never sees them), B's answers are built, A's completer runs.
    const uint32_t first = qp.req.tail;
    if (!post_requests(*p, shape, msgs)) return state.SkipWithError("posting failed");
    while (requester_run(s, qp) != 0) s.flush_tx();
    s.flush_tx();
    drain_port(p->b.port);
    if (qp.req.next - first != msgs) return state.SkipWithError("the requester left requests unsent");
    if (!build_responses(*p, shape, first, msgs, &frames)) return state.SkipWithError("building the frames failed");
    const uint64_t t0 = rte_rdtsc();
    for (size_t i = 0; i < frames.size();) {
      for (const size_t end = std::min(frames.size(), i + kRxBurst); i < end; i++) s.process_frame(frames[i]);
      s.flush_completions();
      s.flush_tx();
    }
    const uint64_t t1 = rte_rdtsc();
    state.SetIterationTime(double(t1 - t0) / tsc_hz);
    if (!take_completions(p->a.scq, msgs, shape.len) || !p->healthy() || qp.req.head != qp.req.tail)
      return state.SkipWithError("a request did not complete with success");
  }
  if (shape.op == Op::kRead && std::memcmp(p->a.buf.data(), p->b.buf.data(), shape.len) != 0)
    state.SkipWithError("the READ data did not land");
  report(state, packets, uint64_t(msgs) * shape.len);
}

// ---- end to end ----------------------------------------------------------------------------

void BM_stream(benchmark::State& state, Shape shape) {
  Pair* p = pair(state);
  if (!p) return;
  const uint32_t msgs = std::max(1u, kReqPassPackets / shape.packets());
  for (auto _ : state) {
    if (!post_requests(*p, shape, msgs) ||
        !finish_exchange(*p, msgs, shape.op == Op::kSend ? msgs : 0, shape.len))
      return state.SkipWithError("a request did not complete with success");
  }
  report(state, uint64_t(msgs) * shape.packets(), uint64_t(msgs) * shape.len);
}

// ---- ping-pong -----------------------------------------------------------------------------

/// Runs `dev` until `cq` holds a completion, which must be a success of `len` bytes. False on a
/// failure or after about 5 s.
bool progress_until(Device& dev, Cq* cq, uint32_t len) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Completion c;
  for (unsigned pass = 1;; pass++) {
    dev.progress();
    if (cq->poll(&c, 1) == 1) return c.status == WcStatus::kSuccess && c.byte_len == len;
    if (pass % 1024 == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

/// send_lat's exchange with both ends on one thread, each driving its device as run to
/// completion does (a post runs Qp::send_now, a look at the CQ runs Device::progress).
struct PingPong {
  Node* ends[2];
  SendWr wr[2]{};
  RecvWr rwr[2]{};
  uint32_t len;
  uint64_t sends_done = 0;
  bool send_failed = false;

  PingPong(Pair& p, uint32_t n) : ends{&p.a, &p.b}, len(n) {
    for (int i = 0; i < 2; i++) {
      wr[i].opcode = WrOpcode::kSend;
      wr[i].flags = kWrSignaled;
      wr[i].num_sge = 1;
      wr[i].sge[0] = {reinterpret_cast<uint64_t>(ends[i]->buf.data()), len, ends[i]->mr.lkey};
      rwr[i].num_sge = 1;
      rwr[i].sge[0] = {reinterpret_cast<uint64_t>(ends[i]->buf.data() + kBufSize / 2), len, ends[i]->mr.lkey};
    }
  }

  /// The send completions the ACKs brought, as send_lat reaps them.
  void reap_sends() {
    Completion c[16];
    for (Node* n : ends)
      for (unsigned k; (k = n->scq->poll(c, 16)) != 0; sends_done += k)
        for (unsigned i = 0; i < k; i++) send_failed |= c[i].status != WcStatus::kSuccess;
  }

  /// One round: A sends, B takes it and answers, A takes the answer. nullptr, or what failed.
  /// Out of line, so that callgrind can count it alone (--toggle-collect='*PingPong::round*').
  [[gnu::noinline]] const char* round() {
    for (int i = 0; i < 2; i++)  // each end's receive for this round, as send_lat posts its next one
      if (!ends[i]->qp->post_recv(rwr[i])) return "post_recv refused";
    for (int from = 0; from < 2; from++) {
      Node& me = *ends[from];
      Node& peer = *ends[1 - from];
      if (!me.qp->post_send(wr[from])) return "post_send refused";
      me.qp->send_now();
      if (!progress_until(peer.dev, peer.rcq, len)) return "a message did not arrive";
    }
    reap_sends();
    return nullptr;
  }

  /// After `rounds` rounds: every send completes once the last ACKs are in.
  bool sends_complete(uint64_t rounds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (sends_done < 2 * rounds && !send_failed && std::chrono::steady_clock::now() < deadline) {
      for (Node* n : ends) n->dev.progress();
      reap_sends();
    }
    return sends_done == 2 * rounds && !send_failed;
  }
};

// send_lat's round trip, both ends on this thread. One thread has no line crossing between
// cores, so its time per round trip is the software's share of one (R3's excess over raw_lat),
// ACKs and send completions included.
void BM_pingpong(benchmark::State& state, Shape shape) {
  Pair* p = pair(state);
  if (!p) return;
  PingPong pp(*p, shape.len);
  for (auto _ : state)
    if (const char* failed = pp.round()) return state.SkipWithError(failed);
  if (!pp.sends_complete(uint64_t(state.iterations())) || !p->healthy())
    return state.SkipWithError("a send did not complete with success");
  report(state, 2, 2 * uint64_t(shape.len));
}

// ---- the remote-invalidation cycle ---------------------------------------------------------

/// ndperf sendinv's cycle with both ends on this thread, kWindows cycles in flight as ndperf
/// keeps them: A binds a window over a block and sends its key and address; B writes the block
/// (kBlock bytes, several packets) into the window and answers with SEND WITH INVALIDATE; A
/// takes the window's invalidation and the answer. Binds, requests, WRITEs and answers go
/// unsignaled, as ndperf's do. Its time per cycle is the software's share of R4's cycle, the
/// application's clearing and checking of the block excepted.
struct InvCycle {
  static constexpr uint32_t kWindows = 16;
  static constexpr uint32_t kBlock = 4096;
  static constexpr uint64_t kBlocksAt = 0;          ///< A's blocks, one per window
  static constexpr uint64_t kSlotsAt = kBufSize / 2;  ///< receive slots, one per window, both ends
  static constexpr uint32_t kSlot = 64;
  static constexpr uint64_t kSourceAt = kBufSize / 4;  ///< B's bytes to write

  struct Request {
    uint32_t rkey;
    uint32_t window;
    uint64_t addr;
  };

  Node& a;
  Node& b;
  uint32_t handle[kWindows]{};
  uint32_t key[kWindows]{};

  explicit InvCycle(Pair& p) : a(p.a), b(p.b) {
    for (uint32_t w = 0; w < kWindows; w++) handle[w] = key[w] = a.dev.alloc_mw(a.pd, w);
    for (uint32_t i = 0; i < kBlock; i++) b.buf[kSourceAt + i] = uint8_t(i * 13 + 5);
  }
  ~InvCycle() {
    for (uint32_t w = 0; w < kWindows; w++)
      if (handle[w]) a.dev.dealloc_mw(key[w]);
  }
  bool ready() const { return std::all_of(handle, handle + kWindows, [](uint32_t h) { return h != 0; }); }

  static RecvWr slot_recv(Node& n, uint32_t w) {
    RecvWr r{};
    r.wr_id = w;
    r.num_sge = 1;
    r.sge[0] = {reinterpret_cast<uint64_t>(n.buf.data() + kSlotsAt + w * kSlot), kSlot, n.mr.lkey};
    return r;
  }

  /// Runs both devices, as each end's thread would, until `cq` holds `want` completions, all
  /// successes; they are left in `out`. A message of several packets leaves over several
  /// iterations of its sender.
  bool take(Cq* cq, uint32_t want, Completion* out) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (uint32_t got = 0, pass = 1; got < want; pass++) {
      a.dev.progress();
      b.dev.progress();
      const unsigned k = cq->poll(out + got, want - got);
      for (unsigned i = 0; i < k; i++)
        if (out[got + i].status != WcStatus::kSuccess) return false;
      got += k;
      if (pass % 1024 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
  }

  /// kWindows cycles. nullptr, or what failed.
  [[gnu::noinline]] const char* round() {
    for (uint32_t w = 0; w < kWindows; w++) {
      key[w] = (key[w] & ~0xffu) | ((key[w] + 1) & 0xffu);  // the next key byte, as ibv_inc_rkey
      SendWr bind{};
      bind.opcode = WrOpcode::kBindMw;
      bind.flags = kWrWindowHandle;
      const uint64_t block = reinterpret_cast<uint64_t>(a.buf.data() + kBlocksAt + w * kBlock);
      bind.bind = {handle[w], a.mr.lkey, block, kBlock, kAccessRemoteWrite, uint8_t(key[w])};
      SendWr req{};
      req.opcode = WrOpcode::kSend;
      req.flags = kWrInline;
      const Request r{key[w], w, block};
      std::memcpy(req.inline_data, &r, sizeof r);
      req.inline_len = sizeof r;
      if (!a.qp->post_recv(slot_recv(a, w)) || !b.qp->post_recv(slot_recv(b, w))) return "post_recv refused";
      if (!a.qp->post_send(bind) || !a.qp->post_send(req)) return "A's bind or request refused";
    }
    a.qp->send_now();
    Completion c[2 * kWindows];
    if (!take(b.rcq, kWindows, c)) return "a request did not arrive";
    for (uint32_t i = 0; i < kWindows; i++) {
      Request r;
      std::memcpy(&r, b.buf.data() + kSlotsAt + c[i].wr_id * kSlot, sizeof r);
      SendWr wr{};
      wr.opcode = WrOpcode::kWrite;
      wr.num_sge = 1;
      wr.sge[0] = {reinterpret_cast<uint64_t>(b.buf.data() + kSourceAt), kBlock, b.mr.lkey};
      wr.remote_addr = r.addr;
      wr.rkey = r.rkey;
      SendWr inv{};
      inv.opcode = WrOpcode::kSendInv;
      inv.flags = kWrInline;
      std::memcpy(inv.inline_data, &r.window, sizeof r.window);
      inv.inline_len = sizeof r.window;
      inv.invalidate_rkey = r.rkey;
      if (!b.qp->post_send(wr) || !b.qp->post_send(inv)) return "B's WRITE or answer refused";
    }
    b.qp->send_now();
    if (!take(a.rcq, 2 * kWindows, c)) return "an invalidation or answer did not arrive";
    uint32_t invalidated = 0, answered = 0;
    for (const Completion& x : c) {
      invalidated += x.opcode == WcOpcode::kRemoteInvalidate && x.imm_or_inv == key[x.wr_id % kWindows];
      answered += x.opcode == WcOpcode::kRecv && (x.flags & kWcWithInv) != 0;
    }
    if (invalidated != kWindows || answered != kWindows) return "not every window was invalidated and answered";
    return nullptr;
  }

  /// Every block holds B's bytes, and the unsignaled requests left both QPs as they were.
  bool landed(Pair& p) {
    for (uint32_t w = 0; w < kWindows; w++)
      if (std::memcmp(a.buf.data() + kBlocksAt + w * kBlock, b.buf.data() + kSourceAt, kBlock) != 0) return false;
    return p.healthy();
  }
};

void BM_sendinv(benchmark::State& state) {
  Pair* p = pair(state);
  if (!p) return;
  InvCycle cyc(*p);
  if (!cyc.ready()) return state.SkipWithError("allocating the windows failed");
  std::memset(p->a.buf.data() + InvCycle::kBlocksAt, 0, InvCycle::kWindows * InvCycle::kBlock);
  for (auto _ : state)
    if (const char* failed = cyc.round()) return state.SkipWithError(failed);
  if (!cyc.landed(*p)) return state.SkipWithError("a block did not land, or a QP left RTS");
  state.SetItemsProcessed(int64_t(state.iterations() * InvCycle::kWindows));
  state.counters["per_cycle"] = benchmark::Counter(double(InvCycle::kWindows),
                                                   benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
}

// ---- one engine iteration with nothing to do -------------------------------------------------

// What run to completion pays for every look at a CQ that finds the engine idle: Device::progress
// on a connected QP with nothing posted and nothing arriving (taking the drive, the RCU reader
// online and offline, the shard's poll loop). A client waiting for ACKs pays it several times per
// burst of messages.
void BM_idle_iteration(benchmark::State& state) {
  Pair* p = pair(state);
  if (!p) return;
  for (auto _ : state) benchmark::DoNotOptimize(p->a.dev.progress());
  if (p->a.dev.progress() != 0) state.SkipWithError("the engine found work where there was none");
}

bool register_all() {
  // Single-packet messages small and at a full MTU, and a 32-packet message (FIRST, MIDDLEs,
  // LAST with one ACK) where the per-message costs are spread thin.
  const Shape kRequests[] = {{Op::kSend, 64},  {Op::kSend, kMtu},  {Op::kSend, 32 * kMtu},
                             {Op::kWrite, 64}, {Op::kWrite, kMtu}, {Op::kWrite, 32 * kMtu}};
  const Shape kReads[] = {{Op::kRead, 64}, {Op::kRead, kMtu}, {Op::kRead, 32 * kMtu}};
  // Full-MTU packets as a zero-copy sender's chains (net_ring's large frames): the pieces'
  // decode and the chain's free.
  const Shape kChained[] = {{Op::kSend, 32 * kMtu, true}, {Op::kWrite, 32 * kMtu, true}};
  auto name = [](const char* what, const Shape& sh) {
    return std::string(what) + "/" + sh.name() + "/" + std::to_string(sh.len) + (sh.chained ? "/chained" : "");
  };
  for (const Shape& sh : kRequests)
    benchmark::RegisterBenchmark(name("BM_responder", sh).c_str(), BM_responder, sh)->UseManualTime()->MinTime(kMinTime);
  for (const Shape& sh : kChained)
    benchmark::RegisterBenchmark(name("BM_responder", sh).c_str(), BM_responder, sh)->UseManualTime()->MinTime(kMinTime);
  for (const Shape& sh : kReads)
    benchmark::RegisterBenchmark(name("BM_responder", sh).c_str(), BM_responder, sh)->UseManualTime()->MinTime(kMinTime);
  for (const Shape& sh : kRequests)
    benchmark::RegisterBenchmark(name("BM_requester", sh).c_str(), BM_requester, sh)->UseManualTime()->MinTime(kMinTime);
  // The completer's work for an ACK is the same whether it acknowledges a SEND or a WRITE; a
  // SEND here would leave B a receive per message that nothing consumes.
  benchmark::RegisterBenchmark(name("BM_completer", kRequests[3]).c_str(), BM_completer, kRequests[3])
      ->UseManualTime()
      ->MinTime(kMinTime);
  for (const Shape& sh : kReads)
    benchmark::RegisterBenchmark(name("BM_completer", sh).c_str(), BM_completer, sh)->UseManualTime()->MinTime(kMinTime);
  for (const Shape& sh : kRequests)
    benchmark::RegisterBenchmark(name("BM_stream", sh).c_str(), BM_stream, sh)->UseRealTime()->MinTime(kMinTime);
  benchmark::RegisterBenchmark("BM_pingpong/SEND/8", BM_pingpong, Shape{Op::kSend, 8})->MinTime(kMinTime);
  benchmark::RegisterBenchmark("BM_sendinv/4096", BM_sendinv)->MinTime(kMinTime);
  benchmark::RegisterBenchmark("BM_idle_iteration", BM_idle_iteration)->MinTime(kMinTime);
  return true;
}

// main() (bench_main.cc) runs after static initialisation, so these are registered by then.
const bool g_registered = register_all();

}  // namespace
}  // namespace ndnic::nic
