// Error paths: each ends with the IBTA status on the right side and the QPs in the right state.
#include <algorithm>
#include <cstring>

#include "nic/qp_impl.h"
#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

using Errors = TwoNodes;

TEST_F(Errors, RemoteAccessErrorMovesBothQpsToErrorAndFlushes) {
  connect();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 64, 7)));
  std::vector<uint8_t> before = b->buf;
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, 64, 1);
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data());
  w.rkey = b->mr.rkey ^ 0x1;  // a stale key byte
  ASSERT_TRUE(a->qp->post_send(w));
  SendWr after = send_wr(WrOpcode::kSend, *a, 0, 8, 2);
  ASSERT_TRUE(a->qp->post_send(after));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kRemoteAccess) << wc_status_name(sc[0].status);
  EXPECT_EQ(sc[1].status, WcStatus::kWrFlushed);
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].status, WcStatus::kWrFlushed);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(a->qp->state(), QpState::kError);
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(before, b->buf);  // nothing written
  EXPECT_EQ(b->qp->counters().naks_sent[2], 1u);
  // Posting to a QP in ERROR completes at once with a flush.
  ASSERT_TRUE(a->qp->post_send(after));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[2].status, WcStatus::kWrFlushed);
  // A receive too, on a QP with nothing to send (its requester has no work, its flush does).
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 64, 8)));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[1].status, WcStatus::kWrFlushed);
  EXPECT_EQ(rc[1].wr_id, 8u);
}

TEST_F(Errors, OutOfRangeAndMissingRights) {
  struct Case {
    const char* what;
    WrOpcode op;
    uint64_t roff;
    uint32_t len;
    uint32_t access;
  };
  const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  const Case cases[] = {
      {"write past the end", WrOpcode::kWrite, kBufSize - 10, 64, all},
      {"read past the end", WrOpcode::kRead, kBufSize - 10, 64, all},
      {"write without remote write", WrOpcode::kWrite, 0, 64, kAccessLocalWrite | kAccessRemoteRead},
      {"read without remote read", WrOpcode::kRead, 0, 64, kAccessLocalWrite | kAccessRemoteWrite},
      {"atomic without remote atomic", WrOpcode::kFetchAdd, 0, 8, kAccessLocalWrite | kAccessRemoteWrite},
  };
  for (const Case& c : cases) {
    ConnectOptions o;
    o.access = c.access;
    connect(o);
    std::vector<uint8_t> before = b->buf;
    SendWr w = send_wr(c.op, *a, 0, c.len, 1);
    w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + c.roff);
    w.rkey = b->mr.rkey;
    ASSERT_TRUE(a->qp->post_send(w));
    std::vector<Completion> sc;
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc)) << c.what;
    EXPECT_EQ(sc[0].status, WcStatus::kRemoteAccess) << c.what << ": " << wc_status_name(sc[0].status);
    EXPECT_EQ(before, b->buf) << c.what;
  }
}

TEST_F(Errors, RnrThenSuccess) {
  connect();
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 100, 1)));
  // Let the send bounce off the missing receive a few times.
  ASSERT_TRUE(run_until([&] { return b->qp->counters().rnr_naks_sent >= 3; }));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 100, 9)));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, 100u);
  EXPECT_GE(a->qp->counters().rnr_naks_received, 3u);
}

TEST_F(Errors, RnrRetryExhausted) {
  ConnectOptions o;
  o.rnr_retry = 2;
  connect(o);
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 100, 1)));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kRnrRetryExceeded) << wc_status_name(sc[0].status);
  EXPECT_EQ(a->qp->counters().rnr_naks_received, 3u);  // the first try and two retries
  EXPECT_EQ(a->qp->state(), QpState::kError);
}

TEST_F(Errors, RetryExceededWhenThePeerIsGone) {
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 8;  // 1 ms
  connect(o);
  ASSERT_TRUE(b->qp->modify(QpState::kReset, {}));  // the peer drops everything now
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 100, 1)));
  SendWr rd = send_wr(WrOpcode::kRead, *a, 0, 100, 2);
  rd.remote_addr = reinterpret_cast<uint64_t>(b->buf.data());
  rd.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(rd));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kRetryExceeded) << wc_status_name(sc[0].status);
  EXPECT_EQ(sc[1].status, WcStatus::kWrFlushed);
  EXPECT_EQ(a->qp->counters().timeouts, 3u);
  EXPECT_GE(a->qp->counters().retransmits, 2u);
}

