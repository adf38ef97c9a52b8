// The responder and the windows against a hostile peer on the segment (RoCE has no other
// authentication than the keys): each test injects what a peer can send, or does what a
// careless application can, and checks that no byte outside a granted, valid window changes,
// that nothing is held without bound, and that an untouched QP pair keeps working.
#include <algorithm>
#include <cstring>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "nic/engine.h"
#include "tests/nic/hostile.h"

namespace ndnic::nic::testing {
namespace {

class ResponderHostile : public Hostile {
 protected:
  static constexpr uint64_t kWinOff = 64 * 1024;

  uint64_t b_va(uint64_t off) const { return reinterpret_cast<uint64_t>(b->buf.data() + off); }
  static std::vector<uint8_t> bytes(uint32_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }
  /// A packet of a multi-packet WRITE into B's QP, without AckReq until the last.
  wire::RocePacket write_part(uint8_t opcode, uint32_t psn_offset) const {
    wire::RocePacket p = request(opcode, b->qp->qpn(), opts.psn_a + psn_offset);
    p.bth.ack_req = opcode == wire::kRcWriteLast;
    return p;
  }
  /// A READ of [va, va + 2 * kSendBudget MTUs) through `rkey`, accepted and partly answered in
  /// one poll of B, then `revoke` (the window invalidated, the region deregistered): the READ was
  /// checked whole when it was accepted, and each response asks whether that check still stands.
  /// Those still to go are refused (a remote access NAK, B's QP to ERROR), none of them sent.
  void read_revoked_midway(uint64_t va, uint32_t rkey, const std::function<void()>& revoke) {
    const uint32_t packets = 2 * kSendBudget;
    Qp* qp = b->qp;
    const uint64_t tx0 = qp->counters().tx_packets;
    wire::RocePacket rd = request(wire::kRcReadRequest, qp->qpn(), opts.psn_a);
    rd.reth = {va, rkey, packets * opts.mtu};
    inject(rd, {}, nullptr, /*settle=*/false);
    b->dev.poll();  // accepts the READ and sends at most kSendBudget of its responses
    const uint64_t answered = qp->counters().tx_packets - tx0;
    ASSERT_GT(answered, 0u);
    ASSERT_LT(answered, packets);
    revoke();
    if (HasFatalFailure()) return;
    run_until([] { return false; }, 20);
    EXPECT_LE(qp->counters().tx_packets - tx0, answered + 1) << "responses left after the access was revoked";
    EXPECT_EQ(qp->counters().naks_sent[2], 1u);  // remote access error
    EXPECT_EQ(qp->state(), QpState::kError);
  }
  bool unchanged(const std::vector<uint8_t>& before, uint64_t from, uint64_t to) const {
    return std::equal(b->buf.begin() + long(from), b->buf.begin() + long(to), before.begin() + long(from));
  }
  /// `n` copies of one frame from A's port in bursts, as fast as the port takes them; the
  /// fewest mbufs A's pool had left at any point goes to `*min_avail`.
  void flood(const wire::RocePacket& p, unsigned n, unsigned* min_avail) {
    std::vector<uint8_t> f(wire::frame_length(p));
    ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
    rte_mbuf* ms[32];
    for (unsigned sent = 0; sent < n;) {
      const unsigned k = std::min(32u, n - sent);
      ASSERT_TRUE(run_until([&] { return rte_pktmbuf_alloc_bulk(a->port.mempool(), ms, k) == 0; }, 2000))
          << "A's mbuf pool ran dry after " << sent << " frames";
      for (unsigned i = 0; i < k; i++) std::memcpy(rte_pktmbuf_append(ms[i], uint16_t(f.size())), f.data(), f.size());
      *min_avail = std::min(*min_avail, rte_mempool_avail_count(a->port.mempool()));
      unsigned out = 0;
      ASSERT_TRUE(run_until([&] { return (out += a->port.tx_burst(ms + out, uint16_t(k - out))) == k; }, 2000));
      sent += k;
    }
  }
};

// A SEND's ICRC is checked while its payload is copied into the receive (one read of the
// payload). A corrupt one, in sequence or not, is dropped without a trace: no NAK, no
// completion, no receive used up, nothing counted but the ICRC mismatch; the intact
// retransmission then lands whole.
TEST_F(ResponderHostile, ACorruptSendLeavesNoTraceAndItsRetransmissionLands) {
  connect();
  constexpr uint32_t kLen = 1000;
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 8192, kLen, 7)));
  const auto corrupt_payload = [](std::vector<uint8_t>& f) { f[f.size() - 4 - 300] ^= 0x40; };
  const uint64_t bad0 = b->dev.counters().rejects[wire::Reject::kIcrcMismatch];
  inject(request(wire::kRcSendOnly, b->qp->qpn(), opts.psn_a), bytes(kLen, 0x3C), corrupt_payload);
  inject(request(wire::kRcSendOnly, b->qp->qpn(), opts.psn_a + 3), bytes(kLen, 0x3C), corrupt_payload);
  inject(request(wire::kRcSendOnly, b->qp->qpn(), opts.psn_a - 3), bytes(kLen, 0x3C), corrupt_payload);
  const Qp::Counters c = b->qp->counters();
  EXPECT_EQ(b->dev.counters().rejects[wire::Reject::kIcrcMismatch], bad0 + 3);
  EXPECT_EQ(c.rx_packets, 0u);
  EXPECT_EQ(c.naks_sent[0] + c.naks_sent[1] + c.naks_sent[2] + c.naks_sent[3] + c.rnr_naks_sent, 0u);
  EXPECT_EQ(c.out_of_sequence + c.duplicates, 0u);
  Completion none[4];
  EXPECT_EQ(b->rcq->poll(none, 4), 0u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);

  inject(request(wire::kRcSendOnly, b->qp->qpn(), opts.psn_a), bytes(kLen, 0x3C));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, kLen);
  EXPECT_EQ(std::count(b->buf.begin() + 8192, b->buf.begin() + 8192 + kLen, 0x3C), long(kLen));
}

