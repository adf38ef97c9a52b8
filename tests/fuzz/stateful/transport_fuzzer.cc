// Stateful libFuzzer target for the RC transport: it plays the peer of an ndnic device and
// drives its responder and completer through sequences of well-formed and malformed packets
// (any opcode, PSN, key, length, MSN, syndrome, damage) while it registers, binds, invalidates
// and deregisters the regions and windows those packets name, posts work requests, polls, fires
// timers and resets or re-creates QPs. The input is a program of steps (program.h). After every
// engine iteration it checks:
//   memory      no byte of the arena changes unless the peer was granted it at that moment
//               (model.h: a valid key the packet used, a posted receive, a READ/atomic sink);
//   read-leak   every READ response the device sends carries bytes of a READ the peer asked
//               for, from where it asked, through a key that grants remote read over them;
//   completions each wr_id completes at most once, in order, only if it was posted, and a
//               successful SEND/WRITE/READ/atomic only once every packet of it went out; a bind
//               only as the rules allow (and reporting the key asked for); an invalidate only of
//               a key the window had, a remote one only through the QP it is bound to; after
//               ERROR every posted WR has completed;
//   api         register/deregister/alloc/dealloc accept only what names a live object;
//   mbufs       at the end of each input, after teardown, the two mempools are back to where
//               they started (and DPDK's memzones too);
//   tx          every frame the device sends decodes with a good ICRC;
// and ASan/UBSan watch everything else. A violation prints the invariant, the step and the
// packet, and aborts (libFuzzer keeps the input). NDNIC_FUZZ_IGNORE=name,name lets a run go on
// past known violations; NDNIC_FUZZ_TRACE=1 prints every step, every frame the device sends and
// every completion.
//
// One process: EAL is started once (LLVMFuzzerInitialize), with a net_ring pair: the device
// under test polls port V from this thread (no worker lcore: deterministic), the fuzzer sends
// and receives the peer's frames on port P. Each input gets a fresh Device, arena and QPs; the
// engine's random key bytes come from a generator seeded per input (getrandom below), its
// retransmission timer is set long and fired by a step, so an input replays the same way.
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_memzone.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nic/engine.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/fuzz/stateful/model.h"
#include "tests/fuzz/stateful/program.h"
#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

namespace ndnic::fuzz {
namespace {

using nic::Completion;
using nic::QpState;
using nic::RecvWr;
using nic::SendWr;
using nic::WcOpcode;
using nic::WcStatus;
using nic::WrOpcode;

constexpr uint64_t kArena = 64 * 1024;
constexpr uint32_t kIpVictim = 0xC6124D02;   // 198.18.77.2
constexpr uint32_t kIpPeer = 0xC6124D01;     // 198.18.77.1
constexpr uint32_t kIpStranger = 0xC6124D63; // 198.18.77.99
constexpr uint32_t kPeerQpn[2] = {0x0abc01, 0x0abc02};
constexpr unsigned kMaxSteps = 2000;
constexpr unsigned kMaxPolls = 4000;
constexpr uint64_t kContextTag = 0xC0DE000000000000ull;

// ---- process-wide state ---------------------------------------------------------------------

struct Globals {
  glue::Port victim, peer;
  unsigned base_in_use = 0;
  unsigned base_memzones = 0;
  std::set<std::string> ignore;
  std::map<std::string, uint64_t> ignored;
  bool trace = false;
};
Globals* G = nullptr;

/// The engine draws key bytes and slot order from getrandom() (memory.cc); while an input runs
/// the fuzzer answers it from a generator seeded per input (getrandom below), so an input
/// replays exactly. NDNIC_FUZZ_SEED picks another seed.
bool g_fixed_random = false;
uint64_t g_random_state = 0;
uint64_t g_random_seed = 1;

unsigned mbufs_in_use() {
  return rte_mempool_in_use_count(G->victim.mempool()) + rte_mempool_in_use_count(G->peer.mempool());
}

unsigned memzone_count() {
  unsigned n = 0;
  rte_memzone_walk([](const rte_memzone*, void* arg) { ++*static_cast<unsigned*>(arg); }, &n);
  return n;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, f);
  vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

const char* op_name(uint8_t opcode) {
  const char* n = wire::opcode_info(opcode).name;
  return n ? n : "UNKNOWN_OPCODE";
}

const char* wr_name(WrOpcode op) {
  static const char* const k[] = {"SEND", "SEND_IMM", "SEND_INV", "WRITE", "WRITE_IMM",
                                  "READ", "CMP_SWAP", "FETCH_ADD", "BIND_MW", "LOCAL_INV"};
  return unsigned(op) < 10 ? k[unsigned(op)] : "?";
}

WcOpcode wc_for(WrOpcode op) {
  switch (op) {
    case WrOpcode::kSend: case WrOpcode::kSendImm: case WrOpcode::kSendInv: return WcOpcode::kSend;
    case WrOpcode::kWrite: case WrOpcode::kWriteImm: return WcOpcode::kWrite;
    case WrOpcode::kRead: return WcOpcode::kRead;
    case WrOpcode::kCompareSwap: return WcOpcode::kCompareSwap;
    case WrOpcode::kFetchAdd: return WcOpcode::kFetchAdd;
    case WrOpcode::kBindMw: return WcOpcode::kBindMw;
    case WrOpcode::kLocalInv: return WcOpcode::kLocalInv;
  }
  return WcOpcode::kSend;
}

bool is_sink_op(WrOpcode op) {
  return op == WrOpcode::kRead || op == WrOpcode::kCompareSwap || op == WrOpcode::kFetchAdd;
}

std::string describe_packet(const wire::RocePacket& p) {
  const wire::OpcodeInfo& info = wire::opcode_info(p.bth.opcode);
  std::string s = fmt("%s(0x%02x) qp 0x%x psn 0x%06x%s%s", op_name(p.bth.opcode), p.bth.opcode, p.bth.dest_qp,
                      p.bth.psn, p.bth.ack_req ? " ackreq" : "", p.bth.se ? " se" : "");
  if (info.ext & wire::kHdrReth)
    s += fmt(" reth{va 0x%" PRIx64 " rkey 0x%x len %u}", p.reth.va, p.reth.rkey, p.reth.dma_len);
  if (info.ext & wire::kHdrAtomicEth)
    s += fmt(" atomic{va 0x%" PRIx64 " rkey 0x%x swap_add 0x%" PRIx64 " cmp 0x%" PRIx64 "}", p.atomic.va,
             p.atomic.rkey, p.atomic.swap_add, p.atomic.compare);
  if (info.ext & wire::kHdrAeth) s += fmt(" aeth{syn 0x%02x msn 0x%x}", p.aeth.syndrome, p.aeth.msn);
  if (info.ext & wire::kHdrAtomicAckEth) s += fmt(" orig 0x%" PRIx64, p.atomic_ack.orig);
  if (info.ext & wire::kHdrImmDt) s += fmt(" imm 0x%x", p.imm);
  if (info.ext & wire::kHdrIeth) s += fmt(" ieth 0x%x", p.ieth_rkey);
  s += fmt(" payload %u", p.payload_len);
  return s;
}

// ---- one input -----------------------------------------------------------------------------

struct SendRec {
  uint64_t wr_id;
  SendWr wr;
  bool signaled;
  bool completed = false;
  bool implicit = false;  ///< unsignaled, taken as done when a later WR completed
  uint32_t window_handle = 0;  ///< bind / local invalidate: the handle of its window when posted (0: none)
};

struct RecvRec {
  uint64_t wr_id;
  RecvWr wr;
  bool completed = false;
};

struct Side {
  nic::Qp* qp = nullptr;
  nic::Cq* scq = nullptr;
  nic::Cq* rcq = nullptr;
  uint32_t serial = 0;  ///< QP instance: bumped when the QP is destroyed and made again
  std::vector<SendRec> sends;
  std::vector<RecvRec> recvs;
  std::unordered_map<uint64_t, size_t> send_at, recv_at;
  std::unordered_set<uint32_t> tx_psns;  ///< request PSNs this QP has put on the wire
  uint64_t posted_sends = 0, posted_recvs = 0;
  size_t local_error_at = SIZE_MAX;  ///< index in `sends` of the first WR that failed locally
};

struct Config {
  uint32_t mtu = 1024;
  uint32_t sq_depth = 64, rq_depth = 64;
  uint32_t psn_base = 0;
  uint8_t retry_cnt = 7, rnr_retry = 7, max_rd_atomic = 16;
  unsigned teardown = 0;
  bool learn_mac = false;  ///< the QPs are made without the peer's MAC (ARP, or learnt from its frames)
};

class Session {
 public:
  explicit Session(const uint8_t* data, size_t size) : in_(data, size) {}
  void run();

 private:
  // -- setup, teardown
  void setup();
  void connect(int side);
  void reconnect(int side);
  void teardown();
  // -- the steps
  void step_inject(Reader& in);
  void step_post_send(Reader& in);
  void step_post_recv(Reader& in);
  void step_reg_mr(Reader& in);
  void step_dereg_mr(Reader& in);
  void step_alloc_mw(Reader& in);
  void step_dealloc_mw(Reader& in);
  void step_bind(Reader& in);
  void step_local_inv(Reader& in);
  void step_fire_timers(Reader& in);
  void step_modify(Reader& in);
  void step_recreate(Reader& in);
  void step_respond(Reader& in);
  // -- operand selectors
  int side_sel(uint8_t b) const { return b % 4 == 3 ? 1 : 0; }
  uint32_t key_sel(Reader& in);
  struct Obj {
    uint64_t addr, len;
  };
  Obj object_of(uint32_t key) const;
  uint64_t addr_sel(Reader& in, const Obj& o);
  uint64_t len_sel(Reader& in, const Obj& o, uint64_t va);
  void sge_sel(Reader& in, nic::Sge* g);
  uint32_t pick_psn(Reader& in, int side, bool response);
  const nic::SendWqe* outstanding(int side, unsigned k) const;
  // -- the engine
  void poll(unsigned n);
  void observe(const Snapshot& before);
  void drain_peer(const Snapshot* before = nullptr);
  void check_read_response(int side, const wire::RocePacket& p, const Snapshot& before);
  void process_cqs();
  void on_send_completion(int side, const Completion& c);
  void on_recv_completion(int side, const Completion& c);
  void check_memory(const Snapshot& before);
  bool send_frame(wire::RocePacket& p, uint8_t damage, Reader* in, bool record);
  Snapshot snapshot() const;
  bool post(int side, SendWr& wr);
  // -- model helpers
  MrRec* mr_by_key(uint32_t key);
  MwRec* mw_by_index(uint32_t index);
  void kill_key(uint32_t key) { dead_keys_.push_back(key); }
  std::vector<uint32_t> live_mr_keys() const;
  std::vector<const MwRec*> allocated_mws() const;
  std::vector<uint32_t> pending_bind_keys() const;
  // -- reports
  void violation(const char* invariant, const std::string& what);
  void trace(const std::string& s) const {
    if (G->trace) std::fprintf(stderr, "  [step %u] %s\n", step_, s.c_str());
  }
  std::string dump_model() const;

