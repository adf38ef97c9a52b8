// Every operation end to end between two engines over a net_ring pair.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

void fill(std::vector<uint8_t>& v, size_t off, size_t len, uint8_t seed) {
  for (size_t i = 0; i < len; i++) v[off + i] = uint8_t(seed + i * 7);
}

class Transport : public TwoNodes, public ::testing::WithParamInterface<uint32_t> {};

TEST_P(Transport, SendSizes) {
  ConnectOptions o;
  o.mtu = GetParam();
  connect(o);
  const std::vector<uint32_t> sizes = {0, 1, 3, 64, o.mtu - 1, o.mtu, o.mtu + 1, 3 * o.mtu + 7, 65536};
  for (size_t i = 0; i < sizes.size(); i++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, i * 70000, 70000, 100 + i)));
  for (size_t i = 0; i < sizes.size(); i++) {
    fill(a->buf, i * 70000, sizes[i], uint8_t(i));
    ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, i * 70000, sizes[i], i)));
  }
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, sizes.size(), &sc));
  ASSERT_TRUE(wait_cq(b->rcq, sizes.size(), &rc));
  for (size_t i = 0; i < sizes.size(); i++) {
    EXPECT_EQ(sc[i].status, WcStatus::kSuccess) << wc_status_name(sc[i].status);
    EXPECT_EQ(sc[i].wr_id, i);
    EXPECT_EQ(sc[i].byte_len, sizes[i]);
    EXPECT_EQ(rc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[i].wr_id, 100 + i);
    EXPECT_EQ(rc[i].opcode, WcOpcode::kRecv);
    EXPECT_EQ(rc[i].byte_len, sizes[i]);
    EXPECT_EQ(0, memcmp(a->buf.data() + i * 70000, b->buf.data() + i * 70000, sizes[i])) << sizes[i];
  }
}

TEST_P(Transport, WriteReadAtomics) {
  ConnectOptions o;
  o.mtu = GetParam();
  connect(o);
  const uint32_t len = 5 * o.mtu + 13;
  fill(a->buf, 0, len, 9);
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, len, 1);
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 4096);
  w.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(w));
  fill(b->buf, 300000, len, 77);
  SendWr r = send_wr(WrOpcode::kRead, *a, 200000, len, 2);
  r.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 300000);
  r.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(r));
  uint64_t target = 100;
  std::memcpy(b->buf.data() + 512000, &target, 8);
  SendWr cs = send_wr(WrOpcode::kCompareSwap, *a, 600000, 8, 3);
  cs.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 512000);
  cs.rkey = b->mr.rkey;
  cs.compare_add = 100;
  cs.swap = 200;
  ASSERT_TRUE(a->qp->post_send(cs));
  SendWr miss = cs;
  miss.wr_id = 4;
  miss.sge[0].addr += 8;
  ASSERT_TRUE(a->qp->post_send(miss));  // compare 100 against 200: no swap
  SendWr fa = cs;
  fa.wr_id = 5;
  fa.opcode = WrOpcode::kFetchAdd;
  fa.compare_add = 5;
  fa.sge[0].addr += 16;
  ASSERT_TRUE(a->qp->post_send(fa));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 5, &sc));
  for (auto& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess) << c.wr_id << " " << wc_status_name(c.status);
  EXPECT_EQ(0, memcmp(a->buf.data(), b->buf.data() + 4096, len));
  EXPECT_EQ(0, memcmp(b->buf.data() + 300000, a->buf.data() + 200000, len));
  uint64_t v[3], now;
  std::memcpy(v, a->buf.data() + 600000, 24);
  std::memcpy(&now, b->buf.data() + 512000, 8);
  EXPECT_EQ(v[0], 100u);
  EXPECT_EQ(v[1], 200u);
  EXPECT_EQ(v[2], 200u);
  EXPECT_EQ(now, 205u);
  EXPECT_EQ(sc[2].opcode, WcOpcode::kCompareSwap);
  EXPECT_EQ(sc[4].byte_len, 8u);
}

INSTANTIATE_TEST_SUITE_P(Mtu, Transport, ::testing::Values(256u, 1024u, 4096u));