// A WRITE's MIDDLE and LAST have their ICRC checked while they are copied into the target (its
// range fixed by the FIRST). A corrupt one, in sequence or not, is dropped without a trace: no
// NAK, nothing counted but the ICRC mismatch, the QP still in the message. The message's last
// byte, which an application may poll, is not written until an intact LAST comes, and the
// intact retransmissions then land the whole message.
TEST_F(ResponderHostile, ACorruptWriteMiddleOrLastIsDroppedAndTheLastByteWaitsForTheIntactOne) {
  connect();
  const uint32_t mtu = opts.mtu;
  ASSERT_GE(mtu, wire::kDeferIcrcMinPayload);  // so that MIDDLE and LAST take the fused copy
  const uint32_t len = 3 * mtu;
  const uint64_t at = 8192;
  const std::vector<uint8_t> before = b->buf;
  const auto corrupt_payload = [](std::vector<uint8_t>& f) { f[f.size() - 4 - 100] ^= 0x40; };
  const uint64_t bad0 = b->dev.counters().rejects[wire::Reject::kIcrcMismatch];
  wire::RocePacket first = write_part(wire::kRcWriteFirst, 0);
  first.reth = {b_va(at), b->mr.rkey, len};
  inject(first, bytes(mtu, 0xA1));
  ASSERT_EQ(b->buf[at], 0xA1);

  inject(write_part(wire::kRcWriteMiddle, 1), bytes(mtu, 0xA2), corrupt_payload);  // in sequence
  inject(write_part(wire::kRcWriteLast, 2), bytes(mtu, 0xA3), corrupt_payload);    // ahead of it
  inject(write_part(wire::kRcWriteMiddle, 1), bytes(mtu, 0xA2));
  inject(write_part(wire::kRcWriteLast, 2), bytes(mtu, 0xA3), corrupt_payload);    // in sequence
  Qp::Counters c = b->qp->counters();
  EXPECT_EQ(b->dev.counters().rejects[wire::Reject::kIcrcMismatch], bad0 + 3);
  EXPECT_EQ(c.rx_packets, 2u);  // the FIRST and the intact MIDDLE
  EXPECT_EQ(c.naks_sent[0] + c.naks_sent[1] + c.naks_sent[2] + c.naks_sent[3] + c.rnr_naks_sent, 0u);
  EXPECT_EQ(c.out_of_sequence + c.duplicates, 0u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
  EXPECT_EQ(b->buf[at + len - 1], before[at + len - 1]) << "a corrupt LAST wrote the byte a poller waits on";
  EXPECT_TRUE(unchanged(before, 0, at)) << "a byte before the WRITE's range changed";
  EXPECT_TRUE(unchanged(before, at + len, b->buf.size())) << "a byte past the WRITE's range changed";

  inject(write_part(wire::kRcWriteLast, 2), bytes(mtu, 0xA3));
  c = b->qp->counters();
  EXPECT_EQ(c.rx_packets, 3u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
  for (uint32_t k = 0; k < 3; k++)
    EXPECT_EQ(std::count(b->buf.begin() + long(at + k * mtu), b->buf.begin() + long(at + (k + 1) * mtu), 0xA1 + k),
              long(mtu))
        << "packet " << k << " of the WRITE";
  EXPECT_TRUE(unchanged(before, at + len, b->buf.size()));
}

// A window revoked between a WRITE's FIRST and its MIDDLE/LAST: the later packets are checked
// again and refused (before: they went to the pointer saved at the FIRST).
TEST_F(ResponderHostile, WriteMiddleAndLastReachNoWindowInvalidatedAfterTheFirst) {
  connect();
  make_good_pair();
  const uint32_t mtu = opts.mtu;
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t wkey = bind_on_b(mw, b_va(kWinOff), 3 * mtu, kAccessRemoteWrite);
  ASSERT_NE(wkey, 0u);
  const std::vector<uint8_t> before = b->buf;
  wire::RocePacket first = write_part(wire::kRcWriteFirst, 0);
  first.reth = {b_va(kWinOff), wkey, 3 * mtu};
  inject(first, bytes(mtu, 0xA1));
  EXPECT_EQ(b->buf[kWinOff], 0xA1);  // the window was valid for the FIRST
  ASSERT_EQ(local_inv_on_b(wkey), WcStatus::kSuccess);
  inject(write_part(wire::kRcWriteMiddle, 1), bytes(mtu, 0xA2));
  inject(write_part(wire::kRcWriteLast, 2), bytes(mtu, 0xA3));
  EXPECT_TRUE(unchanged(before, kWinOff + mtu, kWinOff + 3 * mtu)) << "a revoked window was written";
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(b->qp->counters().naks_sent[2], 1u);  // remote access error
  check_good_pair_works(1);
}

// The same with a region deregistered (its memory could be freed) after the FIRST.
TEST_F(ResponderHostile, WriteMiddleReachesNoRegionDeregisteredAfterTheFirst) {
  connect();
  make_good_pair();
  const uint32_t mtu = opts.mtu;
  std::vector<uint8_t> area(3 * mtu, 0);
  MrKeys k;
  ASSERT_TRUE(b->dev.register_mr(b->pd, area.data(), area.size(), kAccessLocalWrite | kAccessRemoteWrite, &k));
  wire::RocePacket first = write_part(wire::kRcWriteFirst, 0);
  first.reth = {reinterpret_cast<uint64_t>(area.data()), k.rkey, 3 * mtu};
  inject(first, bytes(mtu, 0xB1));
  EXPECT_EQ(area[0], 0xB1);
  ASSERT_TRUE(b->dev.deregister_mr(k.lkey));
  inject(write_part(wire::kRcWriteMiddle, 1), bytes(mtu, 0xB2));
  inject(write_part(wire::kRcWriteLast, 2), bytes(mtu, 0xB3));
  EXPECT_TRUE(std::all_of(area.begin() + mtu, area.end(), [](uint8_t v) { return v == 0; }))
      << "a deregistered region was written";
  EXPECT_EQ(b->qp->state(), QpState::kError);
  check_good_pair_works(1);
}

TEST_F(ResponderHostile, ReadResponsesStopWhenTheWindowIsInvalidatedMidway) {
  connect();
  make_good_pair();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t wkey = bind_on_b(mw, b_va(kWinOff), 2 * kSendBudget * opts.mtu, kAccessRemoteRead);
  ASSERT_NE(wkey, 0u);
  read_revoked_midway(b_va(kWinOff), wkey, [&] { ASSERT_EQ(local_inv_on_b(wkey), WcStatus::kSuccess); });
  if (HasFatalFailure()) return;
  check_good_pair_works(1);
}

TEST_F(ResponderHostile, ReadResponsesStopWhenTheRegionIsDeregisteredMidway) {
  connect();
  make_good_pair();
  std::vector<uint8_t> area(2 * kSendBudget * opts.mtu, 0xC1);
  MrKeys k;
  ASSERT_TRUE(b->dev.register_mr(b->pd, area.data(), area.size(), kAccessLocalWrite | kAccessRemoteRead, &k));
  read_revoked_midway(reinterpret_cast<uint64_t>(area.data()), k.rkey,
                    [&] { ASSERT_TRUE(b->dev.deregister_mr(k.lkey)); });
  if (HasFatalFailure()) return;
  check_good_pair_works(2);
}

// Duplicates of a zero-length READ (no key is checked) keep a reply going and everything
// behind it is held with its mbuf: before, the port's pool drained and every QP stopped. Now
// at most kMaxHeldPerQp are held, the rest dropped (a loss to the requester), the untouched
// pair keeps working during the flood, and the pool is whole again after it.
TEST_F(ResponderHostile, RequestsHeldBehindAReadReplyAreBounded) {
  connect();
  make_good_pair();
  check_good_pair_works(0);
  // net_ring hands A's mbufs to B as they are: what B holds is missing from A's pool.
  rte_mempool* pool = a->port.mempool();
  const unsigned in_use_before = rte_mempool_in_use_count(pool);
  wire::RocePacket rd = request(wire::kRcReadRequest, b->qp->qpn(), opts.psn_a);
  rd.reth = {0, 0, 0};
  inject(rd);
  const unsigned avail_before = rte_mempool_avail_count(pool);
  unsigned min_avail = avail_before;
  for (unsigned round = 0; round < 4; round++) {
    flood(rd, avail_before / 2, &min_avail);
    if (HasFatalFailure()) return;
    check_good_pair_works(10 + round);
  }
  // B holds at most kMaxHeldPerShard of them; the rest of what is missing is in flight (the
  // ring between the ports, a burst each side).
  EXPECT_GE(min_avail + kMaxHeldPerShard + 2048, avail_before)
      << "B held " << avail_before - min_avail << " of A's " << avail_before << " free mbufs";
  EXPECT_GT(b->dev.counters().held_dropped, 0u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);  // dropping is not an error
  EXPECT_TRUE(run_until([&] { return rte_mempool_in_use_count(pool) <= in_use_before; }, 5000))
      << rte_mempool_in_use_count(pool) << " mbufs in use, " << in_use_before << " before the flood";
  check_good_pair_works(20);
}

// READs in sequence behind READs still replying are accepted at once, each with a resource of
// its own, and answered in order: three RX bursts of them (96, more than kMaxHeldPerQp), all
// in B's ring before B looks, are all answered, none is held or dropped. Before, each waited
// behind the one before it; one was accepted per poll iteration and the third burst found the
// hold queue full. A READ behind a held request still waits (RequestsHeldBehindAReadReplyAreBounded).
TEST_F(ResponderHostile, ReadsInSequenceJoinTheReadsBeingAnswered) {
  connect();
  constexpr uint32_t kReads = 3 * kRxBurst, kLen = 8;
  static_assert(kReads > kMaxHeldPerQp && kReads <= kMaxReadResources + kMaxHeldPerQp);
  const uint64_t tx0 = b->qp->counters().tx_packets;
  for (uint32_t i = 0; i < kReads; i++) {
    wire::RocePacket rd = request(wire::kRcReadRequest, b->qp->qpn(), opts.psn_a + i);
    rd.reth = {b_va(i * kLen), b->mr.rkey, kLen};
    inject(rd, {}, nullptr, /*settle=*/false);
  }
  ASSERT_TRUE(run_until([&] { return b->qp->counters().tx_packets >= tx0 + kReads; }))
      << b->qp->counters().tx_packets - tx0 << " of " << kReads << " READs answered";
  run_until([] { return false; }, 20);
  EXPECT_EQ(b->qp->counters().tx_packets, tx0 + kReads);  // one response each, nothing more
  EXPECT_EQ(b->dev.counters().held_dropped, 0u);
  EXPECT_EQ(b->qp->counters().duplicates + b->qp->counters().out_of_sequence, 0u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
}

// The peer of another connection names a window bound to this one in a SEND with Invalidate:
// refused (IBTA: a type-2 window is invalidated only through its own QP), the window stays
// bound and usable by its own connection, and no invalidate result reaches anyone.
TEST_F(ResponderHostile, SendWithInvalidateFromAnotherConnectionLeavesTheWindowBound) {
  connect();
  make_good_pair();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 0xAB);
  const uint32_t wkey = bind_on_b(mw, b_va(kWinOff), 4096, kAccessRemoteWrite);
  ASSERT_NE(wkey, 0u);
  ASSERT_TRUE(good_b->post_recv(recv_wr(*b, kGoodArea, 64, 77)));
  SendWr inv = send_wr(WrOpcode::kSendInv, *a, 0, 16, 1);
  inv.invalidate_rkey = wkey;
  ASSERT_TRUE(good_a->post_send(inv));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(good_rcq, 1, &rc));
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(rc[0].status, WcStatus::kInvalidation) << wc_status_name(rc[0].status);
  // Through its own connection the window still takes a WRITE.
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, 64, 2);
  std::memset(a->buf.data(), 0x5C, 64);
  w.remote_addr = b_va(kWinOff);
  w.rkey = wkey;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
  EXPECT_EQ(b->buf[kWinOff], 0x5C);
  Completion none[4];
  EXPECT_EQ(b->rcq->poll(none, 4), 0u) << "an invalidate result reached the window's owner";
}

