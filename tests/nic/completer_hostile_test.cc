// The requester's completer against responses it must not believe, and the requester against
// memory that went away under an outstanding request. RoCE has no authentication: anyone on
// the segment can forge A's frames to B, so forgeries here are put on the wire at A's port.
// - ACKs and NAKs for PSNs B never sent complete nothing and move nothing;
// - READ responses out of their FIRST/MIDDLE/LAST/ONLY place, or longer than what is due,
//   write nothing outside what the READ asked for and never make B ask for more;
// - a region deregistered while a request still needs it (a retransmission's source, a
//   READ/atomic result's sink) fails the request with kLocalProtection, untouched;
// - RNR NAKs spend the RNR retry budget only, whatever the message's size.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <rte_mbuf.h>

#include "tests/fixtures/two_nodes.h"
#include "tests/nic/hostile.h"
#include "ndnic/wire/packet.h"

namespace ndnic::nic::testing {
namespace {

constexpr uint8_t kAck = 0x1F;         ///< ACK, unlimited credits
constexpr uint8_t kNakPsnSeq = 0x60;
constexpr uint8_t kRnrNak = 0x20 | 1;  ///< RNR NAK, 10 us
constexpr uint8_t kForged = 0xEE;      ///< payload of every forged response
constexpr uint8_t kGuard = 0x5A;       ///< memory nothing may write
constexpr uint8_t kPoison = 0xDB;      ///< memory reused by someone else after deregistration
constexpr uint32_t kMtu = 1024;        ///< ConnectOptions' default path MTU
constexpr uint32_t kWindow = 256;      ///< the requester's window (kMaxUnackedPsns), in PSNs

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

/// A request B sent, as the test (standing in for A) read it off A's port.
struct Seen {
  uint8_t opcode;
  uint32_t psn;
  uint64_t va;
  uint32_t dma_len;
};

class CompleterHostile : public TwoNodes {
 protected:
  /// A SEND from A to B: B learns A's MAC from it (and A learns B's by ARP), so later tests
  /// may stop polling A's device without B waiting on an ARP reply. Takes none of B's PSNs.
  void warm_up() {
    ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, kBufSize - 64, 64, 99)));
    ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, kBufSize - 64, 64, 99)));
    std::vector<Completion> sc, rc;
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
    ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
    ASSERT_EQ(sc[0].status, WcStatus::kSuccess);
  }

  /// Posts a SEND of `big` bytes (wr_id 1) and then `w` (its `len` bytes land at B's `big`),
  /// with B's receives for both, and polls A alone until its window is full: B is not polled,
  /// so no ACK opens the window, and `w` waits behind it, fetched but not yet sent.
  void queue_behind_full_window(const SendWr& w, uint32_t big, uint32_t len) {
    ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, big, 0)));
    ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, big, len, 1)));
    const uint64_t tx0 = a->qp->counters().tx_packets;
    ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, big, 1)));
    ASSERT_TRUE(a->qp->post_send(w));
    for (int i = 0; i < 1000 && a->qp->counters().tx_packets < tx0 + kWindow; i++) a->dev.poll();
    ASSERT_GE(a->qp->counters().tx_packets, tx0 + kWindow) << "the window did not fill";
  }

  /// A response to B's QP as if from A's QP, put on the wire from A's port; `corrupt`: one
  /// payload byte flipped after the ICRC was computed.
  void inject(uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t payload_len = 0, bool corrupt = false) {
    wire::RocePacket p = frame_between(*a, *b, opcode, b->qp->qpn(), psn & wire::kPsnMask);
    p.aeth.syndrome = syndrome;
    std::vector<uint8_t> payload(payload_len, kForged);
    p.payload = payload.data();
    p.payload_len = payload_len;
    std::vector<uint8_t> f(wire::frame_length(p));
    ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
    if (corrupt) f[wire::header_length(p) + payload_len / 2] ^= 0x01;
    rte_mbuf* m = rte_pktmbuf_alloc(a->port.mempool());
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
    ASSERT_EQ(a->port.tx_burst(&m, 1), 1);
  }

  /// Polls B alone for `ms`, A's device not at all: what B sends is read off A's port into
  /// `seen` (and ARP answered there), so the test alone answers B.
  void poll_b_as_peer(int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    do {
      b->dev.poll();
      rte_mbuf* m[32];
      const uint16_t n = a->port.rx_burst(m, 32);
      for (uint16_t k = 0; k < n; k++) {
        wire::RocePacket p;
        if (m[k]->nb_segs > 1) {
          ASSERT_EQ(rte_pktmbuf_linearize(m[k]), 0);  // a zero-copy chain
        }
        if (wire::decode_frame(rte_pktmbuf_mtod(m[k], const uint8_t*), rte_pktmbuf_data_len(m[k]), &p) ==
            wire::Reject::kOk)
          seen.push_back({p.bth.opcode, p.bth.psn, p.reth.va, p.reth.dma_len});
        rte_pktmbuf_free(m[k]);
      }
    } while (std::chrono::steady_clock::now() < end);
  }

  /// B's send completions so far, without polling anything.
  size_t b_send_completions(std::vector<Completion>* out) {
    Completion c[16];
    const unsigned k = b->scq->poll(c, 16);
    out->insert(out->end(), c, c + k);
    return out->size();
  }

  std::vector<Seen> seen;
};

