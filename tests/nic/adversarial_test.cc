// Hostile frames injected into B's port: none may change a byte of B's memory, and a QP pair
// that is not attacked keeps working throughout.
#include <cstring>

#include "tests/nic/hostile.h"

namespace ndnic::nic::testing {
namespace {

using Adversarial = Hostile;

TEST_F(Adversarial, HostileFramesChangeNothing) {
  connect();
  make_good_pair();
  check_good_pair_works(0);
  const uint32_t victim = b->qp->qpn();
  const uint32_t psn = opts.psn_a;
  const uint64_t va = reinterpret_cast<uint64_t>(b->buf.data() + 4096);
  const uint32_t rkey = b->mr.rkey;
  const auto snapshot = [&] {
    std::vector<uint8_t> v = b->buf;
    std::memset(v.data() + kGoodArea, 0, 64);  // the good pair's landing zone changes on purpose
    return v;
  };
  std::vector<uint8_t> before = snapshot();

  // Dropped without a reply: nothing for the victim QP's state to see.
  inject_write(victim, psn, rkey, va, 64, [](auto& f) { f.back() ^= 0x5A; });          // bad ICRC
  inject_write(victim, psn, rkey, va, 64, [](auto& f) { f.resize(f.size() - 9); });    // truncated
  inject_write(0x7777, psn, rkey, va, 64);                                             // no such QP
  inject_write(victim, psn, rkey, va, 64, nullptr, 0xC6122863);                       // spoofed source
  inject_write(victim, psn - 5, rkey, va, 64);                                         // stale PSN: re-ACK only
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
  EXPECT_EQ(b->qp->counters().duplicates, 1u);
  check_good_pair_works(1);

  // Each of these is refused with a NAK and takes the victim QP to ERROR.
  inject_write(victim, psn, rkey ^ 0x80, va, 64);                                      // forged R_Key
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(snapshot(), before);
  check_good_pair_works(2);

  connect();
  inject_write(b->qp->qpn(), opts.psn_a, b->mr.rkey, reinterpret_cast<uint64_t>(b->buf.data()) + kBufSize - 32, 64);
  EXPECT_EQ(b->qp->state(), QpState::kError);                                          // VA out of range
  EXPECT_EQ(snapshot(), before);

  connect();
  const uint32_t mw = b->dev.alloc_mw(b->pd, 1);
  SendWr bind{};
  bind.opcode = WrOpcode::kBindMw;
  bind.flags = kWrSignaled;
  bind.bind = {mw, b->mr.lkey, va, 4096, kAccessRemoteWrite, uint8_t(mw + 1)};
  ASSERT_TRUE(b->qp->post_send(bind));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(b->scq, 1, &sc));
  const uint32_t wkey = sc[0].imm_or_inv;
  SendWr inv{};
  inv.opcode = WrOpcode::kLocalInv;
  inv.flags = kWrSignaled;
  inv.invalidate_rkey = wkey;
  ASSERT_TRUE(b->qp->post_send(inv));
  ASSERT_TRUE(wait_cq(b->scq, 1, &sc));
  ASSERT_EQ(sc[1].status, WcStatus::kSuccess);
  inject_write(b->qp->qpn(), opts.psn_a, wkey, va, 64);                               // invalidated window
  EXPECT_EQ(b->qp->state(), QpState::kError);
  EXPECT_EQ(snapshot(), before);
  check_good_pair_works(3);
  EXPECT_EQ(good_b->state(), QpState::kRts);
}

}  // namespace
}  // namespace ndnic::nic::testing
