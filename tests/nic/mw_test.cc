// Memory windows and the remote-invalidate handler.
#include <cstring>

#include "nic/engine.h"
#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

class Windows : public TwoNodes {
 protected:
  static constexpr uint64_t kWinOff = 65536;
  static constexpr uint32_t kWinLen = 8192;
  static constexpr uint64_t kMwContext = 0xC0FFEE;

  /// B binds window `mw` (its current key) over [kWinOff, kWinOff + kWinLen) of its buffer
  /// with the next key byte, as ibv_inc_rkey does; returns the new R_Key.
  uint32_t bind(uint32_t mw, uint32_t access = kAccessRemoteRead | kAccessRemoteWrite) {
    const uint8_t key_byte = uint8_t(mw + 1);
    SendWr w{};
    w.wr_id = 900 + key_byte;
    w.opcode = WrOpcode::kBindMw;
    w.flags = kWrSignaled;
    w.bind = {mw, b->mr.lkey, reinterpret_cast<uint64_t>(b->buf.data() + kWinOff), kWinLen, access, key_byte};
    EXPECT_TRUE(b->qp->post_send(w));
    std::vector<Completion> sc;
    EXPECT_TRUE(wait_cq(b->scq, 1, &sc));
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
    EXPECT_EQ(sc[0].opcode, WcOpcode::kBindMw);
    return sc[0].imm_or_inv;
  }

  /// B invalidates window `key` locally; returns the completion status.
  WcStatus local_inv(uint32_t key) {
    SendWr w{};
    w.wr_id = 800;
    w.opcode = WrOpcode::kLocalInv;
    w.flags = kWrSignaled;
    w.invalidate_rkey = key;
    EXPECT_TRUE(b->qp->post_send(w));
    std::vector<Completion> sc;
    EXPECT_TRUE(wait_cq(b->scq, 1, &sc));
    return sc.empty() ? WcStatus::kBadResponse : sc[0].status;
  }

  WcStatus a_write(uint32_t rkey, uint64_t roff, uint32_t len, uint64_t id) {
    SendWr w = send_wr(WrOpcode::kWrite, *a, 0, len, id);
    w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + roff);
    w.rkey = rkey;
    EXPECT_TRUE(a->qp->post_send(w));
    std::vector<Completion> sc;
    EXPECT_TRUE(wait_cq(a->scq, 1, &sc));
    return sc.empty() ? WcStatus::kBadResponse : sc[0].status;
  }
};

TEST_F(Windows, BindAccessSendAndInvalidateRebind) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, kMwContext);
  ASSERT_NE(mw, 0u);
  const uint32_t key1 = bind(mw);
  EXPECT_NE(key1, mw);
  for (uint32_t i = 0; i < 4096; i++) a->buf[i] = uint8_t(i);
  EXPECT_EQ(a_write(key1, kWinOff + 100, 2048, 1), WcStatus::kSuccess);
  EXPECT_EQ(0, memcmp(b->buf.data() + kWinOff + 100, a->buf.data(), 2048));
  // READ through the window back into A.
  SendWr rd = send_wr(WrOpcode::kRead, *a, 100000, 2048, 2);
  rd.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + kWinOff + 100);
  rd.rkey = key1;
  ASSERT_TRUE(a->qp->post_send(rd));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(0, memcmp(a->buf.data() + 100000, a->buf.data(), 2048));

  // SEND WITH INVALIDATE: B sees the invalidate result, then the receive.
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, 77)));
  SendWr inv = send_wr(WrOpcode::kSendInv, *a, 0, 2000, 3);  // two packets at MTU 1024
  inv.invalidate_rkey = key1;
  ASSERT_TRUE(a->qp->post_send(inv));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(sc[1].byte_len, 2000u);
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRemoteInvalidate);
  EXPECT_EQ(rc[0].wr_id, kMwContext);
  EXPECT_EQ(rc[0].imm_or_inv, key1);
  EXPECT_EQ(rc[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(rc[1].wr_id, 77u);
  EXPECT_EQ(rc[1].flags & kWcWithInv, kWcWithInv);
  EXPECT_EQ(rc[1].imm_or_inv, key1);
  EXPECT_EQ(rc[1].byte_len, 2000u);
  EXPECT_EQ(b->qp->counters().invalidations, 1u);

  // The old key writes nothing now, and the access error takes both QPs down.
  std::vector<uint8_t> before = b->buf;
  EXPECT_EQ(a_write(key1, kWinOff, 64, 4), WcStatus::kRemoteAccess);
  EXPECT_EQ(before, b->buf);

  // Bound again (new key byte) on fresh QPs, the window works, and the old key still fails.
  connect();
  const uint32_t key2 = bind(key1);  // invalidated by the peer: free to bind again
  EXPECT_NE(key2, key1);
  EXPECT_EQ(a_write(key2, kWinOff, 64, 5), WcStatus::kSuccess);
  connect();
  EXPECT_EQ(a_write(key1, kWinOff, 64, 6), WcStatus::kRemoteAccess);
}

TEST_F(Windows, AccessOutsideTheWindowOrWithoutItsRights) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t key = bind(mw, kAccessRemoteRead);  // read only
  std::vector<uint8_t> before = b->buf;
  EXPECT_EQ(a_write(key, kWinOff, 64, 1), WcStatus::kRemoteAccess);  // no write right
  EXPECT_EQ(before, b->buf);
  // Each connect() destroys the QPs: the window bound to B's old QP was invalidated with it,
  // so it binds again at once.
  connect();
  const uint32_t key2 = bind(key);
  EXPECT_EQ(a_write(key2, kWinOff + kWinLen - 32, 64, 2), WcStatus::kRemoteAccess);  // runs past the end
  EXPECT_EQ(before, b->buf);
  connect();
  const uint32_t key3 = bind(key2);
  EXPECT_EQ(a_write(key3, kWinOff - 8, 16, 3), WcStatus::kRemoteAccess);  // starts before it
  EXPECT_EQ(before, b->buf);
}

