// UD QPs: the GSI QP1 and ordinary UD QPs over two engines. MADs to QP1 as rxe sends them
// (UD SEND ONLY, DETH with the GSI Q_Key and source QP 1, AckReq, PSNs from 0, UDP source
// port 0xd872), the Q_Key check, the MTU limit, drops without a receive, and dispatch to the
// QP's shard when a device has several.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <tuple>

#include <rte_mbuf.h>

#include "tests/fixtures/node_pair.h"
#include "tests/fixtures/two_nodes.h"
#include "ndnic/wire/packet.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::nic::testing {
namespace {

constexpr uint32_t kMad = 256;
constexpr uint32_t kQkey = 0x11223344;

class Ud : public TwoNodes {
 protected:
  void SetUp() override {
    prefix_ = "/tmp/ndnic-ud-" + std::to_string(getpid()) + "-";
    setenv("NDNIC_TEST_CAPTURE", prefix_.c_str(), 1);
    TwoNodes::SetUp();
    unsetenv("NDNIC_TEST_CAPTURE");
    for (Node* n : {a.get(), b.get()})
      ASSERT_TRUE(n->dev.register_mr(n->pd, n->buf.data(), n->buf.size(), kAccessLocalWrite, &n->mr));
  }
  void TearDown() override {
    TwoNodes::TearDown();
    for (unsigned n = 0; n < 256; n++) unlink((prefix_ + "tn" + std::to_string(n) + ".pcap").c_str());
  }

  /// A UD QP in RTS: QP1 when gsi.
  Qp* ud_qp(Node& n, bool gsi, uint32_t qkey = kQkey, uint32_t mtu = 1024) {
    QpCaps caps;
    caps.type = QpType::kUd;
    caps.gsi = gsi;
    caps.send_cq = n.scq;
    caps.recv_cq = n.rcq;
    caps.pd = n.pd;
    Qp* qp = n.dev.create_qp(caps);
    EXPECT_NE(qp, nullptr);
    if (!qp) return nullptr;
    QpAttr at;
    at.qkey = qkey;
    at.path_mtu = mtu;
    EXPECT_TRUE(qp->modify(QpState::kInit, at));
    EXPECT_TRUE(qp->modify(QpState::kRtr, at));
    EXPECT_TRUE(qp->modify(QpState::kRts, at));
    return qp;
  }

  /// A datagram of `len` bytes at `off` in from's buffer, filled with `fill`.
  SendWr datagram(Node& from, uint64_t off, uint32_t len, uint64_t wr_id, Node& to, uint32_t qpn,
                  uint32_t qkey, uint8_t fill) {
    std::memset(from.buf.data() + off, fill, len);
    SendWr wr = send_wr(WrOpcode::kSend, from, off, len, wr_id);
    wr.ud = {};
    wr.ud.dest_ipv4 = to.port.ipv4();
    wr.ud.remote_qpn = qpn;
    wr.ud.qkey = qkey;
    return wr;
  }

  /// Every RoCE frame A's port saw, decoded, with whether A sent it.
  std::vector<std::pair<bool, wire::RocePacket>> frames() {
    const uint32_t a_ip = a->port.ipv4();
    a->dev.close();
    a->port.close();
    std::vector<std::pair<bool, wire::RocePacket>> out;
    for (unsigned n = 0; n < 256; n++) {
      const std::string path = prefix_ + "tn" + std::to_string(n) + ".pcap";
      if (access(path.c_str(), R_OK) != 0) continue;
      wire::PcapReader r;
      if (!r.open(path)) continue;
      out.clear();
      bytes_.clear();
      for (const auto& rec : r.records()) bytes_.push_back(rec.data);
      for (const auto& b : bytes_) {
        wire::RocePacket p;
        if (wire::decode_frame(b.data(), b.size(), &p) != wire::Reject::kOk) continue;
        out.emplace_back(p.ip4.src == a_ip, p);
      }
    }
    return out;
  }