// A receive queue kept full (max_recv_wr 7: room for 8, the ring's power of two): every
// completion answered at once by a new receive, which must find room. The responder reads
// each receive in its ring slot and gives the slot back as the receive completes, so a receive
// the application sees completed never holds one; messages of one and of several packets, and
// empty ones, over many laps of the ring.
TEST_F(TwoNodes, AReceiveQueueKeptFull) {
  ConnectOptions o;
  o.max_recv_wr = 7;
  connect(o);
  constexpr uint32_t kSlot = 8192, kRounds = 12, kMost = 16;
  const uint32_t sizes[] = {64, 1, 3 * 1024 + 5, 0, 1024, 4096, 17, 999};
  uint64_t next_recv_id = 0;
  uint32_t depth = 0;  // as many as it takes
  while (depth < kMost && b->qp->post_recv(recv_wr(*b, (next_recv_id % kMost) * kSlot, kSlot, next_recv_id))) {
    depth++;
    next_recv_id++;
  }
  ASSERT_GE(depth, 7u);
  ASSERT_LT(depth, kMost) << "the receive queue takes more than twice its depth";
  uint64_t expect_id = 0;
  for (uint32_t round = 0; round < kRounds; round++) {
    for (uint32_t i = 0; i < depth; i++) {
      const uint32_t len = sizes[(round + i) % 8];
      fill(a->buf, i * kSlot, len, uint8_t(round * 13 + i));
      ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, i * kSlot, len, round * depth + i)));
    }
    uint32_t got = 0;
    ASSERT_TRUE(run_until([&] {
      Completion c[kMost];
      const unsigned n = b->rcq->poll(c, kMost);
      for (unsigned k = 0; k < n; k++, got++) {
        const uint32_t len = sizes[(round + got) % 8];
        EXPECT_EQ(c[k].status, WcStatus::kSuccess) << wc_status_name(c[k].status);
        EXPECT_EQ(c[k].wr_id, expect_id);
        EXPECT_EQ(c[k].byte_len, len);
        EXPECT_EQ(0, memcmp(a->buf.data() + got * kSlot, b->buf.data() + (expect_id % kMost) * kSlot, len))
            << "round " << round << " message " << got;
        expect_id++;
        // In answer to the completion, at once: the slot it held is free again.
        EXPECT_TRUE(b->qp->post_recv(recv_wr(*b, (next_recv_id % kMost) * kSlot, kSlot, next_recv_id)))
            << "round " << round << ": no room for a receive after " << got + 1 << " completions";
        next_recv_id++;
      }
      return got >= depth;
    }));
    ASSERT_EQ(got, depth);
    std::vector<Completion> sc;
    ASSERT_TRUE(wait_cq(a->scq, depth, &sc));
    for (const Completion& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess);
  }
  EXPECT_FALSE(b->qp->post_recv(recv_wr(*b, 0, kSlot, 999))) << "the queue is full again";
}

TEST_F(TwoNodes, ImmediateAndZeroLength) {
  connect();
  for (int i = 0; i < 4; i++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, i * 8192, 8192, 50 + i)));
  SendWr s = send_wr(WrOpcode::kSendImm, *a, 0, 30, 1);
  s.imm = 0x11223344;
  ASSERT_TRUE(a->qp->post_send(s));
  SendWr w = send_wr(WrOpcode::kWriteImm, *a, 0, 2500, 2);
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 100000);
  w.rkey = b->mr.rkey;
  w.imm = 0xcafef00d;
  ASSERT_TRUE(a->qp->post_send(w));
  SendWr z = w;
  z.wr_id = 3;
  z.num_sge = 0;
  z.imm = 0x0badc0de;
  ASSERT_TRUE(a->qp->post_send(z));
  SendWr zs = send_wr(WrOpcode::kSend, *a, 0, 0, 4);
  zs.num_sge = 0;
  ASSERT_TRUE(a->qp->post_send(zs));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 4, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 4, &rc));
  EXPECT_EQ(rc[0].flags & kWcWithImm, kWcWithImm);
  EXPECT_EQ(rc[0].imm_or_inv, 0x11223344u);
  EXPECT_EQ(rc[0].byte_len, 30u);
  EXPECT_EQ(rc[1].opcode, WcOpcode::kRecvWriteImm);
  EXPECT_EQ(rc[1].byte_len, 2500u);
  EXPECT_EQ(rc[1].imm_or_inv, 0xcafef00du);
  EXPECT_EQ(rc[2].opcode, WcOpcode::kRecvWriteImm);
  EXPECT_EQ(rc[2].byte_len, 0u);
  EXPECT_EQ(rc[3].opcode, WcOpcode::kRecv);
  EXPECT_EQ(rc[3].byte_len, 0u);
  EXPECT_EQ(0, memcmp(a->buf.data(), b->buf.data() + 100000, 2500));
}