// Hole: an ACK in the "future" (at or past the next PSN to send) completed the oldest WQE, a
// long message among them, when only part of it had been sent; the rest was never sent and
// the receiver's message never ended. A NAK past what was sent moved the acknowledged PSN
// there and made the go-back skip what had not been sent.
TEST_F(CompleterHostile, AcksAndNaksForPsnsNeverSentChangeNothing) {
  constexpr uint32_t kLen = 512 * 1024;  // 512 packets: twice the window, so never all sent
  constexpr uint32_t kPkts = kLen / kMtu;
  struct Forgery {
    const char* what;
    uint8_t syndrome;
    uint32_t psn_off;  ///< from the message's first PSN
  };
  const Forgery forgeries[] = {
      {"ACK of the message's last PSN", kAck, kPkts - 1},
      {"ACK one past the window", kAck, kWindow},
      {"ACK in the far half of PSN space", kAck, 0x7FFF00},
      {"PSN sequence NAK past what was sent", kNakPsnSeq, kWindow + 44},
      {"RNR NAK past what was sent", kRnrNak, kWindow + 44},
  };
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.what);
    connect();
    warm_up();
    const uint32_t first = opts.psn_b;  // B has sent nothing yet
    for (uint32_t i = 0; i < kLen; i++) b->buf[i] = uint8_t(i * 7 + i / 1000);
    std::fill(a->buf.begin(), a->buf.begin() + kLen, 0);
    ASSERT_TRUE(a->qp->post_recv(recv_wr(*a, 0, kLen, 1)));
    ASSERT_TRUE(b->qp->post_send(send_wr(WrOpcode::kSend, *b, 0, kLen, 2)));
    // B sends what its window allows; A's device hears none of it yet, so nothing is ACKed.
    for (int i = 0; i < 10; i++) b->dev.poll();
    const uint64_t rx0 = b->qp->counters().rx_packets;
    inject(wire::kRcAck, first + f.psn_off, f.syndrome);
    for (int i = 0; i < 10; i++) b->dev.poll();
    ASSERT_EQ(b->qp->counters().rx_packets, rx0 + 1) << "the forgery did not reach B's QP";
    std::vector<Completion> sc;
    EXPECT_EQ(b_send_completions(&sc), 0u) << "completed by a forged acknowledgement";
    EXPECT_EQ(b->qp->state(), QpState::kRts);

    // The real A now receives it all: the message arrives whole and completes on both sides.
    std::vector<Completion> rc;
    ASSERT_TRUE(wait_cq(a->rcq, 1, &rc, 10000));
    ASSERT_TRUE(sc.size() == 1 || wait_cq(b->scq, 1, &sc, 10000));
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess) << wc_status_name(rc[0].status);
    EXPECT_EQ(rc[0].byte_len, kLen);
    EXPECT_EQ(0, std::memcmp(a->buf.data(), b->buf.data(), kLen));

    // And the QP keeps working, both ways.
    for (uint32_t i = 0; i < 3000; i++) b->buf[kLen + i] = uint8_t(i * 3 + 1);
    ASSERT_TRUE(a->qp->post_recv(recv_wr(*a, kLen, 3000, 3)));
    ASSERT_TRUE(b->qp->post_send(send_wr(WrOpcode::kSend, *b, kLen, 3000, 4)));
    ASSERT_TRUE(wait_cq(b->scq, 1, &sc));
    ASSERT_TRUE(wait_cq(a->rcq, 1, &rc));
    EXPECT_EQ(sc[1].status, WcStatus::kSuccess) << wc_status_name(sc[1].status);
    EXPECT_EQ(rc[1].byte_len, 3000u);
    EXPECT_EQ(0, std::memcmp(a->buf.data() + kLen, b->buf.data() + kLen, 3000));
  }
}