  std::string prefix_;
  std::vector<std::vector<uint8_t>> bytes_;  ///< the frames frames() points into
};

TEST_F(Ud, MadsToQp1CarrySourceAndPayload) {
  Qp* ga = ud_qp(*a, true);
  Qp* gb = ud_qp(*b, true);
  ASSERT_EQ(ga->qpn(), 1u);
  ASSERT_EQ(gb->qpn(), 1u);
  constexpr unsigned kN = 5;
  for (unsigned i = 0; i < kN; i++) ASSERT_TRUE(gb->post_recv(recv_wr(*b, i * 4096, 4096, 100 + i)));
  // The WR's Q_Key is ignored on QP1: the GSI key goes on the wire.
  for (unsigned i = 0; i < kN; i++)
    ASSERT_TRUE(ga->post_send(datagram(*a, i * kMad, kMad, i, *b, 1, 0, uint8_t(0xA0 + i))));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, kN, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, kN, &rc));
  for (unsigned i = 0; i < kN; i++) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sc[i].wr_id, i);
    EXPECT_EQ(sc[i].opcode, WcOpcode::kSend);
    const Completion& c = rc[i];
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
    EXPECT_EQ(c.wr_id, 100 + i);
    EXPECT_EQ(c.opcode, WcOpcode::kRecv);
    EXPECT_EQ(c.byte_len, kMad);
    EXPECT_EQ(c.qpn, 1u);
    EXPECT_EQ(c.src_ipv4, a->port.ipv4());
    EXPECT_EQ(c.src_qpn, 1u);
    const uint8_t* got = b->buf.data() + i * 4096;
    EXPECT_TRUE(std::all_of(got, got + kMad, [&](uint8_t v) { return v == 0xA0 + i; }));
    EXPECT_EQ(got[kMad], 0);  // no GRH in front, nothing past the end
  }
  // The reply goes where the completion says the request came from.
  ASSERT_TRUE(ga->post_recv(recv_wr(*a, 500000, 4096, 7)));
  ASSERT_TRUE(gb->post_send(datagram(*b, 0, kMad, 9, *a, rc[0].src_qpn, 0, 0x5A)));
  std::vector<Completion> back;
  ASSERT_TRUE(wait_cq(a->rcq, 1, &back));
  EXPECT_EQ(back[0].src_ipv4, b->port.ipv4());
  EXPECT_EQ(back[0].byte_len, kMad);
  EXPECT_EQ(a->buf[500000], 0x5A);

  // On the wire, as rxe's CM MADs: UD SEND ONLY with DETH {GSI Q_Key, QP 1}, AckReq, PSNs
  // from 0, UDP source port 0xC000 + hash_32(1, 14); nothing answers them.
  unsigned from_a = 0, from_b = 0;
  for (const auto& [mine, p] : frames()) {
    EXPECT_EQ(p.bth.opcode, wire::kUdSendOnly);
    EXPECT_EQ(wire::opcode_info(p.bth.opcode).ext, wire::kHdrDeth);
    EXPECT_EQ(p.bth.dest_qp, 1u);
    EXPECT_EQ(p.deth.qkey, kGsiQkey);
    EXPECT_EQ(p.deth.src_qp, 1u);
    EXPECT_TRUE(p.bth.ack_req);
    EXPECT_EQ(p.udp.src_port, 0xd872);
    EXPECT_EQ(p.payload_len, kMad);
    EXPECT_EQ(p.bth.psn, mine ? from_a : from_b);
    (mine ? from_a : from_b)++;
  }
  EXPECT_EQ(from_a, kN);
  EXPECT_EQ(from_b, 1u);
}