  Reader in_;
  Config cfg_;
  std::unique_ptr<uint8_t[]> arena_;
  std::vector<uint8_t> shadow_;
  uint64_t base_ = 0;
  nic::Device dev_;
  bool dev_open_ = false;
  uint32_t pd1_ = 0, pd2_ = 0;
  Side sides_[2];
  /// Remote accesses the peer asked for, by the QP number the frame was addressed to: a frame
  /// still queued when its QP is destroyed reaches whichever QP gets that number next.
  std::map<uint32_t, std::set<RemoteRec>> records_;
  /// READ requests the peer sent to each QP: the device's READ responses must come from one.
  struct ReadRec {
    uint32_t psn, npkts, rkey;
    uint64_t va;
    uint32_t len;
  };
  std::map<uint32_t, std::vector<ReadRec>> reads_;  ///< by QP number, as records_
  std::vector<MrRec> mrs_;
  std::vector<MwRec> mws_;
  std::vector<uint32_t> dead_keys_;
  uint64_t next_wr_id_ = 1;
  uint64_t next_context_ = 1;
  unsigned step_ = 0;
  const char* step_name_ = "setup";
  unsigned polls_ = 0;
  std::string last_packet_ = "(none)";
};

// ---- reports --------------------------------------------------------------------------------

void Session::violation(const char* invariant, const std::string& what) {
  if (G->ignore.count(invariant)) {
    if (G->ignored[invariant]++ == 0)
      std::fprintf(stderr, "ndnic-stateful: ignoring '%s' (NDNIC_FUZZ_IGNORE): %s\n", invariant, what.c_str());
    return;
  }
  std::fprintf(stderr,
               "\n==ndnic-stateful== INVARIANT VIOLATED: %s\n"
               "  step %u (%s), engine iteration %u, input offset %zu\n"
               "  %s\n"
               "  last injected packet: %s\n%s",
               invariant, step_, step_name_, polls_, in_.pos(), what.c_str(), last_packet_.c_str(),
               dump_model().c_str());
  std::fflush(stderr);
  std::abort();
}

std::string Session::dump_model() const {
  std::string s = fmt("  arena at 0x%" PRIx64 " (%" PRIu64 " bytes), mtu %u, pd1 %u pd2 %u\n", base_, kArena,
                      cfg_.mtu, pd1_, pd2_);
  for (const MrRec& m : mrs_)
    s += fmt("  region key 0x%x [+0x%" PRIx64 ", +0x%" PRIx64 ") pd %u access 0x%x %s\n", m.key, m.addr - base_,
             m.addr - base_ + m.len, m.pd, m.access, m.live ? "live" : "deregistered");
  for (const MwRec& w : mws_) {
    static const char* const kSt[] = {"unbound", "bound", "invalidated"};
    s += fmt("  window handle 0x%x key 0x%x pd %u %s %s", w.handle, w.key, w.pd, w.allocated ? "allocated" : "freed",
             kSt[w.state]);
    if (w.state != MwRec::kUnbound)
      s += fmt(" on region 0x%x [+0x%" PRIx64 ", +0x%" PRIx64 ") access 0x%x qp side %d/%u", w.mr_key, w.addr - base_,
               w.addr - base_ + w.len, w.access, w.side, w.serial);
    s += "\n";
  }
  for (int i = 0; i < 2; i++) {
    const Side& S = sides_[i];
    if (!S.qp) continue;
    const nic::Qp::Impl* im = S.qp->impl();
    s += fmt("  QP %c qpn 0x%x (instance %u) %s: resp.psn 0x%06x comp.psn 0x%06x req.psn 0x%06x, %zu sends %zu recvs posted\n",
             i ? 'B' : 'A', S.qp->qpn(), S.serial, nic::qp_state_name(S.qp->state()), im->resp.psn, im->comp.psn,
             im->req.psn, S.sends.size(), S.recvs.size());
  }
  return s;
}

// ---- setup and teardown ----------------------------------------------------------------------

void Session::setup() {
  const uint8_t h[kHeaderLen] = {in_.u8(), in_.u8(), in_.u8(), in_.u8(), in_.u8(), in_.u8(), in_.u8(), in_.u8()};
  static const uint32_t kMtus[] = {256, 512, 1024, 2048, 4096};
  cfg_.mtu = kMtus[h[0] % 5];
  cfg_.sq_depth = 1 + h[1] % 64;
  cfg_.rq_depth = 1 + h[2] % 64;
  cfg_.psn_base = (0xFFFFF8u + uint32_t(h[3]) * 0x10203u) & wire::kPsnMask;
  cfg_.retry_cnt = h[4] & 7;
  cfg_.rnr_retry = (h[4] >> 3) & 7;
  cfg_.max_rd_atomic = uint8_t(1 + h[5] % 16);
  cfg_.teardown = h[6] % 4;
  cfg_.learn_mac = h[7] & 1;

  if (mbufs_in_use() != G->base_in_use)
    violation("mbuf-leak", fmt("%u mbufs in use when the input starts, %u after start-up (device port %u, peer port %u)",
                               mbufs_in_use(), G->base_in_use, rte_mempool_in_use_count(G->victim.mempool()),
                               rte_mempool_in_use_count(G->peer.mempool())));
  arena_.reset(new uint8_t[kArena]);
  for (uint64_t i = 0; i < kArena; i++) arena_[i] = uint8_t(i * 131 + 7);
  shadow_.assign(arena_.get(), arena_.get() + kArena);
  base_ = reinterpret_cast<uint64_t>(arena_.get());

  nic::DeviceConfig dc;
  dc.ports = {&G->victim};
  dc.max_qps = 16;
  dc.max_mrs = 16;
  dc.max_mws = 16;
  if (!dev_.open(dc)) {
    std::fprintf(stderr, "ndnic-stateful: device: %s\n", dev_.error().c_str());
    std::abort();
  }
  dev_open_ = true;
  pd1_ = dev_.alloc_pd();
  pd2_ = dev_.alloc_pd();
  // Three regions to start from: everything (with bind), local write only, and one in another PD.
  struct Init {
    uint64_t off, len;
    uint32_t pd, access;
  } const init[] = {
      {0x1000, 0x4000, pd1_, kAccessLocalWrite | kRemoteRights | kAccessMwBind},
      {0x8000, 0x2000, pd1_, kAccessLocalWrite},
      {0xC000, 0x1000, pd2_, kAccessLocalWrite | kRemoteRights | kAccessMwBind},
  };
  for (const Init& r : init) {
    nic::MrKeys k;
    if (!dev_.register_mr(r.pd, arena_.get() + r.off, r.len, r.access, &k)) std::abort();
    mrs_.push_back({k.rkey, base_ + r.off, r.len, r.pd, r.access, true});
  }
  for (int i = 0; i < 2; i++) {
    sides_[i].scq = dev_.create_cq(4096);
    sides_[i].rcq = dev_.create_cq(4096);
    if (!sides_[i].scq || !sides_[i].rcq) std::abort();
    connect(i);
  }
}

void Session::connect(int side) {
  Side& S = sides_[side];
  nic::QpCaps caps;
  caps.send_cq = S.scq;
  caps.recv_cq = S.rcq;
  caps.pd = pd1_;
  caps.max_send_wr = cfg_.sq_depth;
  caps.max_recv_wr = cfg_.rq_depth;
  S.qp = dev_.create_qp(caps);
  if (!S.qp) {
    std::fprintf(stderr, "ndnic-stateful: create_qp failed\n");
    std::abort();
  }
  reconnect(side);
}

/// INIT -> RTR -> RTS towards the fake peer QP on port P.
void Session::reconnect(int side) {
  Side& S = sides_[side];
  nic::QpAttr at;
  at.remote_qpn = kPeerQpn[side];
  at.rq_psn = (cfg_.psn_base + 0x10 * side) & wire::kPsnMask;
  at.sq_psn = (cfg_.psn_base + 0x800 + 0x10 * side) & wire::kPsnMask;
  at.path_mtu = cfg_.mtu;
  at.dest_ipv4 = kIpPeer;
  if (!cfg_.learn_mac) std::memcpy(at.dest_mac, G->peer.mac().addr_bytes, 6);
  at.retry_cnt = cfg_.retry_cnt;
  at.rnr_retry = cfg_.rnr_retry;
  at.min_rnr_timer = 1;
  at.timeout = 18;  // ~1 s: no timer fires by itself inside an input; kFireTimers fires them
  at.max_rd_atomic = cfg_.max_rd_atomic;
  at.max_dest_rd_atomic = cfg_.max_rd_atomic;
  if (!S.qp->modify(QpState::kInit, at) || !S.qp->modify(QpState::kRtr, at) || !S.qp->modify(QpState::kRts, at)) {
    std::fprintf(stderr, "ndnic-stateful: cannot bring QP %d up (mtu %u)\n", side, cfg_.mtu);
    std::abort();
  }
  S.tx_psns.clear();  // a new PSN space
  S.local_error_at = SIZE_MAX;
}

void Session::teardown() {
  step_name_ = "teardown";
  const unsigned mode = cfg_.teardown;
  if (mode == 0 || mode == 2) {
    for (Side& S : sides_) {
      const Snapshot before = snapshot();
      S.qp->modify(mode == 0 ? QpState::kError : QpState::kReset, {});
      observe(before);
    }
    polls_ = 0;  // the budget does not apply to draining
    poll(4);
    if (mode == 0) {
      // Every WR posted on a QP now in ERROR has completed (signaled or not, errors always are).
      for (int i = 0; i < 2; i++) {
        Side& S = sides_[i];
        for (const RecvRec& r : S.recvs)
          if (!r.completed) violation("completion-missing", fmt("receive wr_id 0x%" PRIx64 " on QP %c never completed after the QP went to ERROR", r.wr_id, i ? 'B' : 'A'));
        for (const SendRec& r : S.sends)
          if (!r.completed && r.signaled)
            violation("completion-missing", fmt("%s wr_id 0x%" PRIx64 " on QP %c never completed after the QP went to ERROR", wr_name(r.wr.opcode), r.wr_id, i ? 'B' : 'A'));
        if (S.qp->sends_completed() != S.posted_sends || S.qp->recvs_completed() != S.posted_recvs)
          violation("completion-missing", fmt("QP %c: %" PRIu64 "/%" PRIu64 " sends and %" PRIu64 "/%" PRIu64 " receives completed after ERROR", i ? 'B' : 'A',
                                              S.qp->sends_completed(), S.posted_sends, S.qp->recvs_completed(), S.posted_recvs));
      }
    }
  }
  if (mode != 3) {
    for (Side& S : sides_) {
      dev_.destroy_qp(S.qp);
      S.qp = nullptr;
    }
  }
  dev_.close();
  dev_open_ = false;
  for (Side& S : sides_) S.qp = nullptr;  // closed with the device (mode 3)
  // What the device sent last, and frames injected that it never polled (twice: the ports
  // answer ARP by themselves).
  for (int round = 0; round < 2; round++) {
    drain_peer();
    rte_mbuf* pk[32];
    uint16_t n;
    while ((n = G->victim.rx_burst(pk, 32)) > 0)
      for (uint16_t i = 0; i < n; i++) rte_pktmbuf_free(pk[i]);
  }
  const unsigned in_use = mbufs_in_use();
  if (in_use != G->base_in_use)
    violation(mode == 3 ? "mbuf-leak-close" : "mbuf-leak", fmt("%u mbufs in use after teardown (mode %u: %s; device port %u, peer port %u), %u before the input", in_use, mode,
                               mode == 0 ? "ERROR, destroy" : mode == 1 ? "destroy" : mode == 2 ? "RESET, destroy" : "close with live QPs",
                               rte_mempool_in_use_count(G->victim.mempool()), rte_mempool_in_use_count(G->peer.mempool()),
                               G->base_in_use));
  G->base_in_use = in_use;  // when ignored: the next input starts from here
  const unsigned zones = memzone_count();
  if (zones != G->base_memzones)
    violation("memzone-leak", fmt("%u DPDK memzones after the device closed, %u before the input", zones, G->base_memzones));
  G->base_memzones = zones;
}

// ---- the program ----------------------------------------------------------------------------

void Session::run() {
  setup();
  while (!in_.done() && step_ < kMaxSteps && polls_ < kMaxPolls) {
    step_++;
    const Step kind = Step(in_.u8() % kStepKinds);
    const Snapshot before = snapshot();
    switch (kind) {
      case Step::kInject: case Step::kInject2: step_name_ = "inject"; step_inject(in_); break;
      case Step::kPostSend: case Step::kPostSend2: step_name_ = "post_send"; step_post_send(in_); break;
      case Step::kPostRecv: step_name_ = "post_recv"; step_post_recv(in_); break;
      case Step::kRegMr: step_name_ = "reg_mr"; step_reg_mr(in_); break;
      case Step::kDeregMr: step_name_ = "dereg_mr"; step_dereg_mr(in_); break;
      case Step::kAllocMw: step_name_ = "alloc_mw"; step_alloc_mw(in_); break;
      case Step::kDeallocMw: step_name_ = "dealloc_mw"; step_dealloc_mw(in_); break;
      case Step::kBind: step_name_ = "bind"; step_bind(in_); break;
      case Step::kLocalInv: step_name_ = "local_inv"; step_local_inv(in_); break;
      case Step::kPoll: {
        step_name_ = "poll";
        const unsigned n = 1 + in_.u8() % 16;
        trace(fmt("poll %u", n));
        poll(n);
        break;
      }
      case Step::kFireTimers: step_name_ = "fire_timers"; step_fire_timers(in_); break;
      case Step::kModifyQp: step_name_ = "modify_qp"; step_modify(in_); break;
      case Step::kRecreateQp: step_name_ = "recreate_qp"; step_recreate(in_); break;
      case Step::kRespond: step_name_ = "respond"; step_respond(in_); break;
    }
    observe(before);  // API calls change no memory, but completions (flushes) may appear
  }
  teardown();
}

// ---- selectors ------------------------------------------------------------------------------

std::vector<uint32_t> Session::live_mr_keys() const {
  std::vector<uint32_t> v;
  for (const MrRec& m : mrs_)
    if (m.live) v.push_back(m.key);
  return v;
}

std::vector<const MwRec*> Session::allocated_mws() const {
  std::vector<const MwRec*> v;
  for (const MwRec& w : mws_)
    if (w.allocated) v.push_back(&w);
  return v;
}

std::vector<uint32_t> Session::pending_bind_keys() const {
  std::vector<uint32_t> v;
  for (const Side& S : sides_)
    for (const SendRec& r : S.sends)
      if (!r.completed && r.wr.opcode == WrOpcode::kBindMw)
        v.push_back(nic::make_key(nic::key_index(r.wr.bind.mw_key), r.wr.bind.new_key));
  return v;
}

/// The newest region with this key (a slot's key byte may come round again).
MrRec* Session::mr_by_key(uint32_t key) {
  for (auto it = mrs_.rbegin(); it != mrs_.rend(); ++it)
    if (it->key == key) return &*it;
  return nullptr;
}

MwRec* Session::mw_by_index(uint32_t index) {
  for (MwRec& w : mws_)
    if (w.allocated && w.index == index) return &w;
  return nullptr;
}

uint32_t Session::key_sel(Reader& in) {
  const uint8_t b = in.u8();
  const unsigned cat = b >> 5, idx = b & 31;
  const std::vector<uint32_t> mrs = live_mr_keys();
  const std::vector<const MwRec*> mws = allocated_mws();
  switch (cat) {
    case 0:
    case 1:
      return mrs.empty() ? 0x100 | idx : mrs[idx % mrs.size()];
    case 2:
      return mws.empty() ? nic::make_key(nic::kMwKeyBase, uint8_t(idx)) : mws[idx % mws.size()]->key;
    case 3: {
      const std::vector<uint32_t> p = pending_bind_keys();
      if (!p.empty()) return p[idx % p.size()];
      return mws.empty() ? nic::make_key(nic::kMwKeyBase, uint8_t(idx)) : mws[idx % mws.size()]->handle;
    }
    case 4:
      if (!dead_keys_.empty()) return dead_keys_[idx % dead_keys_.size()];
      return mrs.empty() ? idx : mrs[0] ^ 1;
    case 5: {
      const bool mw = (idx & 1) && !mws.empty();
      const uint32_t k = mw ? mws[(idx >> 1) % mws.size()]->key : mrs.empty() ? 0x100 : mrs[(idx >> 1) % mrs.size()];
      return k ^ (1 + (idx >> 1));
    }
    case 6:
      return in.u32();
    default:
      return mws.empty() ? 0 : mws[idx % mws.size()]->handle;
  }
}

Session::Obj Session::object_of(uint32_t key) const {
  for (auto it = mrs_.rbegin(); it != mrs_.rend(); ++it)
    if (it->key == key) return {it->addr, it->len};
  for (const MwRec& w : mws_)
    if ((w.key == key || w.handle == key) && w.state != MwRec::kUnbound) return {w.addr, w.len};
  for (const Side& S : sides_)
    for (const SendRec& r : S.sends)
      if (!r.completed && r.wr.opcode == WrOpcode::kBindMw &&
          nic::make_key(nic::key_index(r.wr.bind.mw_key), r.wr.bind.new_key) == key)
        return {r.wr.bind.addr, r.wr.bind.length};
  return {base_, kArena};
}

uint64_t Session::addr_sel(Reader& in, const Obj& o) {
  const uint8_t mode = in.u8() % 8;
  const uint16_t off = in.u16();
  switch (mode) {
    case 0: case 1: return o.addr + off % (o.len ? o.len : 1);
    case 2: return o.addr;
    case 3: return o.addr + o.len - 1 - off % 64;
    case 4: return o.addr - 1 - off % 64;
    case 5: return base_ + off % kArena;
    case 6: return in.u64();
    default: return o.addr + o.len;
  }
}

uint64_t Session::len_sel(Reader& in, const Obj& o, uint64_t va) {
  const uint8_t mode = in.u8() % 8;
  const uint16_t v = in.u16();
  const uint64_t end = o.addr + o.len;
  const uint64_t rest = va < end ? end - va : 0;
  switch (mode) {
    case 0: return 1 + v % 64;
    case 1: return uint64_t(cfg_.mtu) * (1 + v % 4);
    case 2: return v % 8192;
    case 3: return 0;
    case 4: return in.u32();
    case 5: return rest;
    case 6: return 8;
    default: return rest + 1 + v % 8;
  }
}

void Session::sge_sel(Reader& in, nic::Sge* g) {
  const uint32_t key = key_sel(in);
  const Obj o = object_of(key);
  g->lkey = key;
  g->addr = addr_sel(in, o);
  g->length = uint32_t(len_sel(in, o, g->addr));
}

/// The k-th oldest send WQE with PSNs that is not done yet (nullptr: none).
const nic::SendWqe* Session::outstanding(int side, unsigned k) const {
  const nic::Qp::Impl* im = sides_[side].qp->impl();
  const nic::ReqState& r = im->req;
  const nic::SendWqe* last = nullptr;
  for (uint32_t i = r.head; i != r.tail; i++) {
    const nic::SendWqe& w = r.sq[i & r.mask];
    if (!w.psn_assigned || w.state == nic::WqeState::kDone || w.state == nic::WqeState::kError) continue;
    last = &w;
    if (k-- == 0) break;
  }
  return last;
}

uint32_t Session::pick_psn(Reader& in, int side, bool response) {
  const uint8_t mode = in.u8() % 8, d = in.u8();
  if (mode == 6) return in.u24() & wire::kPsnMask;
  if (side < 0 || !sides_[side].qp) return d;
  const nic::Qp::Impl* im = sides_[side].qp->impl();
  uint32_t psn;
  if (!response) {
    const uint32_t e = im->resp.psn;
    switch (mode) {
      case 3: psn = e + 1 + d % 8; break;
      case 4: psn = e - 1 - d % 8; break;
      case 5: psn = e + d; break;
      case 7: psn = e + 0x800000 + d; break;
      default: psn = e;
    }
  } else {
    const uint32_t comp = im->comp.psn, req = im->req.psn;
    const nic::SendWqe* w = outstanding(side, d >> 4);
    switch (mode) {
      case 0: psn = comp; break;
      case 1: psn = req - 1; break;
      case 2: psn = w ? w->first_psn + (d & 15) % (w->npkts ? w->npkts : 1) : comp; break;
      case 3: psn = w ? w->last_psn : req - 1; break;
      case 4: psn = comp + 1 + d % 8; break;
      case 5: psn = comp - 1 - d % 8; break;
      default: psn = req + d;
    }
  }
  return psn & wire::kPsnMask;
}

// ---- steps ----------------------------------------------------------------------------------

/// Builds the frame of `p` (peer -> victim addressing filled in here), damages it as `damage`
/// says (operands from `in`), and sends it from port P. With `record`, the remote access it
/// asks for (as the device will decode it) is added to the model.
bool Session::send_frame(wire::RocePacket& p, uint8_t damage, Reader* in, bool record) {
  std::memcpy(p.eth.dst, G->victim.mac().addr_bytes, 6);
  std::memcpy(p.eth.src, G->peer.mac().addr_bytes, 6);
  if (p.ip4.src == 0) p.ip4.src = kIpPeer;
  p.ip4.dst = kIpVictim;
  p.udp.src_port = 0xC000;
  std::vector<uint8_t> f(wire::frame_length(p));
  if (wire::encode_frame(p, f.data(), f.size()) != f.size()) return false;
  constexpr size_t kIb = wire::kEthHdrLen + wire::kIpv4HdrLen + wire::kUdpHdrLen;
  if (damage && in) {
    const uint16_t pos = in->u16();
    const uint8_t x = uint8_t(in->u8() | 1);
    if (damage == 1 && f.size() > kIb + wire::kIcrcLen) {
      // A byte of the IB headers or payload, then a good ICRC: the transport sees odd fields.
      f[kIb + pos % (f.size() - kIb - wire::kIcrcLen)] ^= x;
      const uint32_t icrc = wire::icrc_compute(f.data() + wire::kEthHdrLen, false, f.size() - kIb - wire::kIcrcLen);
      std::memcpy(f.data() + f.size() - 4, &icrc, 4);
    } else if (damage == 2) {
      f[pos % f.size()] ^= x;
    } else if (damage == 3) {
      f.resize(f.size() - std::min<size_t>(f.size() - 1, 1 + pos % 16));
    }
  }
  // What the device will see: the model learns the access from the decoded frame.
  wire::RocePacket seen;
  const bool decodes = wire::decode_frame(f.data(), f.size(), &seen) == wire::Reject::kOk;
  last_packet_ = decodes ? describe_packet(seen) : describe_packet(p) + fmt(" (damaged: does not decode, %zu bytes)", f.size());
  if (record && decodes) {
    int side = -1;
    for (int i = 0; i < 2; i++)
      if (sides_[i].qp && sides_[i].qp->qpn() == seen.bth.dest_qp) side = i;
    const wire::OpcodeInfo& info = wire::opcode_info(seen.bth.opcode);
    const uint32_t qpn = seen.bth.dest_qp;
    if (info.name && qpn < 0x100) {  // numbers a QP of this device can have
      const Snapshot now = snapshot();
      auto granted = [&](uint32_t key, uint64_t va, uint64_t len, uint32_t need) {
        return side >= 0 && now.grants(side, key, va, len, need);
      };
      if (info.kind == wire::OpKind::kWrite && (info.ext & wire::kHdrReth)) {
        const RemoteRec r{seen.reth.rkey, seen.reth.va, seen.reth.dma_len, kAccessRemoteWrite,
                          granted(seen.reth.rkey, seen.reth.va, seen.reth.dma_len, kAccessRemoteWrite)};
        records_[qpn].insert(r);
      } else if (info.kind == wire::OpKind::kReadRequest) {
        const uint32_t n = seen.reth.dma_len ? uint32_t((uint64_t(seen.reth.dma_len) + cfg_.mtu - 1) / cfg_.mtu) : 1;
        std::vector<ReadRec>& v = reads_[qpn];
        v.push_back({seen.bth.psn, n, seen.reth.rkey, seen.reth.va, seen.reth.dma_len});
        if (v.size() > 512) v.erase(v.begin());
      } else if (info.kind == wire::OpKind::kAtomic) {
        const RemoteRec r{seen.atomic.rkey, seen.atomic.va, 8, kAccessRemoteAtomic,
                          granted(seen.atomic.rkey, seen.atomic.va, 8, kAccessRemoteAtomic)};
        records_[qpn].insert(r);
      }
    }
  }
  trace("inject " + last_packet_);
  rte_mbuf* m = rte_pktmbuf_alloc(G->peer.mempool());
  if (!m) return false;
  char* d = rte_pktmbuf_append(m, uint16_t(f.size()));
  if (!d) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memcpy(d, f.data(), f.size());
  if (G->peer.tx_burst(&m, 1) != 1) {
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

void Session::step_inject(Reader& in) {
  const uint8_t t = in.u8();
  int side = -1;
  uint32_t dest_qp;
  if (t % 8 < 6) side = 0;
  else if (t % 8 == 6) side = 1;
  if (side >= 0) dest_qp = sides_[side].qp->qpn();
  else dest_qp = in.u24();
  const uint8_t oi = in.u8() % kInjectOpcodeChoices;
  const uint8_t opcode = oi < sizeof(kInjectOpcodes) ? kInjectOpcodes[oi] : in.u8();
  const uint8_t fl = in.u8();
  const wire::OpcodeInfo& info = wire::opcode_info(opcode);
  const bool response = info.name && (info.kind == wire::OpKind::kReadResponse || info.kind == wire::OpKind::kAck ||
                                      info.kind == wire::OpKind::kAtomicAck);
  wire::RocePacket p;
  p.bth.opcode = opcode;
  p.bth.dest_qp = dest_qp;
  p.bth.ack_req = fl & 1;
  p.bth.se = fl & 2;
  p.bth.mig = fl & 4;
  if (fl & 8) p.ip4.src = kIpStranger;
  p.bth.psn = pick_psn(in, side, response);
  // RETH / AtomicETH: a key, an address relative to what it names, a length.
  const uint32_t key = key_sel(in);
  const Obj o = object_of(key);
  const uint64_t va = addr_sel(in, o);
  const uint64_t len = len_sel(in, o, va);
  p.reth = {va, key, uint32_t(len)};
  p.atomic.va = va;
  p.atomic.rkey = key;
  const uint16_t swap = in.u16();
  const uint8_t cmp_mode = in.u8();
  const uint16_t cmp = in.u16();
  p.atomic.swap_add = swap;
  p.atomic.compare = cmp;
  if ((cmp_mode & 1) && va >= base_ && va - base_ <= kArena - 8)  // a compare that succeeds
    std::memcpy(&p.atomic.compare, arena_.get() + (va - base_), 8);
  p.aeth.syndrome = in.u8();
  p.aeth.msn = in.u16();
  p.atomic_ack.orig = uint64_t(in.u16()) * 0x0001000100010001ull;
  p.imm = in.u32();
  p.ieth_rkey = key_sel(in);
  // Payload.
  const uint8_t pm = in.u8() % 8;
  const uint16_t pv = in.u16();
  const uint8_t fill = in.u8();
  uint32_t plen = 0;
  const uint32_t mtu = cfg_.mtu;
  switch (pm) {
    case 0: plen = mtu; break;
    case 1: plen = pv % (mtu + 1); break;
    case 2: {  // what the oldest READ still expects in its next response
      const nic::SendWqe* w = side >= 0 ? outstanding(side, 0) : nullptr;
      plen = w && w->length > w->placed ? std::min(w->length - w->placed, mtu) : mtu;
      break;
    }
    case 3: plen = 0; break;
    case 4: plen = pv % 4097; break;
    case 5: plen = 8; break;
    case 6: plen = side >= 0 ? std::min(sides_[side].qp->impl()->resp.write_left, mtu) : mtu; break;
    default: plen = mtu + 1 + pv % 4;
  }
  if (info.name && !info.has_payload) plen = 0;
  std::vector<uint8_t> payload(plen);
  for (uint32_t i = 0; i < plen; i++) payload[i] = uint8_t(fill ^ (i * 0x9D));
  p.payload = payload.data();
  p.payload_len = plen;
  const uint8_t damage = (fl >> 4) & 3;
  send_frame(p, damage, &in, true);
  static const unsigned kPolls[] = {1, 2, 0, 4};
  poll(kPolls[fl >> 6]);
}

bool Session::post(int side, SendWr& wr) {
  Side& S = sides_[side];
  wr.wr_id = uint64_t(side + 1) << 56 | next_wr_id_++;
  trace(fmt("post_send QP %c %s wr_id 0x%" PRIx64 " flags 0x%x nsge %u", side ? 'B' : 'A', wr_name(wr.opcode), wr.wr_id,
            wr.flags, wr.num_sge));
  if (!S.qp->post_send(wr)) return false;
  S.send_at[wr.wr_id] = S.sends.size();
  S.sends.push_back({wr.wr_id, wr, (wr.flags & nic::kWrSignaled) != 0});
  const uint32_t wkey = wr.opcode == WrOpcode::kBindMw ? wr.bind.mw_key : wr.invalidate_rkey;
  if (const MwRec* w = nic::is_mw_key(wkey) ? mw_by_index(nic::key_index(wkey)) : nullptr)
    S.sends.back().window_handle = w->handle;
  S.posted_sends++;
  return true;
}

void Session::step_post_send(Reader& in) {
  const int side = side_sel(in.u8());
  const WrOpcode op = WrOpcode(in.u8() % 10);
  const uint8_t fl = in.u8();
  const unsigned nsge = in.u8() % 5;
  SendWr wr{};
  wr.opcode = op;
  const bool local = op == WrOpcode::kBindMw || op == WrOpcode::kLocalInv;
  if ((fl & 3) != 3 || local) wr.flags |= nic::kWrSignaled;  // local ops: the model learns from their completion
  if (fl & 4) wr.flags |= nic::kWrFence;
  if (fl & 8) wr.flags |= nic::kWrSolicited;
  if (fl & 0x40) wr.flags |= 1u << 4;  // kWrWindowHandle where the engine has it
  const bool inl = (fl & 0x30) == 0x30 && !local;
  if (inl) {
    wr.flags |= nic::kWrInline;
    wr.inline_len = in.u8() % (nic::kMaxInline + 1);
    const uint8_t f = in.u8();
    for (uint32_t i = 0; i < wr.inline_len; i++) wr.inline_data[i] = uint8_t(f + i);
  } else if (!local) {
    wr.num_sge = uint8_t(nsge);
    for (unsigned i = 0; i < nsge; i++) sge_sel(in, &wr.sge[i]);
  }
  if (op == WrOpcode::kBindMw) {
    wr.bind.mw_key = key_sel(in);
    wr.bind.mr_lkey = key_sel(in);
    const Obj o = object_of(wr.bind.mr_lkey);
    wr.bind.addr = addr_sel(in, o);
    wr.bind.length = len_sel(in, o, wr.bind.addr);
    const uint8_t acc = in.u8();
    wr.bind.access = (acc & 0x80) ? (acc & 0x1f) : uint32_t(((acc % 7) + 1) << 1);
    const uint8_t nk = in.u8();
    wr.bind.new_key = nk ? nk : uint8_t(nic::key_byte(wr.bind.mw_key) + 1);
  } else if (op == WrOpcode::kLocalInv) {
    wr.invalidate_rkey = key_sel(in);
  } else {
    wr.remote_addr = 0x10000ull * in.u16();
    wr.rkey = in.u16();
    wr.imm = in.u32();
    wr.compare_add = in.u16();
    wr.swap = in.u16();
    wr.invalidate_rkey = key_sel(in);
  }
  post(side, wr);
}

void Session::step_post_recv(Reader& in) {
  const int side = side_sel(in.u8());
  Side& S = sides_[side];
  RecvWr wr{};
  wr.num_sge = in.u8() % 5;
  for (unsigned i = 0; i < wr.num_sge; i++) sge_sel(in, &wr.sge[i]);
  wr.wr_id = uint64_t(side + 1) << 56 | 1ull << 55 | next_wr_id_++;
  trace(fmt("post_recv QP %c wr_id 0x%" PRIx64 " nsge %u sge0 {+0x%" PRIx64 " len %u key 0x%x}", side ? 'B' : 'A', wr.wr_id,
            wr.num_sge, wr.sge[0].addr - base_, wr.sge[0].length, wr.sge[0].lkey));
  if (!S.qp->post_recv(wr)) return;
  S.recv_at[wr.wr_id] = S.recvs.size();
  S.recvs.push_back({wr.wr_id, wr});
  S.posted_recvs++;
}

void Session::step_reg_mr(Reader& in) {
  const uint64_t off = in.u16() % kArena;
  const uint16_t lv = in.u16();
  const uint8_t acc = in.u8();
  const uint8_t pdb = in.u8();
  const uint64_t len = lv == 0xFFFF ? 0 : 1 + lv % (kArena - off);
  const uint32_t access = (acc & 0x80) ? acc : (acc & 0x1f);
  const uint32_t pd = pdb % 4 == 3 ? pd2_ : pd1_;
  nic::MrKeys k;
  const bool ok = dev_.register_mr(pd, arena_.get() + off, len, access, &k);
  trace(fmt("reg_mr [+0x%" PRIx64 ", +0x%" PRIx64 ") pd %u access 0x%x -> %s 0x%x", off, off + len, pd, access,
            ok ? "key" : "refused", ok ? k.rkey : 0));
  if (!ok) return;
  if (MrRec* old = mr_by_key(k.rkey); old && old->live)
    violation("api", fmt("register_mr returned key 0x%x, which a live region has", k.rkey));
  mrs_.push_back({k.rkey, base_ + off, len, pd, access, true});
}

void Session::step_dereg_mr(Reader& in) {
  const uint8_t b = in.u8();
  uint32_t key;
  if (b & 0x80) {
    key = key_sel(in);
  } else {
    const std::vector<uint32_t> live = live_mr_keys();
    if (live.empty()) return;
    key = live[b % live.size()];
  }
  const bool ok = dev_.deregister_mr(key);
  trace(fmt("dereg_mr 0x%x -> %s", key, ok ? "ok" : "refused"));
  if (!ok) return;
  MrRec* m = mr_by_key(key);
  if (!m || !m->live) {
    violation("api", fmt("deregister_mr accepted key 0x%x, which names no live region", key));
    return;
  }
  for (const MwRec& w : mws_) {
    if (!w.allocated || w.state != MwRec::kBound || w.mr_key != key) continue;
    bool inv_pending = false;  // a LOCAL_INV of it that may have run
    for (const Side& o : sides_)
      for (const SendRec& e : o.sends)
        inv_pending |= !e.completed && e.wr.opcode == WrOpcode::kLocalInv && nic::key_index(e.wr.invalidate_rkey) == w.index;
    if (!inv_pending)
      violation("dereg-bound", fmt("region 0x%x deregistered while window 0x%x is bound to it", key, w.key));
  }
  m->live = false;
  kill_key(key);
}

void Session::step_alloc_mw(Reader& in) {
  const uint32_t pd = in.u8() % 4 == 3 ? pd2_ : pd1_;
  const uint64_t ctx = kContextTag | next_context_++;
  const uint32_t key = dev_.alloc_mw(pd, ctx);
  trace(fmt("alloc_mw pd %u -> 0x%x", pd, key));
  if (!key) return;
  if (mw_by_index(nic::key_index(key)))
    violation("api", fmt("alloc_mw returned 0x%x, the slot of a window still allocated", key));
  MwRec w;
  w.handle = w.key = key;
  w.index = nic::key_index(key);
  w.pd = pd;
  w.context = ctx;
  w.allocated = true;
  w.keys.push_back(key);
  mws_.push_back(w);
}

void Session::step_dealloc_mw(Reader& in) {
  const uint8_t b = in.u8();
  uint32_t key;
  if (b & 0x80) {
    key = key_sel(in);
  } else {
    const std::vector<const MwRec*> v = allocated_mws();
    if (v.empty()) return;
    const MwRec* w = v[b % v.size()];
    key = (b & 0x40) ? w->handle : w->key;
  }
  const bool ok = dev_.dealloc_mw(key);
  trace(fmt("dealloc_mw 0x%x -> %s", key, ok ? "ok" : "refused"));
  if (!ok) return;
  MwRec* w = nic::is_mw_key(key) ? mw_by_index(nic::key_index(key)) : nullptr;
  bool pending = false;  // the key a bind that may have run asks for
  for (const uint32_t k : pending_bind_keys()) pending |= k == key;
  const bool had = w && std::find(w->keys.begin(), w->keys.end(), key) != w->keys.end();
  if (!w || (w->key != key && w->handle != key && !pending && !had)) {
    violation("api", fmt("dealloc_mw accepted key 0x%x, which names no allocated window", key));
    return;
  }
  w->allocated = false;
  kill_key(w->key);
  kill_key(w->handle);
}

void Session::step_bind(Reader& in) {
  const int side = side_sel(in.u8());
  const uint8_t wi = in.u8(), mi = in.u8();
  const uint16_t off = in.u16(), lv = in.u16();
  const uint8_t acc = in.u8(), nk = in.u8();
  const std::vector<const MwRec*> mws = allocated_mws();
  const std::vector<uint32_t> mrs = live_mr_keys();
  if (mws.empty() || mrs.empty()) return;
  const MwRec* w = mws[wi % mws.size()];
  const MrRec* m = mr_by_key(mrs[mi % mrs.size()]);
  SendWr wr{};
  wr.opcode = WrOpcode::kBindMw;
  wr.flags = nic::kWrSignaled;
  const uint64_t at = off % m->len;
  wr.bind.mw_key = w->key;
  wr.bind.mr_lkey = m->key;
  wr.bind.addr = m->addr + at;
  wr.bind.length = 1 + lv % (m->len - at);
  wr.bind.access = uint32_t(((acc % 7) + 1) << 1);
  wr.bind.new_key = uint8_t(nic::key_byte(w->key) + 1 + nk % 4);
  post(side, wr);
}

void Session::step_local_inv(Reader& in) {
  const int side = side_sel(in.u8());
  SendWr wr{};
  wr.opcode = WrOpcode::kLocalInv;
  wr.flags = nic::kWrSignaled;
  wr.invalidate_rkey = key_sel(in);
  post(side, wr);
}

void Session::step_fire_timers(Reader& in) {
  const int side = side_sel(in.u8());
  nic::CompState& c = sides_[side].qp->impl()->comp;
  trace(fmt("fire timers QP %c (ack timer %s, rnr timer %s)", side ? 'B' : 'A', c.timer_tsc ? "armed" : "off",
            c.rnr_tsc ? "armed" : "off"));
  if (c.timer_tsc) c.timer_tsc = 1;
  if (c.rnr_tsc) c.rnr_tsc = 1;
  poll(1);
}

void Session::step_modify(Reader& in) {
  const int side = side_sel(in.u8());
  const unsigned to = in.u8() % 3;
  Side& S = sides_[side];
  trace(fmt("modify QP %c -> %s", side ? 'B' : 'A', to == 0 ? "ERROR" : to == 1 ? "RESET, RTS" : "ERROR, RESET, RTS"));
  if (to != 1) {
    const Snapshot before = snapshot();
    S.qp->modify(QpState::kError, {});
    observe(before);
    if (to == 0) return;
    poll(1);
  }
  const Snapshot before = snapshot();
  S.qp->modify(QpState::kReset, {});
  observe(before);
  reconnect(side);
}

void Session::step_recreate(Reader& in) {
  const int side = side_sel(in.u8());
  Side& S = sides_[side];
  trace(fmt("recreate QP %c (qpn 0x%x)", side ? 'B' : 'A', S.qp->qpn()));
  dev_.destroy_qp(S.qp);
  S.qp = nullptr;
  // Its WRs die with it (no completions); windows bound to it are no longer usable.
  for (MwRec& w : mws_)
    if (w.allocated && w.state == MwRec::kBound && w.side == side && w.serial == S.serial) {
      w.state = MwRec::kInvalidated;
      kill_key(w.key);
    }
  // A bind it had not completed may have run: its key is one the window may now have.
  for (const SendRec& r : S.sends)
    if (!r.completed && r.wr.opcode == WrOpcode::kBindMw && nic::is_mw_key(r.wr.bind.mw_key))
      if (MwRec* w = mw_by_index(nic::key_index(r.wr.bind.mw_key)))
        w->keys.push_back(nic::make_key(w->index, r.wr.bind.new_key));
  S.sends.clear();
  S.recvs.clear();
  S.send_at.clear();
  S.recv_at.clear();
  S.posted_sends = S.posted_recvs = 0;
  S.serial++;
  connect(side);
}

void Session::step_respond(Reader& in) {
  const int side = side_sel(in.u8());
  const unsigned kind = in.u8() % 6;
  const uint8_t fill = in.u8();
  const nic::Qp::Impl* im = sides_[side].qp->impl();
  const nic::SendWqe* w = outstanding(side, 0);
  const uint32_t dest = sides_[side].qp->qpn();
  const uint32_t mtu = cfg_.mtu;
  auto ack = [&](uint8_t opcode, uint32_t psn, uint8_t syndrome) {
    wire::RocePacket p;
    p.bth.opcode = opcode;
    p.bth.dest_qp = dest;
    p.bth.psn = psn & wire::kPsnMask;
    p.aeth.syndrome = syndrome;
    p.aeth.msn = im->resp.msn & wire::kPsnMask;
    p.atomic_ack.orig = uint64_t(fill) * 0x0101010101010101ull;
    send_frame(p, 0, nullptr, false);
  };
  trace(fmt("respond QP %c kind %u", side ? 'B' : 'A', kind));
  switch (kind) {
    case 0: if (w) ack(wire::kRcAck, w->last_psn, 0x1f); break;
    case 1:
      if (w && w->wr.opcode == WrOpcode::kRead) {
        // Every READ response still missing, with the right PSNs and lengths.
        std::vector<uint8_t> data(mtu, fill);
        uint32_t placed = w->placed - w->placed % mtu;
        for (uint32_t psn = w->first_psn + placed / mtu; placed < w->length || (w->length == 0 && placed == 0); psn++) {
          const uint32_t n = std::min(w->length - placed, mtu);
          const bool first = placed == 0, last = placed + n >= w->length;
          wire::RocePacket p;
          p.bth.opcode = first && last ? wire::kRcReadResponseOnly : first ? wire::kRcReadResponseFirst
                         : last ? wire::kRcReadResponseLast : wire::kRcReadResponseMiddle;
          p.bth.dest_qp = dest;
          p.bth.psn = psn & wire::kPsnMask;
          p.aeth.syndrome = 0x1f;
          p.payload = data.data();
          p.payload_len = n;
          send_frame(p, 0, nullptr, false);
          placed += n;
          if (n == 0) break;
        }
      }
      break;
    case 2: if (w) ack(wire::kRcAtomicAck, w->first_psn, 0x1f); break;
    case 3: ack(wire::kRcAck, im->req.psn - 1, 0x1f); break;
    case 4: ack(wire::kRcAck, im->comp.psn, uint8_t(0x60 | fill % 4)); break;
    default: ack(wire::kRcAck, im->comp.psn, uint8_t(0x20 | fill % 32)); break;
  }
  poll(2);
}

// ---- the engine and the checks ----------------------------------------------------------------

Snapshot Session::snapshot() const {
  Snapshot s;
  s.mrs = mrs_;
  s.mws = mws_;
  for (int i = 0; i < 2; i++) {
    const Side& S = sides_[i];
    s.qps[i] = {S.qp != nullptr, S.serial, pd1_, S.qp ? S.qp->qpn() : 0};
    if (!S.qp) continue;
    for (const RecvRec& r : S.recvs)
      if (!r.completed)
        for (unsigned k = 0; k < r.wr.num_sge && k < nic::kMaxSge; k++)
          s.locals.push_back({i, pd1_, r.wr.sge[k].lkey, r.wr.sge[k].addr, r.wr.sge[k].length, false});
    for (const SendRec& r : S.sends) {
      if (r.completed) continue;
      if (is_sink_op(r.wr.opcode) && !(r.wr.flags & nic::kWrInline))
        for (unsigned k = 0; k < r.wr.num_sge && k < nic::kMaxSge; k++)
          s.locals.push_back({i, pd1_, r.wr.sge[k].lkey, r.wr.sge[k].addr, r.wr.sge[k].length, true});
      if (r.wr.opcode == WrOpcode::kBindMw)
        s.binds.push_back({i, S.serial, nic::make_key(nic::key_index(r.wr.bind.mw_key), r.wr.bind.new_key),
                           r.wr.bind.addr, r.wr.bind.length, r.wr.bind.access});
    }
  }
  return s;
}

void Session::poll(unsigned n) {
  for (unsigned i = 0; i < n && polls_ < kMaxPolls; i++) {
    const Snapshot before = snapshot();
    dev_.poll();
    polls_++;
    observe(before);
  }
}

void Session::observe(const Snapshot& before) {
  drain_peer(&before);
  process_cqs();
  check_memory(before);
}

void Session::drain_peer(const Snapshot* before) {
  rte_mbuf* pk[32];
  uint16_t n;
  while ((n = G->peer.rx_burst(pk, 32)) > 0) {
    for (uint16_t i = 0; i < n; i++) {
      rte_mbuf* m = pk[i];
      wire::RocePacket p;
      // A zero-copy frame comes as a chain (headers, payload where it lies, pad and ICRC).
      if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) violation("tx-chain", "a chained frame that does not fit one mbuf");
      const wire::Reject r = wire::decode_frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, &p);
      if (r != wire::Reject::kOk) {
        violation("tx-malformed", fmt("the device sent a frame of %u bytes that does not decode: %s", m->data_len,
                                      wire::reject_name(r)));
      } else {
        const wire::OpKind k = wire::opcode_info(p.bth.opcode).kind;
        const bool request = k == wire::OpKind::kSend || k == wire::OpKind::kWrite ||
                             k == wire::OpKind::kReadRequest || k == wire::OpKind::kAtomic;
        for (int s = 0; s < 2; s++) {
          if (!sides_[s].qp || p.bth.dest_qp != kPeerQpn[s]) continue;
          if (request) sides_[s].tx_psns.insert(p.bth.psn);
          if (k == wire::OpKind::kReadResponse && before) check_read_response(s, p, *before);
        }
        if (G->trace) std::fprintf(stderr, "    device sent %s\n", describe_packet(p).c_str());
      }
      rte_pktmbuf_free(m);
    }
  }
}

/// A READ response the device sent on QP `side` must carry bytes of a READ the peer asked for
/// there, from where it asked, through a key that grants remote read over them (before or
/// after this iteration); bytes that changed during the iteration are not compared.
void Session::check_read_response(int side, const wire::RocePacket& p, const Snapshot& before) {
  if (p.payload_len == 0) return;
  const Snapshot after = snapshot();
  const uint8_t* a = arena_.get();
  const std::vector<ReadRec>& reads = reads_[sides_[side].qp->qpn()];
  for (auto it = reads.rbegin(); it != reads.rend(); ++it) {
    const int32_t k = nic::psn_diff(p.bth.psn, it->psn);
    if (k < 0 || uint32_t(k) >= it->npkts) continue;
    const uint64_t off = uint64_t(k) * cfg_.mtu;
    if (off + p.payload_len > it->len) continue;
    const uint64_t va = it->va + off;
    if (!before.grants(side, it->rkey, va, p.payload_len, kAccessRemoteRead) &&
        !after.grants(side, it->rkey, va, p.payload_len, kAccessRemoteRead))
      continue;
    if (va < base_ || va - base_ > kArena - p.payload_len) continue;  // a grant outside the arena: impossible
    bool same = true;
    for (uint32_t i = 0; i < p.payload_len && same; i++) {
      const uint64_t o = va - base_ + i;
      same = a[o] != shadow_[o] || a[o] == p.payload[i];  // changed in this iteration: not compared
    }
    if (same) return;
  }
  violation("read-leak", fmt("QP %c sent %s PSN 0x%06x with %u bytes that no granted READ of the peer's covers "
                             "(%zu READ requests recorded)",
                             side ? 'B' : 'A', op_name(p.bth.opcode), p.bth.psn, p.payload_len, reads.size()));
}

void Session::process_cqs() {
  Completion c[64];
  for (int s = 0; s < 2; s++) {
    // Receive side first: a remote invalidate that ran before a bind of the same window in
    // one iteration is then seen before the bind's completion.
    for (unsigned n; sides_[s].rcq && (n = sides_[s].rcq->poll(c, 64)) > 0;)
      for (unsigned i = 0; i < n; i++) on_recv_completion(s, c[i]);
    for (unsigned n; sides_[s].scq && (n = sides_[s].scq->poll(c, 64)) > 0;)
      for (unsigned i = 0; i < n; i++) on_send_completion(s, c[i]);
  }
}

void Session::on_send_completion(int side, const Completion& c) {
  Side& S = sides_[side];
  const char q = side ? 'B' : 'A';
  if (G->trace)
    std::fprintf(stderr, "    QP %c send completion wr_id 0x%" PRIx64 " status %s\n", q, c.wr_id, nic::wc_status_name(c.status));
  if (c.qpn != S.qp->qpn())
    violation("completion-qpn", fmt("send completion wr_id 0x%" PRIx64 " on QP %c's CQ says qpn 0x%x", c.wr_id, q, c.qpn));
  auto it = S.send_at.find(c.wr_id);
  if (it == S.send_at.end()) {
    violation("completion-unknown", fmt("send completion for wr_id 0x%" PRIx64 " (status %s), never posted on QP %c", c.wr_id,
                                        nic::wc_status_name(c.status), q));
    return;
  }
  const size_t at = it->second;
  SendRec& r = S.sends[at];
  if (r.completed) {
    violation(r.implicit ? "completion-order" : "completion-twice",
              fmt("%s wr_id 0x%" PRIx64 " on QP %c completed again (status %s)%s", wr_name(r.wr.opcode), c.wr_id, q,
                  nic::wc_status_name(c.status), r.implicit ? ", after a later WR had completed" : ""));
    return;
  }
  for (size_t j = 0; j < at; j++) {
    SendRec& e = S.sends[j];
    if (e.completed) continue;
    if (e.signaled)
      violation("completion-order", fmt("%s wr_id 0x%" PRIx64 " completed (%s) before the earlier %s wr_id 0x%" PRIx64 " on QP %c",
                                        wr_name(r.wr.opcode), c.wr_id, nic::wc_status_name(c.status), wr_name(e.wr.opcode),
                                        e.wr_id, q));
    e.completed = e.implicit = true;
  }
  r.completed = true;
  if (r.wr.opcode == WrOpcode::kBindMw && c.status != WcStatus::kSuccess)  // if it ran anyway, this key works
    kill_key(nic::make_key(nic::key_index(r.wr.bind.mw_key), r.wr.bind.new_key));
  if (c.opcode != wc_for(r.wr.opcode))
    violation("completion-opcode", fmt("%s wr_id 0x%" PRIx64 " completed with opcode %u", wr_name(r.wr.opcode), c.wr_id, unsigned(c.opcode)));
  const nic::SendWqe* self = nullptr;
  for (const nic::SendWqe& e : S.qp->impl()->req.sq)
    if (e.wr.wr_id == c.wr_id) self = &e;
  if ((c.status == WcStatus::kLocalProtection || c.status == WcStatus::kLocalLength ||
       c.status == WcStatus::kLocalQpOperation || c.status == WcStatus::kMwBind) &&
      self && !self->psn_assigned && self->state == nic::WqeState::kError) {
    // A WR that fails before any of it went out (FETCH, or a bind / local invalidate) fails
    // when the requester reaches it, in order: the QP is in error from then on (IBTA; rxe
    // stops there), so nothing posted after it may go out.
    S.local_error_at = std::min(S.local_error_at, at);
    for (size_t j = at + 1; j < S.sends.size(); j++)
      for (const nic::SendWqe& e : S.qp->impl()->req.sq)
        if (e.wr.wr_id == S.sends[j].wr_id && e.psn_assigned)
          violation("sent-after-error",
                    fmt("%s wr_id 0x%" PRIx64 " on QP %c failed locally (%s), yet the later %s wr_id 0x%" PRIx64
                        " went out on the wire (PSN 0x%06x)",
                        wr_name(r.wr.opcode), c.wr_id, q, nic::wc_status_name(c.status), wr_name(S.sends[j].wr.opcode),
                        S.sends[j].wr_id, e.first_psn));
  }
  if (c.status != WcStatus::kSuccess) return;
  if (at > S.local_error_at)  // ... nor run at all
    violation("executed-after-error",
              fmt("%s wr_id 0x%" PRIx64 " on QP %c completed successfully, but the earlier %s wr_id 0x%" PRIx64
                  " had failed locally: it must have been flushed, not executed",
                  wr_name(r.wr.opcode), c.wr_id, q, wr_name(S.sends[S.local_error_at].wr.opcode),
                  S.sends[S.local_error_at].wr_id));

  const WrOpcode op = r.wr.opcode;
  if (op != WrOpcode::kBindMw && op != WrOpcode::kLocalInv) {
    // A success means the peer acknowledged what this QP sent: all of it must have been sent.
    const nic::SendWqe* w = nullptr;
    for (const nic::SendWqe& e : S.qp->impl()->req.sq)
      if (e.wr.wr_id == c.wr_id && e.psn_assigned) w = &e;
    if (!w) return;  // slot reused since: nothing to compare with
    const uint32_t n = is_sink_op(op) ? 1 : uint32_t(nic::psn_diff(w->last_psn, w->first_psn)) + 1;
    for (uint32_t k = 0; k < n; k++) {
      const uint32_t psn = nic::psn_add(w->first_psn, k);
      if (!S.tx_psns.count(psn))
        violation("completion-unsent",
                  fmt("%s wr_id 0x%" PRIx64 " on QP %c completed successfully, but its packet PSN 0x%06x (of 0x%06x..0x%06x, "
                      "%u bytes) was never sent",
                      wr_name(op), c.wr_id, q, psn, w->first_psn, w->last_psn, w->length));
    }
    return;
  }
  if (op == WrOpcode::kLocalInv) {
    const uint32_t key = r.wr.invalidate_rkey;
    MwRec* w = nic::is_mw_key(key) ? mw_by_index(nic::key_index(key)) : nullptr;
    if (r.window_handle && (!w || w->handle != r.window_handle)) return;  // ran before the window was deallocated
    if (w && w->state == MwRec::kBound && (w->key == key || w->handle == key)) {
      if (w->side != side || w->serial != S.serial)
        violation("mw-invalidate-foreign-qp", fmt("LOCAL_INV on QP %c invalidated window 0x%x, bound to QP %c", q, w->key,
                                                  w->side ? 'B' : 'A'));
      w->state = MwRec::kInvalidated;
      kill_key(w->key);
      return;
    }
    // It may have run before later binds and invalidations that completed first; but the key
    // must be one the window had (or a bind still outstanding asks for).
    bool known = w && std::find(w->keys.begin(), w->keys.end(), key) != w->keys.end();
    for (const uint32_t k : pending_bind_keys()) known |= k == key;
    if (!known)
      violation("mw-invalidate-bad-key", fmt("LOCAL_INV of 0x%x succeeded on QP %c, but no window ever had that key", key, q));
    return;
  }
  // A bind: it must have been allowed, and the window is now bound under the key asked for.
  const nic::MwBind& b = r.wr.bind;
  const uint32_t index = nic::key_index(b.mw_key);
  const uint32_t want = nic::make_key(index, b.new_key);
  if (c.imm_or_inv != want)
    violation("bind-key", fmt("bind wr_id 0x%" PRIx64 " reported key 0x%x, asked for 0x%x", c.wr_id, c.imm_or_inv, want));
  MwRec* w = nic::is_mw_key(b.mw_key) ? mw_by_index(index) : nullptr;
  if (r.window_handle && (!w || w->handle != r.window_handle)) return;  // ran before the window was deallocated
  bool inv_pending = false;  // an invalidate that may have run, not completed yet
  for (const Side& o : sides_)
    for (const SendRec& e : o.sends)
      inv_pending |= !e.completed && e.wr.opcode == WrOpcode::kLocalInv && nic::key_index(e.wr.invalidate_rkey) == index;
  const MrRec* m = mr_by_key(b.mr_lkey);
  std::string why;
  if (!w) why = "the window is not allocated";
  else if (w->state == MwRec::kBound && !inv_pending) why = fmt("the window is still bound (key 0x%x)", w->key);
  else if (w->pd != pd1_) why = "the window is in another PD";
  else if (!m) why = "the region key names no region";
  else if (m->pd != pd1_) why = "the region is in another PD";
  else if (!(m->access & kAccessMwBind)) why = "the region does not allow binds";
  else if (b.length == 0 || !range_inside(m->addr, m->len, b.addr, b.length)) why = "the range is not inside the region";
  else if (b.access == 0 || (b.access & ~kRemoteRights)) why = fmt("access 0x%x is not a set of remote rights", b.access);
  else if ((b.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(m->access & kAccessLocalWrite))
    why = "remote write/atomic over a region without local write";
  else if (b.new_key == nic::key_byte(w->key)) why = "the new key byte is the old one";
  if (!why.empty()) {
    violation("bind-rules", fmt("bind wr_id 0x%" PRIx64 " on QP %c succeeded but %s: window 0x%x, region 0x%x, [+0x%" PRIx64 ", +%" PRIu64
                                "), access 0x%x",
                                c.wr_id, q, why.c_str(), b.mw_key, b.mr_lkey, b.addr - base_, b.length, b.access));
    if (!w) return;
  }
  if (w->key != c.imm_or_inv) kill_key(w->key);
  w->state = MwRec::kBound;
  w->key = c.imm_or_inv;
  w->keys.push_back(w->key);
  w->mr_key = b.mr_lkey;
  w->addr = b.addr;
  w->len = b.length;
  w->access = b.access;
  w->side = side;
  w->serial = S.serial;
}

void Session::on_recv_completion(int side, const Completion& c) {
  Side& S = sides_[side];
  const char q = side ? 'B' : 'A';
  if (G->trace)
    std::fprintf(stderr, "    QP %c recv completion wr_id 0x%" PRIx64 " status %s opcode %u len %u\n", q, c.wr_id,
                 nic::wc_status_name(c.status), unsigned(c.opcode), c.byte_len);
  if (c.qpn != S.qp->qpn())
    violation("completion-qpn", fmt("receive completion wr_id 0x%" PRIx64 " on QP %c's CQ says qpn 0x%x", c.wr_id, q, c.qpn));
  if (c.opcode == WcOpcode::kRemoteInvalidate) {
    MwRec* w = nullptr;
    for (MwRec& e : mws_)
      if (e.allocated && e.context == c.wr_id) w = &e;
    if (!w) {
      violation("completion-unknown", fmt("remote-invalidate completion on QP %c for context 0x%" PRIx64 ", no window has it", q, c.wr_id));
      return;
    }
    if (w->state == MwRec::kBound && w->key == c.imm_or_inv) {
      if (w->side != side || w->serial != S.serial)
        violation("mw-invalidate-foreign-qp", fmt("a SEND WITH INVALIDATE on QP %c invalidated window 0x%x, bound to QP %c", q,
                                                  w->key, w->side ? 'B' : 'A'));
      w->state = MwRec::kInvalidated;
      kill_key(w->key);
      return;
    }
    for (const Snapshot::PendingBind& b : snapshot().binds)
      if (b.key == c.imm_or_inv) return;  // bound by a bind whose completion is still to come
    violation("mw-invalidate-unbound", fmt("remote invalidate of 0x%x on QP %c succeeded, but window 0x%x is %s", c.imm_or_inv, q,
                                           w->key, w->state == MwRec::kBound ? "bound under another key" : "not bound"));
    return;
  }
  auto it = S.recv_at.find(c.wr_id);
  if (it == S.recv_at.end()) {
    violation("completion-unknown", fmt("receive completion for wr_id 0x%" PRIx64 " (status %s), never posted on QP %c", c.wr_id,
                                        nic::wc_status_name(c.status), q));
    return;
  }
  RecvRec& r = S.recvs[it->second];
  if (r.completed) {
    violation("completion-twice", fmt("receive wr_id 0x%" PRIx64 " on QP %c completed again (status %s)", c.wr_id, q,
                                      nic::wc_status_name(c.status)));
    return;
  }
  for (size_t j = 0; j < it->second; j++)
    if (!S.recvs[j].completed)
      violation("completion-order", fmt("receive wr_id 0x%" PRIx64 " completed before the earlier receive 0x%" PRIx64 " on QP %c",
                                        c.wr_id, S.recvs[j].wr_id, q));
  r.completed = true;
  if (c.opcode != WcOpcode::kRecv && c.opcode != WcOpcode::kRecvWriteImm)
    violation("completion-opcode", fmt("receive wr_id 0x%" PRIx64 " completed with opcode %u", c.wr_id, unsigned(c.opcode)));
  uint64_t capacity = 0;
  for (unsigned k = 0; k < r.wr.num_sge; k++) capacity += r.wr.sge[k].length;
  if (c.status == WcStatus::kSuccess && c.opcode == WcOpcode::kRecv && c.byte_len > capacity)
    violation("completion-length", fmt("receive wr_id 0x%" PRIx64 " reports %u bytes, it holds %" PRIu64, c.wr_id, c.byte_len, capacity));
}

void Session::check_memory(const Snapshot& before) {
  const uint8_t* a = arena_.get();
  uint8_t* s = shadow_.data();
  if (std::memcmp(a, s, kArena) == 0) return;
  uint64_t lo = 0, hi = kArena;
  while (a[lo] == s[lo]) lo++;
  while (a[hi - 1] == s[hi - 1]) hi--;
  const Snapshot after = snapshot();
  AllowedMask m;
  m.reset(lo, hi);
  mark_allowed(before, records_, base_, &m);
  mark_allowed(after, records_, base_, &m);
  // The first stretch of bytes changed without a grant, and what kind of stretch it is.
  for (uint64_t i = lo; i < hi; i++) {
    if (a[i] == s[i] || (m.at(i) & AllowedMask::kAllowed)) continue;
    const uint8_t why = m.at(i);
    uint64_t j = i;
    while (j < hi && (a[j] != s[j] || j == i) && !(m.at(j) & AllowedMask::kAllowed) && m.at(j) == why) j++;
    std::string bytes;
    for (uint64_t k = i; k < j && k < i + 8; k++) bytes += fmt(" %02x->%02x", s[k], a[k]);
    const char* inv = (why & AllowedMask::kRevoked) ? "memory-revoked" : (why & AllowedMask::kStaleSink) ? "memory-sink-stale" : "memory";
    const char* what = (why & AllowedMask::kRevoked)
                           ? "the peer was granted it when it named the range, but that key is no longer valid"
                       : (why & AllowedMask::kStaleSink) ? "it is in the sink of an outstanding READ/atomic, but in no live, locally writable region of the QP's PD (deregistered since the post?)"
                                                         : "no valid key, receive or sink covers it";
    std::string grants;
    for (const auto& [qpn, recs] : records_)
      for (const RemoteRec& r : recs)
        if (base_ + i >= r.va && base_ + i - r.va < r.len)
          grants += fmt("\n    the peer named it to qpn 0x%x: key 0x%x [+0x%" PRIx64 ", +%" PRIu64 ") need 0x%x (%s when sent)",
                        qpn, r.key, r.va - base_, r.len, r.need, r.granted_when_sent ? "granted" : "not granted");
    violation(inv, fmt("arena bytes [+0x%" PRIx64 ", +0x%" PRIx64 ") changed (%s ...): %s%s", i, j, bytes.c_str(), what, grants.c_str()));
    i = j;
  }
  std::memcpy(s, a, kArena);
}

}  // namespace
}  // namespace ndnic::fuzz

using namespace ndnic;

/// The engine's randomness, made repeatable (see g_fixed_random); the real one otherwise.
extern "C" ssize_t getrandom(void* buffer, size_t length, unsigned int flags) {
  if (!fuzz::g_fixed_random) return syscall(SYS_getrandom, buffer, length, flags);
  auto* b = static_cast<uint8_t*>(buffer);
  for (size_t i = 0; i < length; i++) {
    fuzz::g_random_state = fuzz::g_random_state * 6364136223846793005ull + 1442695040888963407ull;
    b[i] = uint8_t(fuzz::g_random_state >> 56);
  }
  return ssize_t(length);
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  fuzz::G = new fuzz::Globals;
  if (const char* t = std::getenv("NDNIC_FUZZ_TRACE")) fuzz::G->trace = *t && *t != '0';
  if (const char* seed = std::getenv("NDNIC_FUZZ_SEED")) fuzz::g_random_seed = std::strtoull(seed, nullptr, 0);
  if (const char* ign = std::getenv("NDNIC_FUZZ_IGNORE")) {
    std::string s = ign;
    for (size_t p = 0; p <= s.size();) {
      const size_t c = s.find(',', p);
      const std::string name = s.substr(p, c == std::string::npos ? std::string::npos : c - p);
      if (!name.empty()) fuzz::G->ignore.insert(name);
      if (c == std::string::npos) break;
      p = c + 1;
    }
  }
  // --no-huge: meson runs this beside other tests, which the machine's few hugepages are for
  // (taken here, an integration test's EAL found 4 MB left and failed).
  std::vector<std::string> args = {"fuzz_transport", "-l", "0", "--no-pci", "--log-level=error", "--no-telemetry",
                                   "--no-huge", "-m", "256", "--file-prefix",
                                   "ndnic-fuzz-" + std::to_string(getpid()), "--"};
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  glue::EalDefaults defaults;
  defaults.memory_mb = 256;
  const glue::EalResult eal = glue::eal_init(int(av.size()), av.data(), defaults);
  if (!eal.ok) {
    std::fprintf(stderr, "ndnic-stateful: EAL: %s\n", eal.error.c_str());
    std::exit(1);
  }
  std::atexit([] { glue::eal_cleanup(); });
  uint16_t pv, pp;
  if (!glue::make_ring_pair("sfuzz", &pv, &pp)) {
    std::fprintf(stderr, "ndnic-stateful: cannot create the net_ring pair\n");
    std::exit(1);
  }
  glue::PortConfig cv, cp;
  cv.device = std::to_string(pv);
  cp.device = std::to_string(pp);
  cv.ipv4 = fuzz::kIpVictim;
  cp.ipv4 = fuzz::kIpPeer;
  cv.mbuf_data_room = cp.mbuf_data_room = 4096 + 256 + RTE_PKTMBUF_HEADROOM;
  cv.mbufs = cp.mbufs = 4095;
  cv.mtu = cp.mtu = 4200;
  cv.mac = {{0x02, 0x00, 0x00, 0x4d, 0x00, 0x02}};
  cp.mac = {{0x02, 0x00, 0x00, 0x4d, 0x00, 0x01}};
  // The peer sees every frame the device sends, whatever MAC it went to: a QP made without the
  // peer's MAC (header bit) learns it from the first frame, which may be forged.
  cp.promiscuous = true;
  if (!fuzz::G->victim.open(cv) || !fuzz::G->peer.open(cp)) {
    std::fprintf(stderr, "ndnic-stateful: ports: %s %s\n", fuzz::G->victim.error().c_str(), fuzz::G->peer.error().c_str());
    std::exit(1);
  }
  fuzz::G->base_in_use = fuzz::mbufs_in_use();
  fuzz::G->base_memzones = fuzz::memzone_count();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::g_random_state = fuzz::g_random_seed;
  fuzz::g_fixed_random = true;
  {
    fuzz::Session s(data, size);
    s.run();
  }
  fuzz::g_fixed_random = false;
  return 0;
}
