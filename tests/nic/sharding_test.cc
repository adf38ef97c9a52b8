// Several shards per device: QPs spread over them, each shard on its own port queue, frames
// that arrive at the wrong shard dispatched to the owner, ARP through the queue-0 shard; or
// each pair placed on the same shard at both ends (QpCaps::shard), so that nothing is dispatched.
#include <cstring>
#include <memory>
#include <tuple>
#include <chrono>

#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/fixtures/node_pair.h"
#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

constexpr unsigned kShards = 2;
constexpr unsigned kPairs = 8;
constexpr unsigned kPerPair = 200;
constexpr uint32_t kMsg = 1500;  // two packets at MTU 1024

struct ShardedNode {
  glue::Port port;
  Device dev;
  uint32_t pd = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kPairs * kPerPair * 2048);
  MrKeys mr;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  Qp* qp[kPairs] = {};
};

/// Where each shard's time went (Device::shard_loads), for worker lcores and for the test
/// thread's turns (DeviceConfig::count_app_load): B received every frame its port took, once.
void check_loads(ShardedNode& a, ShardedNode& b, bool workers) {
  const std::vector<Device::ShardLoad> la = a.dev.shard_loads(), lb = b.dev.shard_loads();
  ASSERT_EQ(la.size(), kShards);
  ASSERT_EQ(lb.size(), kShards);
  uint64_t frames = 0, busy = 0, posts = 0;
  for (const auto* loads : {&la, &lb}) {
    for (unsigned i = 0; i < kShards; i++) {
      const Device::ShardLoad& l = (*loads)[i];
      EXPECT_EQ(l.app_driven, !workers);
      if (!workers) {
        EXPECT_EQ(l.lcore, i);  // the shard's index
      }
      EXPECT_GT(l.polls, 0u);
      EXPECT_LE(l.busy_polls, l.polls);
      EXPECT_LE(l.busy_cycles, l.cycles);
      EXPECT_LE(l.rx_bursts, l.busy_polls);  // a burst that brought frames is work
      if (workers) {
        EXPECT_EQ(l.post_turns, 0u);  // the application never runs a worker's shard
      }
      if (l.post_turns) {
        EXPECT_GT(l.post_cycles, 0u);
      }
      busy += l.busy_cycles;
      posts += l.post_turns;
      if (loads == &lb) frames += l.rx_frames;
    }
  }
  EXPECT_GT(busy, 0u);
  // B's shards took exactly the RoCE frames its port classified (data, none dropped).
  EXPECT_EQ(frames, b.port.counters().rx_roce);
  EXPECT_GE(frames, uint64_t(kPairs) * kPerPair);
  // Each pair's send_now() ran A's shard for that QP (the test thread held no other turn).
  if (!workers) {
    EXPECT_EQ(posts, kPairs);
  }
}