TEST_F(Ud, OrdinaryUdQpsExchangeDatagrams) {
  Qp* gsi = ud_qp(*a, true);  // QP1 beside them: ordinary UD QPs take normal numbers
  Qp* qa = ud_qp(*a, false);
  Qp* qb = ud_qp(*b, false);
  ASSERT_NE(gsi, nullptr);
  EXPECT_GE(qa->qpn(), 0x11u);
  EXPECT_GE(qb->qpn(), 0x11u);
  constexpr unsigned kN = 8;
  for (unsigned i = 0; i < kN; i++) {
    ASSERT_TRUE(qa->post_recv(recv_wr(*a, 100000 + i * 2048, 2048, i)));
    ASSERT_TRUE(qb->post_recv(recv_wr(*b, 100000 + i * 2048, 2048, i)));
  }
  for (unsigned i = 0; i < kN; i++) {
    ASSERT_TRUE(qa->post_send(datagram(*a, i * 1024, 1000 + i, i, *b, qb->qpn(), kQkey, uint8_t(i))));
    ASSERT_TRUE(qb->post_send(datagram(*b, i * 1024, 1000 + i, i, *a, qa->qpn(), kQkey, uint8_t(0x80 + i))));
  }
  std::vector<Completion> sa, sb, ra, rb;
  ASSERT_TRUE(wait_cq(a->scq, kN, &sa));
  ASSERT_TRUE(wait_cq(b->scq, kN, &sb));
  ASSERT_TRUE(wait_cq(a->rcq, kN, &ra));
  ASSERT_TRUE(wait_cq(b->rcq, kN, &rb));
  for (unsigned i = 0; i < kN; i++) {
    EXPECT_EQ(sa[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sb[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rb[i].byte_len, 1000 + i);
    EXPECT_EQ(rb[i].src_qpn, qa->qpn());
    EXPECT_EQ(rb[i].qpn, qb->qpn());
    EXPECT_EQ(ra[i].src_qpn, qb->qpn());
    EXPECT_EQ(ra[i].src_ipv4, b->port.ipv4());
    EXPECT_EQ(b->buf[100000 + i * 2048 + 999], i);
    EXPECT_EQ(a->buf[100000 + i * 2048 + 999], 0x80 + i);
  }
  const uint32_t qpn_a = qa->qpn();
  unsigned n = 0;
  for (const auto& [mine, p] : frames()) {
    if (!mine) continue;
    EXPECT_EQ(p.bth.opcode, wire::kUdSendOnly);
    EXPECT_EQ(p.deth.qkey, kQkey);
    EXPECT_EQ(p.deth.src_qp, qpn_a);
    EXPECT_EQ(p.udp.src_port, uint16_t(0xC000 + ((qpn_a * 0x61C88647u) >> 18)));
    EXPECT_EQ(p.bth.psn, n++);
  }
  EXPECT_EQ(n, kN);
}

TEST_F(Ud, WrongQkeyIsDroppedAndCounted) {
  Qp* qa = ud_qp(*a, false);
  Qp* qb = ud_qp(*b, false);
  Qp* gb = ud_qp(*b, true);
  ASSERT_TRUE(qb->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(gb->post_recv(recv_wr(*b, 8192, 4096, 2)));
  ASSERT_TRUE(qa->post_send(datagram(*a, 0, 64, 1, *b, qb->qpn(), kQkey + 1, 1)));
  // QP1 takes only the GSI key, which only a GSI QP sends.
  ASSERT_TRUE(qa->post_send(datagram(*a, 0, 64, 2, *b, 1, kQkey, 1)));
  ASSERT_TRUE(run_until([&] { return qb->counters().qkey_drops == 1 && gb->counters().qkey_drops == 1; }));
  Completion c;
  EXPECT_EQ(b->rcq->poll(&c, 1), 0u);
  // The receives are still there for the right key.
  ASSERT_TRUE(qa->post_send(datagram(*a, 0, 64, 3, *b, qb->qpn(), kQkey, 3)));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(qb->counters().qkey_drops, 1u);
}

TEST_F(Ud, OversizeMessageFailsLocallyAndTheQpGoesOn) {
  Qp* qa = ud_qp(*a, false, kQkey, 256);
  Qp* qb = ud_qp(*b, false);
  ASSERT_TRUE(qb->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(qa->post_send(datagram(*a, 0, 257, 1, *b, qb->qpn(), kQkey, 1)));
  ASSERT_TRUE(qa->post_send(datagram(*a, 0, 256, 2, *b, qb->qpn(), kQkey, 2)));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  EXPECT_EQ(sc[0].status, WcStatus::kLocalLength);
  EXPECT_EQ(sc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(qa->state(), QpState::kRts);
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].byte_len, 256u);
  EXPECT_EQ(qa->counters().tx_packets, 1u);  // the oversize one never left
}

TEST_F(Ud, NoReceivePostedDropsUntilOneIs) {
  Qp* ga = ud_qp(*a, true);
  Qp* gb = ud_qp(*b, true);
  for (unsigned i = 0; i < 3; i++) ASSERT_TRUE(ga->post_send(datagram(*a, i * kMad, kMad, i, *b, 1, 0, uint8_t(i + 1))));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 3, &sc));
  ASSERT_TRUE(run_until([&] { return gb->counters().no_recv_drops == 3; }));
  EXPECT_EQ(gb->counters().rnr_naks_sent, 0u);  // UD has no RNR
  ASSERT_TRUE(gb->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(ga->post_send(datagram(*a, 4 * kMad, kMad, 4, *b, 1, 0, 0x44)));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(b->buf[0], 0x44);
  EXPECT_EQ(gb->counters().no_recv_drops, 3u);
}

TEST_F(Ud, ReceiveTooSmallFailsOnlyThatReceive) {
  Qp* ga = ud_qp(*a, true);
  Qp* gb = ud_qp(*b, true);
  ASSERT_TRUE(gb->post_recv(recv_wr(*b, 0, 100, 1)));
  ASSERT_TRUE(gb->post_recv(recv_wr(*b, 4096, 4096, 2)));
  ASSERT_TRUE(ga->post_send(datagram(*a, 0, kMad, 1, *b, 1, 0, 1)));
  ASSERT_TRUE(ga->post_send(datagram(*a, 0, kMad, 2, *b, 1, 0, 2)));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_EQ(rc[0].status, WcStatus::kLocalLength);
  EXPECT_EQ(rc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(gb->state(), QpState::kRts);
}

TEST_F(Ud, QpNotReadyCountsAsUnknown) {
  Qp* ga = ud_qp(*a, true);
  QpCaps caps;
  caps.type = QpType::kUd;
  caps.gsi = true;
  caps.send_cq = b->scq;
  caps.recv_cq = b->rcq;
  caps.pd = b->pd;
  Qp* gb = b->dev.create_qp(caps);
  ASSERT_NE(gb, nullptr);
  ASSERT_TRUE(gb->modify(QpState::kInit, {}));
  ASSERT_TRUE(gb->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(ga->post_send(datagram(*a, 0, kMad, 1, *b, 1, 0, 1)));
  ASSERT_TRUE(run_until([&] { return b->dev.counters().unknown_qp == 1; }));
  // An RC QP does not take datagrams either.
  connect();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, 1)));
  ASSERT_TRUE(ga->post_send(datagram(*a, 0, kMad, 2, *b, b->qp->qpn(), 0, 1)));
  ASSERT_TRUE(run_until([&] { return b->dev.counters().unknown_qp == 2; }));
}

TEST_F(Ud, GsiQpIsUniqueAndUdTakesSendsOnly) {
  QpCaps caps;
  caps.type = QpType::kUd;
  caps.gsi = true;
  caps.send_cq = a->scq;
  caps.recv_cq = a->rcq;
  caps.pd = a->pd;
  Qp* g = a->dev.create_qp(caps);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(a->dev.create_qp(caps), nullptr);
  a->dev.destroy_qp(g);
  g = a->dev.create_qp(caps);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->qpn(), 1u);
  caps.type = QpType::kRc;
  EXPECT_EQ(a->dev.create_qp(caps), nullptr);  // the GSI QP is a UD QP

  ASSERT_TRUE(g->modify(QpState::kInit, {}));
  SendWr w = datagram(*a, 0, kMad, 1, *b, 1, 0, 1);
  w.opcode = WrOpcode::kWrite;
  EXPECT_FALSE(g->post_send(w));
  w.opcode = WrOpcode::kSend;
  w.ud.dest_ipv4 = 0;
  EXPECT_FALSE(g->post_send(w));
}

