#include "tests/nic/hostile.h"

#include <cstring>
#include <tuple>

#include <rte_mbuf.h>

namespace ndnic::nic::testing {

wire::RocePacket frame_between(const Node& from, const Node& to, uint8_t opcode, uint32_t dest_qp, uint32_t psn) {
  wire::RocePacket p;
  std::memcpy(p.eth.dst, to.port.mac().addr_bytes, 6);
  std::memcpy(p.eth.src, from.port.mac().addr_bytes, 6);
  p.ip4.src = from.port.ipv4();
  p.ip4.dst = to.port.ipv4();
  p.udp.src_port = 0xC000;
  p.bth.opcode = opcode;
  p.bth.dest_qp = dest_qp;
  p.bth.psn = psn;
  return p;
}

wire::RocePacket Hostile::request(uint8_t opcode, uint32_t dest_qp, uint32_t psn) const {
  wire::RocePacket p = frame_between(*a, *b, opcode, dest_qp, psn);
  p.bth.ack_req = true;
  return p;
}

void Hostile::inject(wire::RocePacket p, const std::vector<uint8_t>& payload,
                     const std::function<void(std::vector<uint8_t>&)>& mutate, bool settle) {
  p.payload = payload.data();
  p.payload_len = uint32_t(payload.size());
  std::vector<uint8_t> f(wire::frame_length(p));
  ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
  if (mutate) mutate(f);
  rte_mbuf* m = nullptr;
  // The pool may be short for a moment while B holds frames; that is what some tests look at.
  ASSERT_TRUE(run_until([&] { return (m = rte_pktmbuf_alloc(a->port.mempool())) != nullptr; }, 2000));
  std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
  ASSERT_TRUE(run_until([&] { return a->port.tx_burst(&m, 1) == 1; }, 2000));
  if (settle) run_until([] { return false; }, 20);  // let B process it (and answer)
}

void Hostile::inject_write(uint32_t dest_qp, uint32_t psn, uint32_t rkey, uint64_t va, uint32_t len,
                           const std::function<void(std::vector<uint8_t>&)>& mutate, uint32_t src_ip) {
  wire::RocePacket p = request(wire::kRcWriteOnly, dest_qp, psn);
  if (src_ip) p.ip4.src = src_ip;
  p.reth = {va, rkey, len};
  inject(p, std::vector<uint8_t>(len, 0xEE), mutate);
}

uint32_t Hostile::bind_on_b(uint32_t mw, uint64_t va, uint64_t len, uint32_t access) {
  SendWr w{};
  w.opcode = WrOpcode::kBindMw;
  w.flags = kWrSignaled;
  w.bind = {mw, b->mr.lkey, va, len, access, uint8_t(mw + 1)};
  EXPECT_TRUE(b->qp->post_send(w));
  std::vector<Completion> sc;
  if (!wait_cq(b->scq, 1, &sc) || sc[0].status != WcStatus::kSuccess) return 0;
  return sc[0].imm_or_inv;
}

WcStatus Hostile::local_inv_on_b(uint32_t key) {
  SendWr w{};
  w.opcode = WrOpcode::kLocalInv;
  w.flags = kWrSignaled;
  w.invalidate_rkey = key;
  EXPECT_TRUE(b->qp->post_send(w));
  std::vector<Completion> sc;
  return wait_cq(b->scq, 1, &sc) ? sc[0].status : WcStatus::kBadResponse;
}

void Hostile::make_good_pair() {
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
  connect_pair(good_a, good_b, 0x500);
}

void Hostile::connect_pair(Qp* x, Qp* y, uint32_t psn) {
  for (auto [me, peer, ip] : {std::tuple{x, y, b->port.ipv4()}, std::tuple{y, x, a->port.ipv4()}}) {
    QpAttr at;
    at.remote_qpn = peer->qpn();
    at.dest_ipv4 = ip;
    at.rq_psn = at.sq_psn = psn;
    ASSERT_TRUE(me->modify(QpState::kInit, at));
    ASSERT_TRUE(me->modify(QpState::kRtr, at));
    ASSERT_TRUE(me->modify(QpState::kRts, at));
  }
}

void Hostile::check_good_pair_works(uint32_t round) {
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

}  // namespace ndnic::nic::testing