// The ACK timer runs only while a PSN sent awaits its acknowledgement: off once everything is
// acknowledged (an idle QP costs its shard no clock read per poll), armed again by the next
// packet sent, and still what ends a QP whose peer went away after that.
TEST_F(Errors, AckTimerRunsOnlyWhileAPsnAwaitsItsAck) {
  ConnectOptions o;
  o.retry_cnt = 1;
  o.timeout = 8;  // 1 ms
  connect(o);
  const CompState& timer = a->qp->impl()->comp;
  EXPECT_EQ(timer.timer_tsc, 0u) << "nothing sent yet";
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, 64, 1);  // a WRITE: no receive credit to wait for
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data());
  w.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(w));  // the first also resolves B's address: both polled
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(timer.timer_tsc, 0u) << "everything sent is acknowledged";

  w.wr_id = 2;
  ASSERT_TRUE(a->qp->post_send(w));
  for (int i = 0; i < 100 && a->qp->impl()->counters.tx_packets < 2; i++) a->dev.poll();  // B not
  ASSERT_EQ(a->qp->impl()->counters.tx_packets, 2u);
  EXPECT_EQ(timer.timer_tsc, kArmAtNextLook) << "armed; the clock is read after the flush";
  a->dev.poll();
  EXPECT_NE(timer.timer_tsc, kArmAtNextLook) << "the next look at the timers set the deadline";
  EXPECT_NE(timer.timer_tsc, 0u) << "a PSN awaits its ACK";
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(timer.timer_tsc, 0u) << "everything sent is acknowledged again";
  EXPECT_EQ(a->qp->counters().timeouts, 0u);

  ASSERT_TRUE(b->qp->modify(QpState::kReset, {}));  // the peer drops everything now
  w.wr_id = 3;
  ASSERT_TRUE(a->qp->post_send(w));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  for (const Completion& c : sc) EXPECT_EQ(c.wr_id, uint64_t(&c - sc.data() + 1));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
  EXPECT_EQ(sc[1].status, WcStatus::kSuccess) << wc_status_name(sc[1].status);
  EXPECT_EQ(sc[2].status, WcStatus::kRetryExceeded) << wc_status_name(sc[2].status);
  EXPECT_EQ(a->qp->counters().timeouts, 2u);  // the timer the third armed: retry_cnt + 1 times
}

TEST_F(Errors, SendLargerThanReceive) {
  connect();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 1000, 5)));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 4096, 1000, 6)));
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 3000, 1)));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_EQ(sc[0].status, WcStatus::kRemoteInvalidRequest) << wc_status_name(sc[0].status);
  EXPECT_EQ(rc[0].status, WcStatus::kLocalLength) << wc_status_name(rc[0].status);
  EXPECT_EQ(rc[1].status, WcStatus::kWrFlushed);
}

TEST_F(Errors, BadLocalKeyFailsBeforeTheWire) {
  connect();
  SendWr w = send_wr(WrOpcode::kSend, *a, 0, 64, 1);
  w.sge[0].lkey ^= 0x2;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kLocalProtection);
  EXPECT_EQ(a->qp->counters().tx_packets, 0u);
}

TEST_F(Errors, UnsignaledSuccessIsSilentErrorsAreNot) {
  connect();
  for (int i = 0; i < 3; i++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, i * 100, 100, i)));
  SendWr w = send_wr(WrOpcode::kSend, *a, 0, 10, 1);
  w.flags = 0;
  ASSERT_TRUE(a->qp->post_send(w));
  w.wr_id = 2;
  w.flags = kWrSignaled;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].wr_id, 2u);
  EXPECT_FALSE(run_until([&] { Completion c; return a->scq->poll(&c, 1) > 0; }, 50));
  w.wr_id = 3;
  w.flags = 0;
  w.sge[0].lkey ^= 0x2;
  ASSERT_TRUE(a->qp->post_send(w));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[1].wr_id, 3u);
  EXPECT_EQ(sc[1].status, WcStatus::kLocalProtection);
}

TEST_F(Errors, PsnWrapAround) {
  ConnectOptions o;
  o.mtu = 256;
  o.psn_a = 0xFFFFF0;
  o.psn_b = 0xFFFFFE;
  connect(o);
  const uint32_t len = 10000;  // 40 packets: A's PSNs wrap in the middle of the first message
  for (int i = 0; i < 4; i++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, i * 16384, 16384, i)));
  for (uint32_t i = 0; i < len; i++) a->buf[i] = uint8_t(i * 13);
  for (int i = 0; i < 4; i++) ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, len, i)));
  SendWr rd = send_wr(WrOpcode::kRead, *b, 200000, len, 9);  // B's PSNs wrap in its READ
  rd.remote_addr = reinterpret_cast<uint64_t>(a->buf.data());
  rd.rkey = a->mr.rkey;
  ASSERT_TRUE(b->qp->post_send(rd));
  std::vector<Completion> sc, rc, bsc;
  ASSERT_TRUE(wait_cq(a->scq, 4, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 4, &rc));
  ASSERT_TRUE(wait_cq(b->scq, 1, &bsc));
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].byte_len, len);
    EXPECT_EQ(0, memcmp(a->buf.data(), b->buf.data() + i * 16384, len));
  }
  EXPECT_EQ(bsc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(0, memcmp(a->buf.data(), b->buf.data() + 200000, len));
}

}  // namespace
}  // namespace ndnic::nic::testing