// A message sent whole but lost on the way: an ACK one past its last PSN (the next PSN to
// send) must neither complete it nor stop the retransmission timer that will deliver it.
TEST_F(CompleterHostile, AckPastTheLastPsnSentLeavesTheTimerArmed) {
  constexpr uint32_t kLen = 3000;  // three packets
  connect();
  warm_up();
  const uint32_t first = opts.psn_b;
  for (uint32_t i = 0; i < kLen; i++) b->buf[i] = uint8_t(i * 11 + 5);
  ASSERT_TRUE(a->qp->post_recv(recv_wr(*a, 0, kLen, 1)));
  FaultConfig lose;
  lose.tx.drop = 1.0;  // every frame B sends is lost
  b->dev.set_faults(&lose);
  const uint64_t tx0 = b->qp->counters().tx_packets;
  ASSERT_TRUE(b->qp->post_send(send_wr(WrOpcode::kSend, *b, 0, kLen, 2)));
  ASSERT_TRUE(run_until([&] { return b->qp->counters().tx_packets >= tx0 + 3; }));
  b->dev.set_faults(nullptr);
  const uint64_t rx0 = b->qp->counters().rx_packets;
  inject(wire::kRcAck, first + 3, kAck);
  for (int i = 0; i < 10; i++) b->dev.poll();
  ASSERT_EQ(b->qp->counters().rx_packets, rx0 + 1) << "the forgery did not reach B's QP";
  std::vector<Completion> sc, rc;
  EXPECT_EQ(b_send_completions(&sc), 0u) << "completed by a forged acknowledgement";
  ASSERT_TRUE(wait_cq(a->rcq, 1, &rc)) << "never retransmitted";
  ASSERT_TRUE(sc.size() == 1 || wait_cq(b->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
  EXPECT_EQ(rc[0].byte_len, kLen);
  EXPECT_EQ(0, std::memcmp(a->buf.data(), b->buf.data(), kLen));
}

// Hole: the completer took a response of any position wherever the PSN fit: a full MIDDLE
// where the short LAST was due, a FIRST for a one-packet READ, an ONLY or LAST longer than
// the MTU were placed, so the bytes counted as placed could pass the READ's length (and the
// go-back arithmetic `length - placed` wrap to ~4 GiB); the READ then hung or completed with
// data put where the peer had no right to put it. A response out of place must fail the READ
// (kBadResponse) before a byte of it is placed, and B must never ask for more than the READ.
TEST_F(CompleterHostile, ReadResponsesOutOfPlaceWriteNothingAndNeverAskForMore) {
  struct Resp {
    uint8_t opcode;
    uint32_t psn_off;
    uint32_t len;
  };
  struct Case {
    const char* what;
    uint32_t read_len;
    std::vector<Resp> resps;  ///< the last one is out of place
    uint32_t placed_ok;       ///< bytes the responses before it may place
  };
  using namespace wire;
  const Case cases[] = {
      {"MIDDLE where the short LAST is due", 1500, {{kRcReadResponseFirst, 0, 1024}, {kRcReadResponseMiddle, 1, 1024}}, 1024},
      {"FIRST of a READ that fits one packet", 500, {{kRcReadResponseFirst, 0, 1024}}, 0},
      {"a second FIRST", 3000, {{kRcReadResponseFirst, 0, 1024}, {kRcReadResponseFirst, 1, 1024}}, 1024},
      {"MIDDLE as the first response", 3000, {{kRcReadResponseMiddle, 0, 1024}}, 0},
      {"ONLY longer than the path MTU", 3000, {{kRcReadResponseOnly, 0, 3000}}, 0},
      {"LAST longer than the path MTU", 3000, {{kRcReadResponseFirst, 0, 1024}, {kRcReadResponseLast, 1, 1976}}, 1024},
  };
  constexpr uint64_t kSink = 100000;  // in B's buffer, with a guard of 4 KiB either side
  constexpr uint32_t kGuardLen = 4096;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    connect();
    warm_up();
    seen.clear();
    std::fill(b->buf.begin() + kSink - kGuardLen, b->buf.begin() + kSink + c.read_len + kGuardLen, kGuard);
    const uint64_t remote = addr(a->buf.data());  // A's device never sees the READ: the test answers
    SendWr rd = send_wr(WrOpcode::kRead, *b, kSink, c.read_len, 1);
    rd.remote_addr = remote;
    rd.rkey = a->mr.rkey;
    ASSERT_TRUE(b->qp->post_send(rd));
    const uint32_t first = opts.psn_b;
    for (int i = 0; i < 200 && seen.empty(); i++) poll_b_as_peer(1);
    ASSERT_FALSE(seen.empty()) << "B sent no READ request";
    ASSERT_EQ(seen[0].opcode, kRcReadRequest);
    const uint64_t rx0 = b->qp->counters().rx_packets;
    for (const Resp& r : c.resps) {
      inject(r.opcode, first + r.psn_off, kAck, r.len);
      poll_b_as_peer(2);
    }
    ASSERT_EQ(b->qp->counters().rx_packets, rx0 + c.resps.size()) << "a forgery did not reach B's QP";
    // An ACK past the READ says the peer went on without B seeing all of its responses: B
    // asks again from the first one it misses (and a READ left waiting would be asked for
    // again by the timer).
    inject(kRcAck, first + (c.read_len + kMtu - 1) / kMtu, kAck);
    std::vector<Completion> sc;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (b_send_completions(&sc) == 0 && std::chrono::steady_clock::now() < end) poll_b_as_peer(1);
    poll_b_as_peer(20);

    for (const Seen& s : seen) {
      if (s.opcode != kRcReadRequest) continue;
      EXPECT_LE(s.dma_len, c.read_len) << "READ request at PSN " << s.psn;
      EXPECT_GE(s.va, remote) << "READ request at PSN " << s.psn;
      EXPECT_LE(s.va + s.dma_len, remote + c.read_len) << "READ request at PSN " << s.psn;
    }
    const uint8_t* sink = b->buf.data() + kSink;
    EXPECT_EQ(std::count(sink, sink + c.placed_ok, kForged), long(c.placed_ok)) << "responses in place were not placed";
    EXPECT_EQ(std::count(sink + c.placed_ok, sink + c.read_len, kGuard), long(c.read_len - c.placed_ok))
        << "the sink was written by a response out of place";
    EXPECT_EQ(std::count(sink - kGuardLen, sink, kGuard), long(kGuardLen)) << "written before the sink";
    EXPECT_EQ(std::count(sink + c.read_len, sink + c.read_len + kGuardLen, kGuard), long(kGuardLen))
        << "written after the sink";
    EXPECT_EQ(sc.size(), 1u) << "the READ neither completed nor failed";
    for (const Completion& done : sc) {
      EXPECT_EQ(done.status, WcStatus::kBadResponse) << wc_status_name(done.status);
    }
    EXPECT_EQ(b->qp->state(), QpState::kError);
  }
}

// Hole: SGE addresses were resolved once, at fetch, and used for every retransmission: after
// the application deregistered (and freed) the region, a retransmission sent whatever the
// memory held by then. Each packet's bytes are checked against the lkey as they are gathered:
// the first transmission of a request queued behind a full window, and a retransmission.
// A READ response's ICRC is checked while its payload is copied into the sink (one read of
// the payload): a corrupt one is dropped as if lost, places nothing that counts, moves no
// state, and the intact one after it completes the READ.
TEST_F(CompleterHostile, ACorruptReadResponseIsDroppedAndTheIntactOneCompletesTheRead) {
  constexpr uint64_t kSink = 200000;
  constexpr uint32_t kLen = 2 * kMtu;
  connect();
  warm_up();
  seen.clear();
  SendWr rd = send_wr(WrOpcode::kRead, *b, kSink, kLen, 1);
  rd.remote_addr = addr(a->buf.data());
  rd.rkey = a->mr.rkey;
  ASSERT_TRUE(b->qp->post_send(rd));
  for (int i = 0; i < 200 && seen.empty(); i++) poll_b_as_peer(1);
  ASSERT_FALSE(seen.empty()) << "B sent no READ request";
  const uint32_t first = opts.psn_b;
  const uint64_t rx0 = b->qp->counters().rx_packets;
  const uint64_t bad0 = b->dev.counters().rejects[wire::Reject::kIcrcMismatch];
  std::vector<Completion> sc;
  inject(wire::kRcReadResponseLast, first + 1, kAck, kMtu, true);  // corrupt, and ahead of the FIRST
  poll_b_as_peer(2);
  for (const bool corrupt : {true, false}) {  // FIRST, corrupt then intact
    inject(wire::kRcReadResponseFirst, first, kAck, kMtu, corrupt);
    poll_b_as_peer(2);
  }
  inject(wire::kRcReadResponseLast, first + 1, kAck, kMtu, true);
  poll_b_as_peer(2);
  EXPECT_EQ(b_send_completions(&sc), 0u) << "a corrupt LAST completed the READ";
  EXPECT_EQ(b->dev.counters().rejects[wire::Reject::kIcrcMismatch], bad0 + 3);
  EXPECT_EQ(b->qp->counters().rx_packets, rx0 + 1) << "a corrupt response was counted as received";
  inject(wire::kRcReadResponseLast, first + 1, kAck, kMtu);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (b_send_completions(&sc) == 0 && std::chrono::steady_clock::now() < end) poll_b_as_peer(1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
  EXPECT_EQ(sc[0].byte_len, kLen);
  const uint8_t* sink = b->buf.data() + kSink;
  EXPECT_EQ(std::count(sink, sink + kLen, kForged), long(kLen));
  EXPECT_EQ(b->qp->state(), QpState::kRts);
}

TEST_F(CompleterHostile, GatherFromADeregisteredRegionFailsWithLocalProtection) {
  constexpr uint32_t kBig = 512 * 1024;  // fills the window: what is posted after it waits
  constexpr uint32_t kLen = 16 * 1024;
  for (const bool retransmission : {false, true}) {
    SCOPED_TRACE(retransmission ? "retransmission" : "first transmission behind a full window");
    connect();
    warm_up();
    std::vector<uint8_t> src(kLen);
    for (uint32_t i = 0; i < kLen; i++) src[i] = uint8_t(i * 5 + 1);
    MrKeys k;
    ASSERT_TRUE(a->dev.register_mr(a->pd, src.data(), src.size(), kAccessLocalWrite, &k));
    SendWr w = send_wr(WrOpcode::kSend, *a, 0, kLen, 2);
    w.sge[0] = {addr(src.data()), kLen, k.lkey};
    std::fill(b->buf.begin(), b->buf.end() - 64, 0);
    std::vector<Completion> sc, rc;
    if (retransmission) {
      ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, kLen, 1)));
      FaultConfig lose;
      lose.tx.drop = 1.0;  // the first transmission is lost: it must be sent again
      a->dev.set_faults(&lose);
      const uint64_t tx0 = a->qp->counters().tx_packets;
      ASSERT_TRUE(a->qp->post_send(w));
      ASSERT_TRUE(run_until([&] { return a->qp->counters().tx_packets >= tx0 + kLen / kMtu; }));
      a->dev.set_faults(nullptr);
    } else {
      ASSERT_NO_FATAL_FAILURE(queue_behind_full_window(w, kBig, kLen));
    }
    // The application takes the region back while the request still needs it; whoever gets
    // the memory next writes into it.
    ASSERT_TRUE(a->dev.deregister_mr(k.lkey));
    std::fill(src.begin(), src.end(), kPoison);
    ASSERT_TRUE(wait_cq(a->scq, retransmission ? 1 : 2, &sc));
    const Completion& bad = sc.back();
    EXPECT_EQ(bad.wr_id, 2u);
    EXPECT_EQ(bad.status, WcStatus::kLocalProtection) << wc_status_name(bad.status);
    if (!retransmission) {
      EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
    }
    EXPECT_EQ(a->qp->state(), QpState::kError);
    run_until([] { return false; }, 20);
    EXPECT_EQ(std::count(b->buf.begin(), b->buf.end(), kPoison), 0) << "freed memory went on the wire";
    const uint64_t landing = retransmission ? 0 : kBig;
    EXPECT_TRUE(std::all_of(b->buf.begin() + landing, b->buf.begin() + landing + kLen, [](uint8_t x) { return x == 0; }));
  }
}