// Over net_ring, a SEND's or WRITE's payload of DeviceConfig::zero_copy_min bytes or more from
// one registered piece goes out where it lies (a chained frame the receiver reads in place);
// smaller ones, payloads gathered from two pieces and READ responses (which must hold the bytes
// as the READ found them) are copied. The bytes arrive the same either way.
TEST_F(TwoNodes, LargePayloadsGoOutWhereTheyLie) {
  ConnectOptions o;
  o.mtu = 4096;
  connect(o);
  constexpr uint32_t kMin = DeviceConfig::kZeroCopyMinDefault;
  const uint32_t send_len = 2 * 4096 + kMin - 1;  // 4096, 4096 attached; the rest copied
  const uint32_t write_len = 3 * 4096 + kMin + 3; // all four attached, the last with a pad
  const uint32_t read_len = 4096 + 100;           // B's responses copied
  fill(a->buf, 0, send_len, 3);
  fill(a->buf, 20000, write_len, 5);
  fill(b->buf, 40000, read_len, 7);
  fill(a->buf, 60000, 2 * kMin, 9);
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, send_len, 10)));
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, send_len, 1)));
  SendWr w = send_wr(WrOpcode::kWrite, *a, 20000, write_len, 2);
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 20000);
  w.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(w));
  SendWr r = send_wr(WrOpcode::kRead, *a, 40000, read_len, 3);
  r.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 40000);
  r.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(r));
  SendWr two = send_wr(WrOpcode::kWrite, *a, 60000, kMin, 4);  // one packet from two pieces
  two.num_sge = 2;
  two.sge[1] = {two.sge[0].addr + kMin, kMin, two.sge[0].lkey};
  two.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 60000);
  two.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(two));

  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 4, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  for (const Completion& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess) << c.wr_id;
  EXPECT_EQ(rc[0].byte_len, send_len);
  EXPECT_EQ(0, memcmp(a->buf.data(), b->buf.data(), send_len));
  EXPECT_EQ(0, memcmp(a->buf.data() + 20000, b->buf.data() + 20000, write_len));
  EXPECT_EQ(0, memcmp(a->buf.data() + 40000, b->buf.data() + 40000, read_len));
  EXPECT_EQ(0, memcmp(a->buf.data() + 60000, b->buf.data() + 60000, 2 * kMin));
  EXPECT_EQ(a->qp->counters().tx_zero_copy, 2u + 4u);
  EXPECT_EQ(b->qp->counters().tx_zero_copy, 0u);
  EXPECT_EQ(a->qp->counters().retransmits, 0u);
  // Every attached frame, freed by B's lcore, let go of A's region (the free callback, through
  // the shared-info block the chain carries): its deregistration finds nothing in flight.
  EXPECT_TRUE(a->dev.deregister_mr(a->mr.lkey));
  EXPECT_EQ(a->dev.counters().pinned_at_deregister, 0u);
}

}  // namespace
}  // namespace ndnic::nic::testing

