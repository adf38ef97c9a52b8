// The rings between the application and the NIC, per entry:
//
// - nic level, one thread, both ends: Qp::post_send / post_send_burst / post_recv and the
//   dequeue the owning lcore makes (the requester's FETCH, the responder's take of a receive);
//   a completion pushed by the lcore and taken by Cq::poll. With both ends on one core this is
//   the instruction cost of an entry; the cache-line transfer between cores is in the ND cases.
// - ND level, the application's side of a running device: Send (one by one, and inside
//   StartRequestBatch .. SubmitRequestBatch), Receive and GetResults, with the engine on
//   another core. A Send needs a connected endpoint and completions coming back (an endpoint
//   takes only so many outstanding requests), so these run against a peer: two devices over a
//   net_ring pair, both polled by one worker lcore; only the application's calls are timed.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "ndnic/nd.h"
#include "nd_frontend/testing.h"
#include "nic/cq_impl.h"
#include "nic/engine.h"
#include "ndnic/nic.h"
#include "nic/qp_impl.h"
#include "nic/wr_ring.h"
#include "ndnic/port.h"
#include "tests/fixtures/node_pair.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kRingEntries = 1024;   ///< per QP ring and CQ: room for the largest batch
constexpr uint32_t kBufSize = 1 << 16;
constexpr uint32_t kMsgLen = 64;          ///< bytes each request names
constexpr double kMinTime = 0.1;          ///< nanosecond operations: still millions of calls

// ---- nic level -----------------------------------------------------------------------------

/// One device on one port of a net_ring pair, a registered buffer, CQs and a QP in INIT: posts
/// are accepted, and no one runs the engine, so the benchmark itself is the lcore's side.
struct Local : ndnic::testing::VerbsEnd {
  glue::Port peer;  ///< the pair's other port: nothing runs there
  std::string error;

  Local() {
    ndnic::testing::PairSpec spec;
    spec.name = "br_local";
    spec.ipv4 = {0xC6125001, 0xC6125002};  // 198.18.80.1, .2
    error = ndnic::testing::open_pair(spec, {&port, &peer}, {&dev, nullptr});
    if (!error.empty()) return;
    if (!open(kBufSize, kRingEntries, kAccessLocalWrite)) {
      error = "device setup failed";
      return;
    }
    QpCaps caps;
    caps.send_cq = scq;
    caps.recv_cq = rcq;
    caps.pd = pd;
    caps.max_send_wr = kRingEntries;
    caps.max_recv_wr = kRingEntries;
    qp = dev.create_qp(caps);
    if (!qp || !qp->modify(QpState::kInit, {})) error = "QP setup failed";
  }
  ~Local() { ndnic::testing::close_pair({&port, &peer}, {&dev, nullptr}); }

  SendWr send_wr(uint64_t id) const {
    SendWr wr{};
    wr.wr_id = id;
    wr.opcode = WrOpcode::kSend;
    wr.flags = kWrSignaled;
    wr.num_sge = 1;
    wr.sge[0] = {reinterpret_cast<uint64_t>(buf.data()), kMsgLen, mr.lkey};
    return wr;
  }
};

Local* local(benchmark::State& state) {
  static Local l;  // built on first use, after EAL; destroyed before EAL (see bench_main.cc)
  if (!l.error.empty()) {
    state.SkipWithError(l.error.c_str());
    return nullptr;
  }
  return &l;
}