// A window bound to a QP dies with it, and a new QP that gets the same number (numbers come
// round after the table's 1024) cannot use it: before, the binding named only the number.
TEST_F(ResponderHostile, WindowsDieWithTheirQpAndNoNewQpRevivesThem) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t wkey = bind_on_b(mw, b_va(kWinOff), 4096, kAccessRemoteWrite);
  ASSERT_NE(wkey, 0u);
  const uint32_t old_qpn = b->qp->qpn();
  b->dev.destroy_qp(b->qp);
  b->qp = nullptr;
  QpCaps caps;
  caps.send_cq = b->scq;
  caps.recv_cq = b->rcq;
  caps.pd = b->pd;
  caps.max_send_wr = caps.max_recv_wr = 64;
  for (int i = 0; i < 4096 && !b->qp; i++) {
    Qp* q = b->dev.create_qp(caps);
    ASSERT_NE(q, nullptr);
    if (q->qpn() == old_qpn) b->qp = q;
    else b->dev.destroy_qp(q);
  }
  ASSERT_NE(b->qp, nullptr) << "QP number " << old_qpn << " never came back";
  QpAttr at;
  at.remote_qpn = a->qp->qpn();
  at.rq_psn = opts.psn_a;
  at.sq_psn = opts.psn_b;
  at.path_mtu = opts.mtu;
  at.dest_ipv4 = a->port.ipv4();
  at.timeout = opts.timeout;
  ASSERT_TRUE(b->qp->modify(QpState::kInit, {}));
  ASSERT_TRUE(b->qp->modify(QpState::kRtr, at));
  ASSERT_TRUE(b->qp->modify(QpState::kRts, at));
  const std::vector<uint8_t> before = b->buf;
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, 64, 3);
  std::memset(a->buf.data(), 0x6D, 64);
  w.remote_addr = b_va(kWinOff);
  w.rkey = wkey;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kRemoteAccess) << wc_status_name(sc[0].status);
  EXPECT_TRUE(unchanged(before, 0, before.size()));
}