// Two shards on one two-queue port: UD QPs live on shard 0, which owns ARP, and datagrams
// that arrive on queue 1 are dispatched to it. The peer is a bare port that puts frames on
// either queue (a net_ring pair has no RSS: A's TX queue q is B's RX queue q).

// A datagram whose destination never answers ARP does not hold back the datagrams behind it
// (before: QP1 stalled every later MAD until ARP gave up, about a second per such address), and
// the send completions still come in order.
TEST_F(Ud, ADatagramWaitingForArpDoesNotHoldBackTheOthers) {
  Qp* qa = ud_qp(*a, false);
  Qp* qb = ud_qp(*b, false);
  ASSERT_TRUE(qb->post_recv(recv_wr(*b, 100000, 2048, 7)));
  SendWr lost = datagram(*a, 0, 100, 1, *b, qb->qpn(), kQkey, 0x11);
  lost.ud.dest_ipv4 = b->port.ipv4() + 77;  // nobody there: ARP is never answered
  ASSERT_TRUE(qa->post_send(lost));
  ASSERT_TRUE(qa->post_send(datagram(*a, 1024, 100, 2, *b, qb->qpn(), kQkey, 0x22)));
  std::vector<Completion> rb, sa;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rb));
  EXPECT_EQ(b->buf[100000], 0x22);
  Completion c[4];
  // The first is still waiting for ARP (about a second), so nothing has completed yet; had the
  // second waited behind it, both would have completed by now.
  EXPECT_EQ(a->scq->poll(c, 4), 0u) << "the second datagram waited for the first one's ARP";
  ASSERT_TRUE(wait_cq(a->scq, 2, &sa, 5000));
  EXPECT_EQ(sa[0].wr_id, 1u);
  EXPECT_EQ(sa[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(sa[1].wr_id, 2u);
  EXPECT_EQ(sa[1].status, WcStatus::kSuccess);
}

TEST(UdSharded, DatagramsOnEitherQueueReachTheQp) {
  constexpr unsigned kShards = 2;
  glue::Port peer, port;
  Device dev;
  ndnic::testing::PairSpec spec;
  spec.name = "udsh";
  spec.ipv4 = {0xC6123D01u, 0xC6123D02u};
  spec.queues = kShards;
  spec.shards = kShards;
  // A raw peer, and the device on the other port.
  ASSERT_EQ(ndnic::testing::open_pair(spec, {&peer, &port}, {nullptr, &dev}), "");
  const uint32_t pd = dev.alloc_pd();
  std::vector<uint8_t> buf(1 << 20);
  MrKeys mr;
  ASSERT_TRUE(dev.register_mr(pd, buf.data(), buf.size(), kAccessLocalWrite, &mr));
  Cq* cq = dev.create_cq(1024);
  Qp* qp[2] = {};
  for (unsigned i = 0; i < 2; i++) {
    QpCaps caps;
    caps.type = QpType::kUd;
    caps.gsi = i == 0;
    caps.send_cq = caps.recv_cq = cq;
    caps.pd = pd;
    qp[i] = dev.create_qp(caps);
    ASSERT_NE(qp[i], nullptr);
    QpAttr at;
    at.qkey = kQkey;
    ASSERT_TRUE(qp[i]->modify(QpState::kInit, at));
    ASSERT_TRUE(qp[i]->modify(QpState::kRtr, at));
    ASSERT_TRUE(qp[i]->modify(QpState::kRts, at));
    for (unsigned k = 0; k < 2; k++) {
      RecvWr r{};
      r.wr_id = i * 10 + k;
      r.num_sge = 1;
      r.sge[0] = {reinterpret_cast<uint64_t>(buf.data() + (i * 2 + k) * 4096), 4096, mr.lkey};
      ASSERT_TRUE(qp[i]->post_recv(r));
    }
  }
  // To each QP, one datagram on each queue, from the peer's QP 0x33.
  std::vector<uint8_t> mad(kMad, 0x77);
  for (unsigned i = 0; i < 2; i++) {
    for (uint16_t q = 0; q < kShards; q++) {
      wire::RocePacket p;
      std::memcpy(p.eth.dst, port.mac().addr_bytes, 6);
      std::memcpy(p.eth.src, peer.mac().addr_bytes, 6);
      p.ip4.src = peer.ipv4();
      p.ip4.dst = port.ipv4();
      p.udp.src_port = 0xC000;
      p.bth.opcode = wire::kUdSendOnly;
      p.bth.dest_qp = qp[i]->qpn();
      p.bth.psn = q;
      p.deth.qkey = i == 0 ? kGsiQkey : kQkey;
      p.deth.src_qp = 0x33;
      p.payload = mad.data();
      p.payload_len = kMad;
      rte_mbuf* m = rte_pktmbuf_alloc(peer.mempool());
      ASSERT_NE(m, nullptr);
      const size_t len = wire::encode_frame(p, rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m));
      ASSERT_GT(len, 0u);
      m->data_len = uint16_t(len);
      m->pkt_len = uint32_t(len);
      ASSERT_EQ(peer.tx_burst(&m, 1, q), 1);
    }
  }
  std::vector<Completion> rc;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rc.size() < 4 && std::chrono::steady_clock::now() < end) {
    dev.poll();
    Completion c[8];
    const unsigned k = cq->poll(c, 8);
    rc.insert(rc.end(), c, c + k);
  }
  ASSERT_EQ(rc.size(), 4u);
  for (const Completion& c : rc) {
    EXPECT_EQ(c.status, WcStatus::kSuccess);
    EXPECT_EQ(c.byte_len, kMad);
    EXPECT_EQ(c.src_ipv4, peer.ipv4());
    EXPECT_EQ(c.src_qpn, 0x33u);
  }
  EXPECT_EQ(dev.counters().dispatched, 2u);  // the two that came in on queue 1
  EXPECT_EQ(dev.counters().unknown_qp, 0u);

  // A reply from QP1 resolves the peer's MAC by ARP (the peer's port answers as it polls).
  SendWr w{};
  w.opcode = WrOpcode::kSend;
  w.flags = kWrSignaled;
  w.num_sge = 1;
  w.sge[0] = {reinterpret_cast<uint64_t>(buf.data()), kMad, mr.lkey};
  w.ud.dest_ipv4 = peer.ipv4();
  w.ud.remote_qpn = 0x33;
  ASSERT_TRUE(qp[0]->post_send(w));
  wire::RocePacket got;
  bool seen = false;
  const auto reply_end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!seen && std::chrono::steady_clock::now() < reply_end) {
    dev.poll();
    rte_mbuf* in[8];
    for (uint16_t q = 0; q < kShards; q++) {
      const uint16_t n = peer.rx_burst(in, 8, q);
      for (uint16_t k = 0; k < n; k++) {
        if (in[k]->nb_segs > 1) {
          ASSERT_EQ(rte_pktmbuf_linearize(in[k]), 0);  // a chained frame, as a zero-copy one is
        }
        if (!seen && wire::decode_frame(rte_pktmbuf_mtod(in[k], uint8_t*), in[k]->data_len, &got) ==
                         wire::Reject::kOk) {
          seen = true;
          EXPECT_EQ(got.bth.opcode, wire::kUdSendOnly);
          EXPECT_EQ(got.bth.dest_qp, 0x33u);
          EXPECT_EQ(got.deth.qkey, kGsiQkey);
          EXPECT_EQ(got.deth.src_qp, 1u);
          EXPECT_EQ(got.udp.src_port, 0xd872);
        }
        rte_pktmbuf_free(in[k]);
      }
    }
  }
  EXPECT_TRUE(seen);
  ndnic::testing::close_pair({&peer, &port}, {nullptr, &dev});
}

}  // namespace
}  // namespace ndnic::nic::testing