namespace ndnic::nic::testing {
namespace {

class LongMessages : public TwoNodes, public ::testing::WithParamInterface<double> {};

// Messages far longer than the 256-packet window: coalesced ACKs inside one message and READ
// responses must move the window, with and without losses.
TEST_P(LongMessages, OneMebibyteSendWriteRead) {
  ConnectOptions o;
  o.timeout = 12;  // 16.7 ms: losses recover by NAK; a busy machine must not fake timeouts
  connect(o);
  if (GetParam() > 0) {
    FaultConfig f;
    f.seed = 99;
    f.tx = {GetParam(), GetParam(), GetParam(), GetParam()};
    a->dev.set_faults(&f);
    f.seed++;
    b->dev.set_faults(&f);
  }
  std::vector<uint8_t> big_a(1 << 20), big_b(1 << 20);
  MrKeys ka, kb;
  ASSERT_TRUE(a->dev.register_mr(a->pd, big_a.data(), big_a.size(), opts.access, &ka));
  ASSERT_TRUE(b->dev.register_mr(b->pd, big_b.data(), big_b.size(), opts.access, &kb));
  for (size_t i = 0; i < big_a.size(); i++) big_a[i] = uint8_t(i * 7 + (i >> 12));
  RecvWr r{};
  r.wr_id = 1;
  r.num_sge = 1;
  r.sge[0] = {reinterpret_cast<uint64_t>(big_b.data()), uint32_t(big_b.size()), kb.lkey};
  ASSERT_TRUE(b->qp->post_recv(r));
  SendWr s{};
  s.opcode = WrOpcode::kSend;
  s.flags = kWrSignaled;
  s.num_sge = 1;
  s.sge[0] = {reinterpret_cast<uint64_t>(big_a.data()), uint32_t(big_a.size()), ka.lkey};
  ASSERT_TRUE(a->qp->post_send(s));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc, 20000));
  EXPECT_EQ(rc[0].byte_len, big_a.size());
  EXPECT_EQ(big_a, big_b);
  // WRITE 1 MiB into B, then READ it back into a fresh buffer.
  std::fill(big_b.begin(), big_b.end(), 0);
  SendWr w = s;
  w.opcode = WrOpcode::kWrite;
  w.remote_addr = reinterpret_cast<uint64_t>(big_b.data());
  w.rkey = kb.rkey;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<uint8_t> back(1 << 20);
  MrKeys kback;
  ASSERT_TRUE(a->dev.register_mr(a->pd, back.data(), back.size(), opts.access, &kback));
  SendWr rd{};
  rd.opcode = WrOpcode::kRead;
  rd.flags = kWrSignaled;
  rd.num_sge = 1;
  rd.sge[0] = {reinterpret_cast<uint64_t>(back.data()), uint32_t(back.size()), kback.lkey};
  rd.remote_addr = reinterpret_cast<uint64_t>(big_b.data());
  rd.rkey = kb.rkey;
  ASSERT_TRUE(a->qp->post_send(rd));
  ASSERT_TRUE(wait_cq(a->scq, 3, &sc, 20000));
  for (auto& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(big_a, big_b);
  EXPECT_EQ(big_a, back);
}

// Run to completion, a post to an idle QP sends through Qp::send_now: the request leaves in
// that call, and nothing is received in it (what arrived waits for the next full iteration).
TEST_F(TwoNodes, SendNowSendsAndLeavesWhatArrivedForThePoll) {
  connect();
  ASSERT_TRUE(a->qp->post_recv(recv_wr(*a, 0, 64, 10)));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 64, 20)));
  // A first exchange resolves both addresses, with both devices polled.
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 8, 1)));
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  ASSERT_TRUE(run_until([&] { return b->qp->counters().tx_packets == 1; }));  // B's ACK

  // B sends to A; A sends before it polls.
  ASSERT_TRUE(b->qp->post_send(send_wr(WrOpcode::kSend, *b, 64, 16, 2)));
  EXPECT_EQ(b->qp->send_now(), 1u) << "the requester took one request and sent one packet";
  EXPECT_EQ(b->qp->counters().tx_packets, 2u);
  const Qp::Counters before = a->qp->counters();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 64, 64, 21)));
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 128, 24, 3)));
  EXPECT_GT(a->qp->send_now(), 0u);
  EXPECT_EQ(a->qp->counters().tx_packets, before.tx_packets + 1) << "the SEND left in send_now";
  EXPECT_EQ(a->qp->counters().rx_packets, before.rx_packets) << "B's SEND waits for a poll";
  Completion c;
  EXPECT_EQ(a->rcq->poll(&c, 1), 0u);
  EXPECT_EQ(a->qp->send_now(), 0u) << "nothing left to send";

  // The poll takes B's SEND; B receives A's.
  ASSERT_TRUE(wait_cq(a->rcq, 1, &rc));
  EXPECT_EQ(rc.back().wr_id, 10u);  // A's first receive
  EXPECT_EQ(rc.back().byte_len, 16u);
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc.back().wr_id, 21u);
  EXPECT_EQ(rc.back().byte_len, 24u);
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->scq, 1, &sc));
  for (const Completion& x : sc) EXPECT_EQ(x.status, WcStatus::kSuccess) << wc_status_name(x.status);
}

INSTANTIATE_TEST_SUITE_P(Faults, LongMessages, ::testing::Values(0.0, 0.01));

}  // namespace
}  // namespace ndnic::nic::testing