TEST_F(Windows, InvalidTokenIsAnInvalidationError) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t key = bind(mw);
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, 10)));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 4096, 4096, 11)));
  SendWr inv = send_wr(WrOpcode::kSendInv, *a, 0, 16, 1);
  inv.invalidate_rkey = key ^ 0x3;  // stale key byte
  ASSERT_TRUE(a->qp->post_send(inv));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_EQ(rc[0].wr_id, 10u);
  EXPECT_EQ(rc[0].status, WcStatus::kInvalidation) << wc_status_name(rc[0].status);
  EXPECT_EQ(rc[1].status, WcStatus::kWrFlushed);
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(b->qp->counters().invalidations, 0u);
  // The window the bad token did not name is untouched: still bound to B's QP (in ERROR now,
  // so asked of the table directly), until that QP is destroyed.
  MemoryTable& mem = b->dev.impl()->memory;
  const uint32_t qp_id = b->qp->impl()->id;
  const uint64_t win = reinterpret_cast<uint64_t>(b->buf.data() + kWinOff);
  EXPECT_EQ(mem.check_remote(b->pd, qp_id, key, win, 8, kAccessRemoteRead, nullptr), KeyCheck::kOk);
  connect();
  EXPECT_EQ(mem.check_remote(b->pd, qp_id, key, win, 8, kAccessRemoteRead, nullptr), KeyCheck::kInvalidated);
  EXPECT_EQ(local_inv(key), WcStatus::kLocalProtection);  // nothing is bound under it any more
}

TEST_F(Windows, RetransmittedSendWithInvalidateIsOnlyReAcked) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 42);
  const uint32_t key = bind(mw);
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 4096, 4096, 2)));
  // Every frame A sends goes out twice: the responder must see the duplicate and only ACK it.
  FaultConfig f;
  f.tx.duplicate = 1.0;
  a->dev.set_faults(&f);
  SendWr inv = send_wr(WrOpcode::kSendInv, *a, 0, 16, 1);
  inv.invalidate_rkey = key;
  ASSERT_TRUE(a->qp->post_send(inv));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_FALSE(run_until([&] { Completion c; return b->rcq->poll(&c, 1) > 0; }, 50));
  EXPECT_EQ(rc[0].opcode, WcOpcode::kRemoteInvalidate);
  EXPECT_EQ(rc[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(b->qp->counters().invalidations, 1u);
  EXPECT_GE(b->qp->counters().duplicates, 1u);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
  a->dev.set_faults(nullptr);
}

TEST_F(Windows, WindowIsReachableOnlyThroughItsQp) {
  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  const uint32_t key = bind(mw);
  connect();  // new QPs: the window stays bound to the old one
  std::vector<uint8_t> before = b->buf;
  EXPECT_EQ(a_write(key, kWinOff, 64, 1), WcStatus::kRemoteAccess);
  EXPECT_EQ(before, b->buf);
}

}  // namespace
}  // namespace ndnic::nic::testing