/// `placed`: pair q's QPs run on shard q % kShards at both ends (QpCaps::shard); otherwise
/// by QPN, which B's spare QP puts one off A's.
void run_sharded(bool workers, bool placed = false) {
  ShardedNode a, b;
  ndnic::testing::PairSpec spec;
  spec.name = "sh";
  spec.ipv4 = {0xC6123C01u, 0xC6123C02u};
  spec.queues = kShards;
  spec.mbufs = 16383;
  if (workers) {
    spec.lcores = {std::vector<unsigned>{1, 2}, std::vector<unsigned>{3, 4}};
    static_assert(kShards == 2);
  } else {
    spec.shards = kShards;
    spec.count_app_load = true;
  }
  ASSERT_EQ(ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev}), "");
  for (ShardedNode* n : {&a, &b}) {
    n->pd = n->dev.alloc_pd();
    ASSERT_TRUE(n->dev.register_mr(n->pd, n->buf.data(), n->buf.size(), kAccessLocalWrite | kAccessRemoteWrite, &n->mr));
    n->scq = n->dev.create_cq(8192);
    n->rcq = n->dev.create_cq(8192);
    // B's QP numbers are one off A's, so each frame lands on the queue of the shard that
    // does not own its QP and must be dispatched.
    if (n == &b) {
      QpCaps spare;
      spare.send_cq = spare.recv_cq = n->scq;
      spare.pd = n->pd;
      ASSERT_NE(n->dev.create_qp(spare), nullptr);
    }
    for (unsigned q = 0; q < kPairs; q++) {
      QpCaps caps;
      caps.send_cq = n->scq;
      caps.recv_cq = n->rcq;
      caps.pd = n->pd;
      caps.max_send_wr = caps.max_recv_wr = kPerPair;
      if (placed) caps.shard = int(q % kShards);
      n->qp[q] = n->dev.create_qp(caps);
      ASSERT_NE(n->qp[q], nullptr);
    }
  }
  for (unsigned q = 0; q < kPairs; q++) {
    for (auto [me, peer, ip] : {std::tuple{a.qp[q], b.qp[q], b.port.ipv4()}, std::tuple{b.qp[q], a.qp[q], a.port.ipv4()}}) {
      QpAttr at;
      at.remote_qpn = peer->qpn();
      at.dest_ipv4 = ip;
      at.rq_psn = at.sq_psn = 0x10 * q;
      ASSERT_TRUE(me->modify(QpState::kInit, at));
      ASSERT_TRUE(me->modify(QpState::kRtr, at));
      ASSERT_TRUE(me->modify(QpState::kRts, at));
    }
  }
  // Every pair sends kPerPair messages A -> B, each slot with its own pattern.
  for (unsigned q = 0; q < kPairs; q++) {
    for (unsigned m = 0; m < kPerPair; m++) {
      const size_t slot = (q * kPerPair + m) * 2048;
      RecvWr r{};
      r.wr_id = q << 16 | m;
      r.num_sge = 1;
      r.sge[0] = {reinterpret_cast<uint64_t>(b.buf.data() + slot), 2048, b.mr.lkey};
      ASSERT_TRUE(b.qp[q]->post_recv(r));
      for (uint32_t k = 0; k < kMsg; k++) a.buf[slot + k] = uint8_t(q * 37 + m * 11 + k);
      SendWr w{};
      w.wr_id = q << 16 | m;
      w.opcode = WrOpcode::kSend;
      w.flags = kWrSignaled;
      w.num_sge = 1;
      w.sge[0] = {reinterpret_cast<uint64_t>(a.buf.data() + slot), kMsg, a.mr.lkey};
      ASSERT_TRUE(a.qp[q]->post_send(w));
    }
    if (!workers) a.qp[q]->send_now();  // as a run-to-completion post does: a turn at the engine
  }
  const unsigned total = kPairs * kPerPair;
  unsigned sends = 0, recvs = 0;
  std::vector<unsigned> next(kPairs, 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((sends < total || recvs < total) && std::chrono::steady_clock::now() < end) {
    if (!workers) {
      a.dev.poll();
      b.dev.poll();
    }
    Completion c[64];
    for (unsigned k = a.scq->poll(c, 64), i = 0; i < k; i++, sends++)
      ASSERT_EQ(c[i].status, WcStatus::kSuccess) << wc_status_name(c[i].status);
    for (unsigned k = b.rcq->poll(c, 64), i = 0; i < k; i++, recvs++) {
      ASSERT_EQ(c[i].status, WcStatus::kSuccess);
      const unsigned q = unsigned(c[i].wr_id >> 16), m = unsigned(c[i].wr_id & 0xffff);
      ASSERT_EQ(m, next[q]++) << "pair " << q << " out of order";  // in order per QP
      ASSERT_EQ(c[i].byte_len, kMsg);
      const size_t slot = (q * kPerPair + m) * 2048;
      ASSERT_EQ(0, memcmp(a.buf.data() + slot, b.buf.data() + slot, kMsg)) << "pair " << q << " msg " << m;
    }
  }
  EXPECT_EQ(sends, total);
  EXPECT_EQ(recvs, total);
  if (placed) {
    // Each frame arrived on the queue of the shard that owns its QP: none took a dispatch ring.
    EXPECT_EQ(a.dev.counters().dispatched, 0u);
    EXPECT_EQ(b.dev.counters().dispatched, 0u);
  } else {
    // The frames went through the dispatch rings, in both directions, and none was lost there.
    EXPECT_GE(b.dev.counters().dispatched, total);
    EXPECT_GT(a.dev.counters().dispatched, 0u);
  }
  EXPECT_EQ(a.dev.counters().dispatch_dropped + b.dev.counters().dispatch_dropped, 0u);
  EXPECT_EQ(b.dev.counters().unknown_qp, 0u);
  check_loads(a, b, workers);
  ndnic::testing::close_pair({&a.port, &b.port}, {&a.dev, &b.dev});
}

TEST(Sharding, TwoShardsPolledByTheCaller) { run_sharded(false); }
TEST(Sharding, TwoWorkerLcoresPerDevice) { run_sharded(true); }
TEST(Sharding, QpsPlacedOnTheSameShardAtBothEndsNeedNoDispatch) { run_sharded(true, true); }

}  // namespace
}  // namespace ndnic::nic::testing