/// Items are ring entries; per_entry is the time of one (the Time column is per batch).
void per_entry(benchmark::State& state, int64_t n) {
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["per_entry"] = benchmark::Counter(
      double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// post_send of n requests one by one, then the requester's FETCH takes them off one by one.
void BM_send_ring(benchmark::State& state) {
  Local* l = local(state);
  if (!l) return;
  const unsigned n = unsigned(state.range(0));
  SpscRing<SendWr>& ring = l->qp->impl()->send_ring;
  const SendWr wr = l->send_wr(7);
  SendWr out;
  for (auto _ : state) {
    for (unsigned i = 0; i < n; i++)
      if (!l->qp->post_send(wr)) return state.SkipWithError("post_send refused");
    for (unsigned i = 0; i < n; i++)
      if (!wr_dequeue(ring, &out, false) || out.wr_id != wr.wr_id)
        return state.SkipWithError("the ring did not give back what was posted");
  }
  per_entry(state, n);
}

// post_send_burst: n requests, built elsewhere and copied in, as one ring operation (ND's
// batches build theirs in the ring's slots instead: Qp::open_send_slots).
void BM_send_ring_burst(benchmark::State& state) {
  Local* l = local(state);
  if (!l) return;
  const unsigned n = unsigned(state.range(0));
  SpscRing<SendWr>& ring = l->qp->impl()->send_ring;
  std::vector<SendWr> wrs(n, l->send_wr(9));
  SendWr out;
  for (auto _ : state) {
    if (!l->qp->post_send_burst(wrs.data(), n)) return state.SkipWithError("post_send_burst refused");
    for (unsigned i = 0; i < n; i++)
      if (!wr_dequeue(ring, &out, false) || out.wr_id != 9)
        return state.SkipWithError("the ring did not give back what was posted");
  }
  per_entry(state, n);
}

// post_recv, then the responder's take of a receive when a SEND arrives.
void BM_recv_ring(benchmark::State& state) {
  Local* l = local(state);
  if (!l) return;
  const unsigned n = unsigned(state.range(0));
  SpscRing<RecvWr>& ring = l->qp->impl()->recv_ring;
  RecvWr wr{};
  wr.wr_id = 11;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(l->buf.data()), kMsgLen, l->mr.lkey};
  Qp::Impl& qp = *l->qp->impl();
  for (auto _ : state) {
    for (unsigned i = 0; i < n; i++)
      if (!l->qp->post_recv(wr)) return state.SkipWithError("post_recv refused");
    for (unsigned i = 0; i < n; i++) {  // read where it lies, its slot given back when done
      const RecvWr* w = next_recv(qp);
      if (!w || w->wr_id != wr.wr_id) return state.SkipWithError("the ring did not give back what was posted");
      end_recv(qp);
    }
  }
  if (ring.ready() != 0) state.SkipWithError("receives left in the ring");
  per_entry(state, n);
}

// A completion pushed by the lcore (with the arm check every push makes), taken by Cq::poll in
// bursts of up to 16 as an application's poll loop would.
void BM_cq_push_poll(benchmark::State& state) {
  Local* l = local(state);
  if (!l) return;
  constexpr unsigned kPollBurst = 16;
  const unsigned n = unsigned(state.range(0));
  Cq::Impl* cq = l->scq->impl();
  Completion c{};
  c.wr_id = 13;
  c.byte_len = kMsgLen;
  c.opcode = WcOpcode::kSend;
  Completion out[kPollBurst];
  for (auto _ : state) {
    for (unsigned i = 0; i < n; i++) cq->push(c);
    for (unsigned got = 0; got < n;) {
      const unsigned k = l->scq->poll(out, std::min(kPollBurst, n - got));
      if (k == 0 || out[0].wr_id != c.wr_id) return state.SkipWithError("the CQ lost a completion");
      got += k;
    }
  }
  if (cq->overflows.load() != 0) state.SkipWithError("the CQ overflowed");
  per_entry(state, n);
}

// The send and receive rings across cores, as they run with worker lcores: this thread posts n
// requests per ring operation (sends built in the ring's slots, as an ND batch does with
// open_send_slots .. commit_send_slots; receives copied in by post_recv_burst, as an ND batch
// of receives is), while a worker lcore takes them off as the requester's FETCH (take_burst,
// each copied into an array of its own) and the responder's next_recv do (each read in its
// slot, the slot given back once read: end_recv). Per entry: the
// time until the lcore has taken kCrossEntries. What it measures is the cache lines each request
// moves from one core to the other.
constexpr uint32_t kCrossEntries = 1u << 14;

template <class Wr>
struct CrossTaker {
  SpscRing<Wr>* ring;
  std::atomic<bool> running{true};
  std::atomic<uint64_t> taken{0};
  uint64_t lengths = 0;  ///< the requests' lengths summed: what was taken was read

  static int run(void* arg) {
    auto* c = static_cast<CrossTaker*>(arg);
    std::vector<Wr> kept(kRingEntries);
    uint32_t tail = 0, known = 0;
    uint64_t taken = 0;
    while (c->running.load(std::memory_order_relaxed)) {
      uint32_t n = 0;
      if constexpr (std::is_same_v<Wr, SendWr>) {
        n = c->ring->take_burst(kRingEntries, [&](const Wr& w) {
          Wr& to = kept[tail++ & (kRingEntries - 1)];
          wr_copy(&to, w, false);
          c->lengths += to.sge[0].length;
        });
      } else {  // as next_recv and end_recv do
        for (const Wr* w; (w = c->ring->next_in_place(known)) != nullptr; n++) {
          c->lengths += w->sge[0].length;
          c->ring->release_in_place(known);
        }
      }
      if (n != 0) c->taken.store(taken += n, std::memory_order_release);
    }
    return 0;
  }
};

/// Posts one batch of n (false: refused).
bool post_batch(Local& l, const SendWr& wr, unsigned n, uint64_t first) {
  while (l.qp->open_send_slots(n) < n) {
  }
  for (unsigned i = 0; i < n; i++) {
    SendWr* slot = l.qp->send_slot(i);  // built field by field, as NdEndpoint::post does
    std::memcpy(static_cast<void*>(slot), &wr, offsetof(SendWr, sge));
    slot->wr_id = first + i;
    slot->sge[0] = wr.sge[0];
  }
  return l.qp->commit_send_slots(n);
}

bool post_batch(Local& l, std::vector<RecvWr>& wrs, unsigned n, uint64_t first) {
  for (unsigned i = 0; i < n; i++) wrs[i].wr_id = first + i;
  while (l.qp->impl()->recv_ring.free_slots(n) < n) {
  }
  return l.qp->post_recv_burst(wrs.data(), n);
}

template <class Wr>
void BM_ring_cross(benchmark::State& state) {
  Local* l = local(state);
  if (!l) return;
  const unsigned lcore = rte_get_next_lcore(-1, 1, 0);
  if (lcore >= RTE_MAX_LCORE) return state.SkipWithError("no worker lcore to take the requests");
  const unsigned n = unsigned(state.range(0));
  CrossTaker<Wr> taker;
  if constexpr (std::is_same_v<Wr, SendWr>)
    taker.ring = &l->qp->impl()->send_ring;
  else
    taker.ring = &l->qp->impl()->recv_ring;
  if (rte_eal_remote_launch(CrossTaker<Wr>::run, &taker, lcore) != 0) return state.SkipWithError("launch failed");
  const SendWr send = l->send_wr(5);
  RecvWr recv{};
  recv.num_sge = 1;
  recv.sge[0] = send.sge[0];
  std::vector<RecvWr> recvs(n, recv);
  uint64_t posted = 0;
  bool ok = true;
  for (auto _ : state) {
    for (uint32_t done = 0; done < kCrossEntries && ok; done += n) {
      if constexpr (std::is_same_v<Wr, SendWr>)
        ok = post_batch(*l, send, n, posted);
      else
        ok = post_batch(*l, recvs, n, posted);
      posted += n;
    }
    while (ok && taker.taken.load(std::memory_order_acquire) != posted) {
    }
  }
  taker.running = false;
  rte_eal_wait_lcore(lcore);
  if (!ok) return state.SkipWithError("the ring refused a batch");
  if (taker.lengths != posted * kMsgLen) return state.SkipWithError("the lcore took other requests than were posted");
  per_entry(state, kCrossEntries);
}

void batches(benchmark::internal::Benchmark* b) {
  b->ArgName("batch")->Arg(1)->Arg(32)->MinTime(kMinTime);
}

BENCHMARK(BM_send_ring)->Apply(batches);
BENCHMARK(BM_send_ring_burst)->Apply(batches);
BENCHMARK(BM_recv_ring)->Apply(batches);
BENCHMARK(BM_cq_push_poll)->Apply(batches);
BENCHMARK(BM_ring_cross<SendWr>)->Name("BM_send_ring_cross")->ArgName("batch")->Arg(1)->Arg(4)->Arg(32)->MinTime(kMinTime)->UseRealTime();
BENCHMARK(BM_ring_cross<RecvWr>)->Name("BM_recv_ring_cross")->ArgName("batch")->Arg(1)->Arg(4)->Arg(32)->MinTime(kMinTime)->UseRealTime();

// ---- ND level ------------------------------------------------------------------------------

constexpr SIZE_T kNdDepth = 256;          ///< endpoint queue depths
constexpr SIZE_T kNdCqEntries = 1024;
// Each iteration waits for its messages to travel (microseconds) while only the posting
// (nanoseconds) is timed: a fixed number of iterations keeps the wall time bounded.
constexpr int64_t kNdIterations = 4000;

/// One ND side: port, device in poll mode, and its adapter, CQ, connector, endpoint and
/// registered buffer (NdEnd).
struct NdSide : ndnic::testing::NdEnd {
  glue::Port port;
  Device dev;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kBufSize);
  bool registered = false;
};