// A READ longer than a message may be (2^31 bytes) is an invalid request, found before any
// arithmetic on its length.
TEST_F(ResponderHostile, ReadLongerThanAMessageIsAnInvalidRequest) {
  connect();
  wire::RocePacket rd = request(wire::kRcReadRequest, b->qp->qpn(), opts.psn_a);
  rd.reth = {b_va(0), b->mr.rkey, 0x80000001u};
  inject(rd);
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(b->qp->counters().naks_sent[1], 1u);  // invalid request, not an access error
}

// A flush reports what already ran as it ran: a bind that executed behind a SEND still waiting
// for its ACK completes with success (the window is bound), not as canceled.
TEST_F(ResponderHostile, FlushReportsAnExecutedBindAsDone) {
  connect();
  // B has no receive posted: A's SEND waits on RNR NAKs (rnr_retry 7 retries for ever).
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 64, 1)));
  const uint32_t mw = a->dev.alloc_mw(a->pd, 1);
  SendWr bind{};
  bind.wr_id = 2;
  bind.opcode = WrOpcode::kBindMw;
  bind.flags = kWrSignaled;
  const uint8_t byte = uint8_t(mw + 1);
  bind.bind = {mw, a->mr.lkey, reinterpret_cast<uint64_t>(a->buf.data() + kWinOff), 4096, kAccessRemoteRead, byte};
  ASSERT_TRUE(a->qp->post_send(bind));
  const uint32_t key = make_key(key_index(mw), byte);
  MemoryTable& mem = a->dev.impl()->memory;
  const uint32_t qp_id = a->qp->impl()->id;
  const uint64_t va = reinterpret_cast<uint64_t>(a->buf.data() + kWinOff);
  ASSERT_TRUE(run_until([&] {
    return mem.check_remote(a->pd, qp_id, key, va, 8, kAccessRemoteRead, nullptr) == KeyCheck::kOk;
  }));
  ASSERT_TRUE(a->qp->modify(QpState::kError, {}));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kWrFlushed);
  EXPECT_EQ(sc[1].wr_id, 2u);
  EXPECT_EQ(sc[1].status, WcStatus::kSuccess) << wc_status_name(sc[1].status);
  EXPECT_EQ(sc[1].imm_or_inv, key);
}