// The other side of the check above: a request waiting behind a full window whose own region
// stays registered goes out intact while another region is deregistered (which makes each
// packet check its lkey again), and while none is (the check at fetch stands), in one piece
// or gathered from two SGEs.
TEST_F(CompleterHostile, ARequestWhoseRegionStaysRegisteredGoesOutIntact) {
  constexpr uint32_t kBig = 512 * 1024;
  constexpr uint32_t kLen = 16 * 1024;
  for (const bool other_deregistered : {false, true}) {
    for (const unsigned sges : {1u, 2u}) {
      SCOPED_TRACE(std::string(other_deregistered ? "another region deregistered" : "no deregistration") +
                   ", SGEs: " + std::to_string(sges));
      connect();
      warm_up();
      std::vector<uint8_t> src(kLen), other(4096);
      for (uint32_t i = 0; i < kLen; i++) src[i] = uint8_t(i * 11 + 3);
      MrKeys k, ko;
      ASSERT_TRUE(a->dev.register_mr(a->pd, src.data(), src.size(), kAccessLocalWrite, &k));
      ASSERT_TRUE(a->dev.register_mr(a->pd, other.data(), other.size(), kAccessLocalWrite, &ko));
      SendWr w = send_wr(WrOpcode::kSend, *a, 0, kLen, 2);
      w.num_sge = sges;
      const uint32_t first = sges == 1 ? kLen : kLen / 2 + 100;
      w.sge[0] = {addr(src.data()), first, k.lkey};
      if (sges == 2) w.sge[1] = {addr(src.data() + first), kLen - first, k.lkey};
      std::fill(b->buf.begin(), b->buf.end() - 64, 0);
      ASSERT_NO_FATAL_FAILURE(queue_behind_full_window(w, kBig, kLen));
      if (other_deregistered) {
        ASSERT_TRUE(a->dev.deregister_mr(ko.lkey));
      }
      std::vector<Completion> sc, rc;
      ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
      ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
      for (const Completion& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
      EXPECT_EQ(rc[1].status, WcStatus::kSuccess) << wc_status_name(rc[1].status);
      EXPECT_EQ(rc[1].byte_len, kLen);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), b->buf.begin() + kBig)) << "the request's bytes did not land";
      EXPECT_EQ(a->qp->state(), QpState::kRts);
      EXPECT_TRUE(a->dev.deregister_mr(k.lkey));
      if (!other_deregistered) {
        EXPECT_TRUE(a->dev.deregister_mr(ko.lkey));
      }
    }
  }
}

