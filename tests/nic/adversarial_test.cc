// Hostile frames injected into B's port: none may change a byte of B's memory, and a QP pair
// that is not attacked keeps working throughout.
#include <cstring>
#include <tuple>

#include <rte_mbuf.h>

#include "tests/nic/two_nodes.h"
#include "wire/packet.h"

namespace ndnic::nic::testing {
namespace {

class Adversarial : public TwoNodes {
 protected:
  /// Injects a WRITE ONLY frame from A's port as if from A's QP. `mutate` may damage it.
  void inject_write(uint32_t dest_qp, uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len,
                    const std::function<void(std::vector<uint8_t>&)>& mutate = nullptr,
                    uint32_t src_ip = 0) {
    wire::RocePacket p;
    std::memcpy(p.eth.dst, b->port.mac().addr_bytes, 6);
    std::memcpy(p.eth.src, a->port.mac().addr_bytes, 6);
    p.ip4.src = src_ip ? src_ip : a->port.ipv4();
    p.ip4.dst = b->port.ipv4();
    p.udp.src_port = 0xC000;
    p.bth.opcode = wire::kRcWriteOnly;
    p.bth.dest_qp = dest_qp;
    p.bth.psn = psn;
    p.bth.ack_req = true;
    p.reth = {va, rkey, len};
    std::vector<uint8_t> payload(len, 0xEE);
    p.payload = payload.data();
    p.payload_len = len;
    std::vector<uint8_t> f(wire::frame_length(p));
    ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
    if (mutate) mutate(f);
    rte_mbuf* m = rte_pktmbuf_alloc(a->port.mempool());
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
    ASSERT_EQ(a->port.tx_burst(&m, 1), 1);
    run_until([] { return false; }, 20);  // let B process it (and answer)
  }

  /// A second, untouched QP pair on the same devices; SEND + WRITE must keep working on it.
  void check_good_pair_works(uint32_t round) {
    SendWr s = send_wr(WrOpcode::kSend, *a, 0, 64, 5000 + round);
    ASSERT_TRUE(good_b->post_recv(recv_wr(*b, kGoodArea, 64, round)));
    for (int i = 0; i < 64; i++) a->buf[i] = uint8_t(round + i);
    ASSERT_TRUE(good_a->post_send(s));
    std::vector<Completion> sc, rc;
    ASSERT_TRUE(wait_cq(good_scq, 1, &sc));
    ASSERT_TRUE(wait_cq(good_rcq, 1, &rc));
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
    EXPECT_EQ(0, memcmp(b->buf.data() + kGoodArea, a->buf.data(), 64));
  }

  void make_good_pair() {
    good_scq = a->dev.create_cq(64);
    good_rcq = b->dev.create_cq(64);
    QpCaps ca, cb;
    ca.send_cq = ca.recv_cq = good_scq;
    ca.pd = a->pd;
    cb.send_cq = cb.recv_cq = good_rcq;
    cb.pd = b->pd;
    good_a = a->dev.create_qp(ca);
    good_b = b->dev.create_qp(cb);
    ASSERT_TRUE(good_a && good_b);
    for (auto [me, peer, ip] : {std::tuple{good_a, good_b, b->port.ipv4()}, std::tuple{good_b, good_a, a->port.ipv4()}}) {
      QpAttr at;
      at.remote_qpn = peer->qpn();
      at.dest_ipv4 = ip;
      at.rq_psn = at.sq_psn = 0x500;
      ASSERT_TRUE(me->modify(QpState::kInit, at));
      ASSERT_TRUE(me->modify(QpState::kRtr, at));
      ASSERT_TRUE(me->modify(QpState::kRts, at));
    }
  }

  static constexpr uint64_t kGoodArea = 900 * 1024;
  Qp* good_a = nullptr;
  Qp* good_b = nullptr;
  Cq* good_scq = nullptr;
  Cq* good_rcq = nullptr;
};

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