// A receive CQ too small for what arrives: the completion that does not fit is an error, never
// a silent loss. The QP goes to ERROR and the CQ says it overran (before: the completion was
// dropped, the QP went on, and the application waited for a result that would never come).
TEST_F(ResponderHostile, AFullCqTakesTheQpToErrorInsteadOfLosingACompletion) {
  connect();
  constexpr uint32_t kCqEntries = 4;
  Cq* tiny = b->dev.create_cq(kCqEntries);
  ASSERT_NE(tiny, nullptr);
  Cq* a_cq = a->dev.create_cq(64);
  QpCaps ca, cb;
  ca.send_cq = ca.recv_cq = a_cq;
  ca.pd = a->pd;
  cb.send_cq = cb.recv_cq = tiny;
  cb.pd = b->pd;
  Qp* qa = a->dev.create_qp(ca);
  Qp* qb = b->dev.create_qp(cb);
  ASSERT_TRUE(qa && qb);
  ASSERT_NO_FATAL_FAILURE(connect_pair(qa, qb, 0x700));
  const uint32_t capacity = tiny->capacity();
  for (uint32_t i = 0; i < capacity + 2; i++) ASSERT_TRUE(qb->post_recv(recv_wr(*b, 4096 * i, 64, 100 + i)));
  for (uint32_t i = 0; i < capacity + 1; i++) ASSERT_TRUE(qa->post_send(send_wr(WrOpcode::kSend, *a, 0, 64, i)));
  EXPECT_TRUE(run_until([&] { return qb->state() == QpState::kError; }));
  EXPECT_TRUE(tiny->overrun());
  Completion c[64];
  EXPECT_EQ(tiny->poll(c, 64), capacity);  // what fitted is there, in order
  for (uint32_t i = 0; i < capacity; i++) EXPECT_EQ(c[i].wr_id, 100 + i);
  b->dev.destroy_qp(qb);
  a->dev.destroy_qp(qa);
  b->dev.destroy_cq(tiny);
  a->dev.destroy_cq(a_cq);
}

}  // namespace
}  // namespace ndnic::nic::testing