// Hole: a READ's or atomic's sink was resolved at fetch; a response arriving after the
// application deregistered the region wrote into memory that was no longer the request's.
TEST_F(CompleterHostile, ResponseIntoADeregisteredSinkFailsWithLocalProtection) {
  constexpr uint32_t kSinkLen = 16 * 1024;
  constexpr uint32_t kAt = 4096;
  for (const WrOpcode op : {WrOpcode::kRead, WrOpcode::kFetchAdd}) {
    SCOPED_TRACE(op == WrOpcode::kRead ? "READ" : "fetch-and-add");
    connect();
    warm_up();
    const uint32_t len = op == WrOpcode::kRead ? 8192 : 8;
    for (uint32_t i = 0; i < len; i++) b->buf[i] = uint8_t(i * 3 + 7);
    std::vector<uint8_t> sink(kSinkLen, kGuard);
    MrKeys k;
    ASSERT_TRUE(a->dev.register_mr(a->pd, sink.data(), sink.size(), kAccessLocalWrite, &k));
    FaultConfig lose;
    lose.tx.drop = 1.0;  // B's responses are lost: A asks again, after the deregistration
    b->dev.set_faults(&lose);
    SendWr w = send_wr(op, *a, 0, len, 3);
    w.sge[0] = {addr(sink.data() + kAt), len, k.lkey};
    w.remote_addr = addr(b->buf.data());
    w.rkey = b->mr.rkey;
    w.compare_add = 1;
    const uint64_t tx0 = b->qp->counters().tx_packets;
    ASSERT_TRUE(a->qp->post_send(w));
    ASSERT_TRUE(run_until([&] { return b->qp->counters().tx_packets >= tx0 + (len + kMtu - 1) / kMtu; }));
    ASSERT_TRUE(a->dev.deregister_mr(k.lkey));
    b->dev.set_faults(nullptr);
    std::vector<Completion> sc;
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
    EXPECT_EQ(sc[0].status, WcStatus::kLocalProtection) << wc_status_name(sc[0].status);
    EXPECT_EQ(a->qp->state(), QpState::kError);
    EXPECT_EQ(std::count(sink.begin(), sink.end(), kGuard), long(kSinkLen)) << "a response landed in freed memory";
  }
}