/// Two ND endpoints connected over a net_ring pair. The devices have no lcores of their own:
/// everything that changes their state (QP creation, connection) happens here before the
/// poller starts, and the poller (one worker lcore running both) only runs during a benchmark.
struct NdPair {
  NdSide a, b;
  unsigned lcore = RTE_MAX_LCORE;
  std::atomic<bool> polling{false};
  std::string error;

  NdPair() {
    lcore = rte_get_next_lcore(-1, 1, 0);  // the first worker lcore, if any (see start())
    ndnic::testing::PairSpec spec;
    spec.name = "br_nd";
    spec.ipv4 = {0xC6125101, 0xC6125102};  // 198.18.81.1, .2
    error = ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev});
    if (!error.empty()) return;
    ndnic::testing::NdSpec nd;
    nd.cq_entries = kNdCqEntries;
    nd.depth = kNdDepth;
    nd.sge = nd.read_limit = 1;
    for (NdSide* s : {&a, &b}) {
      s->registered = nd::register_adapter(&s->dev, &s->port);
      if (!s->registered) {
        error = "register_adapter failed";
        return;
      }
      error = ndnic::testing::open_nd(s->port, s->buf, nd, s);
      if (!error.empty()) return;
    }
    if (nd::connect_endpoints_for_test(a.ep, b.ep) != ND_SUCCESS) error = "connecting the endpoints failed";
  }

  ~NdPair() {
    stop();
    for (NdSide* s : {&a, &b}) {
      ndnic::testing::release_nd(*s);
      if (s->registered) nd::unregister_adapter(&s->port);
    }
    ndnic::testing::close_pair({&a.port, &b.port}, {&a.dev, &b.dev});
  }

  static int poll_both(void* arg) {
    auto* p = static_cast<NdPair*>(arg);
    while (p->polling.load(std::memory_order_relaxed)) {
      p->a.dev.poll();
      p->b.dev.poll();
    }
    return 0;
  }
  bool start() {
    if (lcore >= RTE_MAX_LCORE) return false;  // e.g. run with -l 0
    polling = true;
    if (rte_eal_remote_launch(poll_both, this, lcore) == 0) return true;
    polling = false;
    return false;
  }
  void stop() {
    if (polling.exchange(false)) rte_eal_wait_lcore(lcore);
  }
};