namespace ndnic::nic::testing {
namespace {

// Requests built in the send ring's own slots (Qp::open_send_slots): only those committed are
// posted, in order; the slots past them go back to the ring; a malformed one posts none.
TEST_F(TwoNodes, SendSlotsPostWhatIsCommittedAndReturnTheRest) {
  connect();
  for (uint64_t id = 100; id < 104; id++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, id * 64, 64, id)));
  const unsigned room = a->qp->open_send_slots();
  ASSERT_GE(room, 3u);
  for (unsigned i = 0; i < 3; i++) *a->qp->send_slot(i) = send_wr(WrOpcode::kSend, *a, i * 64, 64, i + 1);
  ASSERT_TRUE(a->qp->commit_send_slots(2));  // the third is built but not committed
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[1].wr_id, 2u);
  // Every slot is free again (asked for all, the engine's progress is looked at again), and
  // the uncommitted request never left.
  EXPECT_EQ(a->qp->open_send_slots(room), room);
  *a->qp->send_slot(0) = send_wr(WrOpcode::kSend, *a, 0, 64, 4);
  SendWr bad = send_wr(WrOpcode::kSend, *a, 0, 64, 5);
  bad.num_sge = kMaxSge + 1;
  *a->qp->send_slot(1) = bad;
  EXPECT_FALSE(a->qp->commit_send_slots(2));  // one malformed: neither is posted
  EXPECT_EQ(a->qp->open_send_slots(room), room);
  *a->qp->send_slot(0) = send_wr(WrOpcode::kSend, *a, 0, 64, 6);
  ASSERT_TRUE(a->qp->commit_send_slots(1));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[2].wr_id, 6u);
  ASSERT_TRUE(wait_cq(b->rcq, 3, &rc));
  EXPECT_FALSE(wait_cq(b->rcq, 1, &rc, 50));  // nothing else arrived
  for (const Completion& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess);
}

TEST_F(TwoNodes, GatherAndScatterOverSeveralSges) {
  connect();
  // Receive: three pieces out of order in B's buffer; send: four pieces of A's.
  RecvWr r{};
  r.wr_id = 1;
  r.num_sge = 3;
  const uint64_t pieces[3] = {50000, 10000, 30000};
  const uint32_t lens[3] = {700, 1000, 2000};
  for (int i = 0; i < 3; i++) r.sge[i] = {reinterpret_cast<uint64_t>(b->buf.data() + pieces[i]), lens[i], b->mr.lkey};
  ASSERT_TRUE(b->qp->post_recv(r));
  SendWr s = send_wr(WrOpcode::kSend, *a, 0, 0, 2);
  s.num_sge = 4;
  const uint64_t src[4] = {9000, 100, 20000, 4000};
  const uint32_t slen[4] = {1, 999, 1500, 700};  // 3200 bytes, four packets at MTU 1024
  std::vector<uint8_t> msg;
  for (int i = 0; i < 4; i++) {
    for (uint32_t k = 0; k < slen[i]; k++) a->buf[src[i] + k] = uint8_t(i * 50 + k);
    msg.insert(msg.end(), a->buf.begin() + long(src[i]), a->buf.begin() + long(src[i] + slen[i]));
    s.sge[i] = {reinterpret_cast<uint64_t>(a->buf.data() + src[i]), slen[i], a->mr.lkey};
  }
  ASSERT_TRUE(a->qp->post_send(s));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(sc[0].byte_len, 3200u);
  EXPECT_EQ(rc[0].byte_len, 3200u);
  std::vector<uint8_t> got;
  uint32_t left = 3200;
  for (int i = 0; i < 3 && left; i++) {
    const uint32_t take = std::min(left, lens[i]);
    got.insert(got.end(), b->buf.begin() + long(pieces[i]), b->buf.begin() + long(pieces[i] + take));
    left -= take;
  }
  EXPECT_EQ(got, msg);
}

TEST_F(TwoNodes, ReceiveWithABadLocalKeyIsARemoteOperationalError) {
  connect();
  RecvWr r = recv_wr(*b, 0, 256, 1);
  r.sge[0].lkey ^= 0x4;
  ASSERT_TRUE(b->qp->post_recv(r));
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 64, 1)));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(sc[0].status, WcStatus::kRemoteOperation) << wc_status_name(sc[0].status);
  EXPECT_EQ(rc[0].status, WcStatus::kLocalProtection) << wc_status_name(rc[0].status);
  EXPECT_EQ(b->qp->state(), QpState::kError);
}

}  // namespace
}  // namespace ndnic::nic::testing