// Hole: only the first packet of a SEND meets the missing receive (RNR NAK); the packets
// behind it draw a PSN sequence NAK, and those were spent from the transport retry budget. A
// one-packet SEND waited for its receive forever, a long one ended in kRetryExceeded.
TEST_F(CompleterHostile, RnrRetryForeverWaitsForTheReceiveAtAnySize) {
  ConnectOptions o;
  o.rnr_retry = 7;        // forever
  // 1.28 ms: RNR rounds further apart than the go-back damping (a quarter of the 4 ms ACK
  // timeout), which would hide sequence NAKs that closer rounds draw.
  o.min_rnr_timer = 14;
  for (const uint32_t len : {100u, 4u << 20}) {
    SCOPED_TRACE(len);
    connect(o);
    std::vector<uint8_t> src(len), dst(len, 0);
    for (uint32_t i = 0; i < len; i++) src[i] = uint8_t(i * 13 + i / 4099);
    MrKeys ks, kd;
    ASSERT_TRUE(a->dev.register_mr(a->pd, src.data(), len, kAccessLocalWrite, &ks));
    ASSERT_TRUE(b->dev.register_mr(b->pd, dst.data(), len, kAccessLocalWrite, &kd));
    SendWr w = send_wr(WrOpcode::kSend, *a, 0, len, 1);
    w.sge[0] = {addr(src.data()), len, ks.lkey};
    ASSERT_TRUE(a->qp->post_send(w));
    run_until([] { return false; }, 1000);  // the receiver posts its receive a second late
    std::vector<Completion> sc, rc;
    Completion early{};
    EXPECT_EQ(a->scq->poll(&early, 1), 0u) << "ended while waiting: " << wc_status_name(early.status);
    RecvWr r = recv_wr(*b, 0, len, 2);
    r.sge[0] = {addr(dst.data()), len, kd.lkey};
    ASSERT_TRUE(b->qp->post_recv(r));
    ASSERT_TRUE(wait_cq(b->rcq, 1, &rc, 20000));
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc, 5000));
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess) << wc_status_name(rc[0].status);
    EXPECT_EQ(rc[0].byte_len, len);
    EXPECT_TRUE(src == dst);
    EXPECT_GT(a->qp->counters().rnr_naks_received, 1u);
    EXPECT_TRUE(a->dev.deregister_mr(ks.lkey));
    EXPECT_TRUE(b->dev.deregister_mr(kd.lkey));
  }
}