NdPair* nd_pair(benchmark::State& state) {
  static NdPair p;
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return nullptr;
  }
  return &p;
}

/// The poller runs for the lifetime of this guard, so no return path leaves it running.
struct Polling {
  NdPair* p;
  bool ok;
  explicit Polling(NdPair* pair) : p(pair), ok(pair->start()) {}
  ~Polling() { p->stop(); }
};

/// Takes exactly n results from `cq` (waiting for them) and checks they all succeeded.
bool collect(INDCompletionQueue* cq, SIZE_T n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  ND_RESULT* r[16];
  for (SIZE_T got = 0; got < n;) {
    const SIZE_T k = cq->GetResults(r, std::min<SIZE_T>(16, n - got));
    for (SIZE_T i = 0; i < k; i++)
      if (r[i]->Status != ND_SUCCESS || r[i]->BytesTransferred != kMsgLen) return false;
    got += k;
    if (k == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

enum class NdTimed { kSend, kSendBatched, kReceive, kGetResults };

/// One iteration: B posts n receives, A posts n sends, both collect their n results. Only the
/// part named by `timed` is on the clock (manual time); the rest waits for the wire.
template <NdTimed T>
void BM_nd(benchmark::State& state) {
  NdPair* p = nd_pair(state);
  if (!p) return;
  const Polling polling(p);
  if (!polling.ok) return state.SkipWithError("no free worker lcore for the poller");
  const SIZE_T n = SIZE_T(state.range(0));
  std::vector<ND_RESULT> sends(n), recvs(n);
  const ND_SGE out{p->a.buf.data(), kMsgLen, p->a.mr};
  const ND_SGE in{p->b.buf.data(), kMsgLen, p->b.mr};
  // The TSC: a clock read costs a few nanoseconds, which matters when one Send is timed.
  const double tsc_hz = double(rte_get_tsc_hz());
  uint64_t t0 = 0, t1 = 0;
  for (auto _ : state) {
    if (T == NdTimed::kReceive) t0 = rte_rdtsc();
    for (SIZE_T i = 0; i < n; i++)
      if (p->b.ep->Receive(&recvs[i], &in, 1) != ND_SUCCESS) return state.SkipWithError("Receive refused");
    if (T == NdTimed::kReceive) t1 = rte_rdtsc();
    if (T == NdTimed::kSend || T == NdTimed::kSendBatched) t0 = rte_rdtsc();
    if (T == NdTimed::kSendBatched) p->a.ep->StartRequestBatch();
    for (SIZE_T i = 0; i < n; i++)
      if (const HRESULT hr = p->a.ep->Send(&sends[i], &out, 1, 0); hr != ND_SUCCESS)
        return state.SkipWithError(("Send refused: " + std::to_string(hr)).c_str());
    if (T == NdTimed::kSendBatched) p->a.ep->SubmitRequestBatch();
    if (T == NdTimed::kSend || T == NdTimed::kSendBatched) t1 = rte_rdtsc();
    // A's sends complete on B's ACKs, which B sends after it queued the receive completions:
    // once A has its n results, B's n are all waiting, and draining them is pure GetResults.
    if (!collect(p->a.cq, n)) return state.SkipWithError("a send did not complete with success");
    if (T == NdTimed::kGetResults) t0 = rte_rdtsc();
    if (!collect(p->b.cq, n)) return state.SkipWithError("a receive did not complete with success");
    if (T == NdTimed::kGetResults) t1 = rte_rdtsc();
    state.SetIterationTime(double(t1 - t0) / tsc_hz);
  }
  per_entry(state, int64_t(n));
}

/// Takes results from `cq` until `want` is among them (others must be successes too).
bool wait_for(INDCompletionQueue* cq, const ND_RESULT* want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  ND_RESULT* r[4];
  for (;;) {
    const SIZE_T k = cq->GetResults(r, 4);
    bool found = false;
    for (SIZE_T i = 0; i < k; i++) {
      if (r[i]->Status != ND_SUCCESS) return false;
      found |= r[i] == want;
    }
    if (found) return true;
    if (k == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

// send_lat's round trip through the rings alone: A sends, B's application takes the receive and
// answers, A's takes that, with both engines on the worker lcore and both applications on this
// thread. Each half crosses the send ring to the lcore and the CQ back: the two crossings a
// round trip with worker lcores adds to the wire's (R3 with --progress=workers).
void BM_nd_pingpong(benchmark::State& state) {
  NdPair* p = nd_pair(state);
  if (!p) return;
  const Polling polling(p);
  if (!polling.ok) return state.SkipWithError("no free worker lcore for the poller");
  ND_RESULT send[2], recv[2];
  NdSide* side[2] = {&p->a, &p->b};
  for (auto _ : state) {
    for (int i = 0; i < 2; i++) {
      const ND_SGE in{side[i]->buf.data() + kBufSize / 2, kMsgLen, side[i]->mr};
      if (side[i]->ep->Receive(&recv[i], &in, 1) != ND_SUCCESS) return state.SkipWithError("Receive refused");
    }
    for (int from = 0; from < 2; from++) {
      const ND_SGE out{side[from]->buf.data(), kMsgLen, side[from]->mr};
      if (side[from]->ep->Send(&send[from], &out, 1, 0) != ND_SUCCESS) return state.SkipWithError("Send refused");
      if (!wait_for(side[1 - from]->cq, &recv[1 - from])) return state.SkipWithError("the message did not arrive");
    }
  }
  // The last sends' completions, so that the next case starts from an empty CQ.
  for (NdSide* s : side) {
    ND_RESULT* r[4];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < deadline) s->cq->GetResults(r, 4);
  }
  state.SetItemsProcessed(state.iterations());
}

// A poll that finds nothing: what an application's spin loop pays between completions.
void BM_nd_get_results_empty(benchmark::State& state) {
  NdPair* p = nd_pair(state);
  if (!p) return;
  ND_RESULT* r[16];  // no poller: nothing is in flight, the CQ stays empty
  for (auto _ : state)
    if (p->a.cq->GetResults(r, 16) != 0) return state.SkipWithError("an unexpected result");
  state.SetItemsProcessed(state.iterations());
}

void nd_batches(benchmark::internal::Benchmark* b) {
  b->ArgName("batch")->Arg(1)->Arg(32)->UseManualTime()->Iterations(kNdIterations);
}

// The cases share one endpoint pair; the batched one runs last, so that should it leave the
// endpoint's accounting wrong, the others have been measured already.
BENCHMARK(BM_nd<NdTimed::kSend>)->Name("BM_nd_send")->Apply(nd_batches);
BENCHMARK(BM_nd<NdTimed::kReceive>)->Name("BM_nd_receive")->Apply(nd_batches);
BENCHMARK(BM_nd<NdTimed::kGetResults>)->Name("BM_nd_get_results")->Apply(nd_batches);
BENCHMARK(BM_nd_get_results_empty)->MinTime(kMinTime);
BENCHMARK(BM_nd_pingpong)->MinTime(kMinTime)->UseRealTime();
BENCHMARK(BM_nd<NdTimed::kSendBatched>)->Name("BM_nd_send_batched")->Apply(nd_batches);

}  // namespace
}  // namespace ndnic::nic
