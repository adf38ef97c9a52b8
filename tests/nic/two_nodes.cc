#include "tests/nic/two_nodes.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ndnic::nic::testing {
namespace {

constexpr uint32_t kIpA = 0xC6122801;  // 198.18.40.1
constexpr uint32_t kIpB = 0xC6122802;
unsigned g_pair = 0;

}  // namespace

void TwoNodes::SetUp() {
  a = std::make_unique<Node>();
  b = std::make_unique<Node>();
  uint16_t pa, pb;
  const std::string name = "tn" + std::to_string(g_pair++);
  ASSERT_TRUE(glue::make_ring_pair(name, &pa, &pb));
  glue::PortConfig ca, cb;
  ca.device = std::to_string(pa);
  cb.device = std::to_string(pb);
  ca.ipv4 = kIpA;
  cb.ipv4 = kIpB;
  ca.mbuf_data_room = cb.mbuf_data_room = 4096 + 256 + RTE_PKTMBUF_HEADROOM;
  ca.mbufs = cb.mbufs = 8191;
  // NDNIC_TEST_CAPTURE=prefix writes A's frames (both directions) to prefix<N>.pcap.
  if (const char* cap = getenv("NDNIC_TEST_CAPTURE")) ca.capture_path = cap + name + ".pcap";
  ASSERT_TRUE(a->port.open(ca)) << a->port.error();
  ASSERT_TRUE(b->port.open(cb)) << b->port.error();
  for (Node* n : {a.get(), b.get()}) {
    DeviceConfig dc;
    dc.ports = {&n->port};
    ASSERT_TRUE(n->dev.open(dc)) << n->dev.error();
    n->pd = n->dev.alloc_pd();
    n->buf.assign(kBufSize, 0);
    n->scq = n->dev.create_cq(4096);
    n->rcq = n->dev.create_cq(4096);
    ASSERT_NE(n->scq, nullptr);
  }
}

void TwoNodes::TearDown() {
  for (Node* n : {a.get(), b.get()}) {
    if (!n) continue;
    n->dev.close();
    n->port.close();
  }
}

void TwoNodes::connect(const ConnectOptions& o) {
  opts = o;
  for (Node* n : {a.get(), b.get()}) {
    if (n->qp) n->dev.destroy_qp(n->qp);
    if (n->mr.lkey) n->dev.deregister_mr(n->mr.lkey);
    ASSERT_TRUE(n->dev.register_mr(n->pd, n->buf.data(), n->buf.size(), o.access, &n->mr));
    QpCaps caps;
    caps.send_cq = n->scq;
    caps.recv_cq = n->rcq;
    caps.pd = n->pd;
    caps.max_send_wr = 1024;
    caps.max_recv_wr = 1024;
    n->qp = n->dev.create_qp(caps);
    ASSERT_NE(n->qp, nullptr);
    ASSERT_TRUE(n->qp->modify(QpState::kInit, {}));
  }
  auto up = [&](Node& me, Node& peer, uint32_t my_psn, uint32_t peer_psn) {
    QpAttr at;
    at.remote_qpn = peer.qp->qpn();
    at.rq_psn = peer_psn;
    at.sq_psn = my_psn;
    at.path_mtu = o.mtu;
    at.dest_ipv4 = peer.port.ipv4();
    at.retry_cnt = o.retry_cnt;
    at.rnr_retry = o.rnr_retry;
    at.timeout = o.timeout;
    at.min_rnr_timer = o.min_rnr_timer;
    at.max_rd_atomic = o.max_rd_atomic;
    ASSERT_TRUE(me.qp->modify(QpState::kRtr, at));
    ASSERT_TRUE(me.qp->modify(QpState::kRts, at));
  };
  up(*a, *b, o.psn_a, o.psn_b);
  up(*b, *a, o.psn_b, o.psn_a);
}

bool TwoNodes::run_until(const std::function<bool()>& pred, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    a->dev.poll();
    b->dev.poll();
  }
  return true;
}

bool TwoNodes::wait_cq(Cq* cq, size_t n, std::vector<Completion>* out, int ms) {
  const size_t want = out->size() + n;
  return run_until(
      [&] {
        Completion c[64];
        unsigned k = cq->poll(c, 64);
        out->insert(out->end(), c, c + k);
        return out->size() >= want;
      },
      ms);
}

SendWr TwoNodes::send_wr(WrOpcode op, Node& from, uint64_t off, uint32_t len, uint64_t wr_id) {
  SendWr wr{};
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.flags = kWrSignaled;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(from.buf.data() + off), len, from.mr.lkey};
  return wr;
}

RecvWr TwoNodes::recv_wr(Node& on, uint64_t off, uint32_t len, uint64_t wr_id) {
  RecvWr wr{};
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(on.buf.data() + off), len, on.mr.lkey};
  return wr;
}

}  // namespace ndnic::nic::testing