// With a finite RNR retry count the request ends in kRnrRetryExceeded after exactly that many
// retries, at any size, even with a transport retry count smaller than it.
TEST_F(CompleterHostile, RnrRetryExceededSpendsOnlyTheRnrBudget) {
  ConnectOptions o;
  o.rnr_retry = 3;
  o.retry_cnt = 1;
  o.min_rnr_timer = 15;  // 1.92 ms: as above, past the go-back damping
  for (const uint32_t len : {100u, 4u << 20}) {
    SCOPED_TRACE(len);
    connect(o);
    std::vector<uint8_t> src(len, 1);
    MrKeys ks;
    ASSERT_TRUE(a->dev.register_mr(a->pd, src.data(), len, kAccessLocalWrite, &ks));
    SendWr w = send_wr(WrOpcode::kSend, *a, 0, len, 1);
    w.sge[0] = {addr(src.data()), len, ks.lkey};
    ASSERT_TRUE(a->qp->post_send(w));
    std::vector<Completion> sc;
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc, 10000));
    EXPECT_EQ(sc[0].status, WcStatus::kRnrRetryExceeded) << wc_status_name(sc[0].status);
    EXPECT_EQ(a->qp->counters().rnr_naks_received, 4u);  // the first try and three retries
    EXPECT_EQ(a->qp->state(), QpState::kError);
    a->dev.deregister_mr(ks.lkey);
  }
}

}  // namespace
}  // namespace ndnic::nic::testing
