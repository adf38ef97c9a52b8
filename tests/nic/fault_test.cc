// Reliability under injected faults: drop, duplicate, reorder and corrupt in both directions.
// 100,000 messages of mixed opcodes and sizes must arrive exactly once, in order, byte for
// byte, and every completion must appear exactly once. Fetch-and-add makes "exactly once"
// visible in memory: a duplicate that ran twice would show in the counter.
#include <chrono>
#include <cstring>
#include <random>

#include "tests/fixtures/two_nodes.h"

namespace ndnic::nic::testing {
namespace {

constexpr uint32_t kMessages = 100000;
constexpr uint32_t kInFlight = 32;
constexpr uint32_t kSlots = 64;          ///< > kInFlight: a slot is reused only after completion
constexpr uint32_t kSlot = 4096;
constexpr uint64_t kRecvArea = 0, kWriteArea = 256 * 1024, kReadArea = 512 * 1024;
constexpr uint64_t kCounter = 800 * 1024;
constexpr uint64_t kSinkArea = 256 * 1024, kAtomicArea = 768 * 1024;

uint8_t pattern(uint32_t msg, uint32_t i) { return uint8_t(msg * 131 + i * 7 + (i >> 8)); }

struct Msg {
  WrOpcode op;
  uint32_t len;
};

class Faults : public TwoNodes, public ::testing::WithParamInterface<double> {};

TEST_P(Faults, HundredThousandMessagesExactlyOnceInOrder) {
  const double rate = GetParam();
  ConnectOptions o;
  o.timeout = 10;  // 4 ms: tail losses recover quickly, a slow (sanitized) build sees no false timeouts
  o.retry_cnt = 7;
  connect(o);
  // `rate` of the frames in each direction are faulted, split evenly over drop, duplicate,
  // reorder and corrupt, by one switch per direction (each node's TX: faults on both TX and RX
  // would hit every frame twice). At 5% of each kind a READ round trip fails 19% of the time
  // and eight failures in a row (IBTA's retry limit is 7) turn up in ~2% of runs.
  FaultConfig f;
  f.seed = 20261121;
  const double each = rate / 4;
  f.tx = {each, each, each, each};
  a->dev.set_faults(&f);
  f.seed++;
  b->dev.set_faults(&f);

  std::mt19937 rng(7);
  std::vector<Msg> plan(kMessages);
  for (Msg& m : plan) {
    const unsigned k = rng() % 100;
    m.op = k < 40 ? WrOpcode::kSend : k < 60 ? WrOpcode::kWriteImm : k < 80 ? WrOpcode::kWrite
           : k < 95 ? WrOpcode::kRead : WrOpcode::kFetchAdd;
    m.len = m.op == WrOpcode::kFetchAdd ? 8 : (rng() % 4 == 0 ? rng() % kSlot : rng() % 300);
  }
  for (uint32_t i = 0; i < kReadArea / 2; i++) b->buf[kReadArea + i] = uint8_t(i * 31 + 5);

  // B keeps receives posted, one slot each, and checks every delivery in order.
  uint32_t recv_posted = 0, recv_done = 0;
  auto post_recvs = [&] {
    while (recv_posted - recv_done < kSlots) {
      ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, kRecvArea + (recv_posted % kSlots) * kSlot, kSlot, recv_posted)));
      recv_posted++;
    }
  };
  post_recvs();
  std::vector<uint32_t> receiving;  // message numbers that consume a receive, in order
  for (uint32_t i = 0; i < kMessages; i++)
    if (plan[i].op == WrOpcode::kSend || plan[i].op == WrOpcode::kWriteImm) receiving.push_back(i);

  uint32_t posted = 0, completed = 0, fetch_adds = 0;
  std::vector<uint64_t> fetched;
  auto post = [&](uint32_t i) {
    const Msg& m = plan[i];
    const uint64_t slot = (i % kSlots) * kSlot;
    SendWr w{};
    w.wr_id = i;
    w.opcode = m.op;
    w.flags = kWrSignaled;
    w.num_sge = m.len || m.op == WrOpcode::kFetchAdd ? 1 : 0;
    if (m.op == WrOpcode::kRead) {
      w.sge[0] = {reinterpret_cast<uint64_t>(a->buf.data() + kSinkArea + slot), m.len, a->mr.lkey};
      w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + kReadArea + (i % 97));
      w.rkey = b->mr.rkey;
      std::memset(a->buf.data() + kSinkArea + slot, 0, m.len);
    } else if (m.op == WrOpcode::kFetchAdd) {
      w.sge[0] = {reinterpret_cast<uint64_t>(a->buf.data() + kAtomicArea + (i % kSlots) * 8), 8, a->mr.lkey};
      w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + kCounter);
      w.rkey = b->mr.rkey;
      w.compare_add = 1;
    } else {
      for (uint32_t k = 0; k < m.len; k++) a->buf[slot + k] = pattern(i, k);
      w.sge[0] = {reinterpret_cast<uint64_t>(a->buf.data() + slot), m.len, a->mr.lkey};
      w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + kWriteArea + slot);
      w.rkey = b->mr.rkey;
      w.imm = i;
    }
    ASSERT_TRUE(a->qp->post_send(w));
  };

  size_t next_receiving = 0;
  auto check_recv = [&](const Completion& c) {
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
    ASSERT_LT(next_receiving, receiving.size());
    const uint32_t i = receiving[next_receiving++];
    ASSERT_EQ(c.wr_id, recv_done) << "receive completions out of order";
    const Msg& m = plan[i];
    ASSERT_EQ(c.byte_len, m.len) << "message " << i;
    const uint8_t* got = m.op == WrOpcode::kSend ? b->buf.data() + kRecvArea + (c.wr_id % kSlots) * kSlot
                                                 : b->buf.data() + kWriteArea + (i % kSlots) * kSlot;
    if (m.op == WrOpcode::kWriteImm) {
      ASSERT_EQ(c.imm_or_inv, i);
    }
    for (uint32_t k = 0; k < m.len; k++) ASSERT_EQ(got[k], pattern(i, k)) << "message " << i << " byte " << k;
    recv_done++;
  };
  auto check_send = [&](const Completion& c) {
    ASSERT_EQ(c.status, WcStatus::kSuccess) << "message " << c.wr_id << " (opcode " << int(plan[c.wr_id].op)
                                            << ", " << plan[c.wr_id].len << " bytes): " << wc_status_name(c.status);
    ASSERT_EQ(c.wr_id, completed) << "send completions out of order or repeated";
    const uint32_t i = completed;
    const Msg& m = plan[i];
    const uint64_t slot = (i % kSlots) * kSlot;
    if (m.op == WrOpcode::kWrite) {
      ASSERT_EQ(0, memcmp(b->buf.data() + kWriteArea + slot, a->buf.data() + slot, m.len)) << "write " << i;
    } else if (m.op == WrOpcode::kRead) {
      ASSERT_EQ(0, memcmp(a->buf.data() + kSinkArea + slot, b->buf.data() + kReadArea + (i % 97), m.len))
          << "read " << i;
    } else if (m.op == WrOpcode::kFetchAdd) {
      uint64_t v;
      std::memcpy(&v, a->buf.data() + kAtomicArea + (i % kSlots) * 8, 8);
      ASSERT_EQ(v, fetch_adds) << "fetch-add " << i << " saw another's value";
      fetch_adds++;
    }
    completed++;
  };

  const auto t0 = std::chrono::steady_clock::now();
  while (completed < kMessages) {
    while (posted < kMessages && posted - completed < kInFlight) post(posted++);
    if (::testing::Test::HasFatalFailure()) return;
    a->dev.poll();
    b->dev.poll();
    Completion c[64];
    for (unsigned k = a->scq->poll(c, 64), j = 0; j < k; j++) {
      check_send(c[j]);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (unsigned k = b->rcq->poll(c, 64), j = 0; j < k; j++) {
      check_recv(c[j]);
      if (::testing::Test::HasFatalFailure()) return;
    }
    post_recvs();
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(240)) << completed << " completed";
  }
  // Stragglers: every receive completion arrives, and nothing arrives twice.
  ASSERT_TRUE(run_until([&] {
    Completion c[64];
    for (unsigned k = b->rcq->poll(c, 64), j = 0; j < k; j++) check_recv(c[j]);
    return next_receiving == receiving.size();
  }, 5000));
  EXPECT_FALSE(run_until([&] { Completion c; return a->scq->poll(&c, 1) + b->rcq->poll(&c, 1) > 0; }, 100));
  uint64_t counter;
  std::memcpy(&counter, b->buf.data() + kCounter, 8);
  EXPECT_EQ(counter, fetch_adds);  // each fetch-add executed once, duplicates replayed

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Qp::Counters ca = a->qp->counters(), cb = b->qp->counters();
  printf("faults %.0f%%: %u messages in %.2f s; A retransmits %lu, timeouts %lu, PSN NAKs received %lu; "
         "B duplicates %lu, out-of-sequence %lu\n",
         rate * 100, kMessages, secs, ca.retransmits, ca.timeouts, ca.naks_received[0], cb.duplicates,
         cb.out_of_sequence);
  EXPECT_GT(ca.retransmits, 0u);
  EXPECT_GT(cb.duplicates, 0u);
}

INSTANTIATE_TEST_SUITE_P(Rates, Faults, ::testing::Values(0.01, 0.05));

// A PSN sequence NAK acknowledges every PSN before the one it asks for: when it moves forward it
// is progress and refills the retry budget, as an ACK does; only retries that gain nothing count
// against retry_cnt. Long WRITEs with 4% of A's frames dropped see several NAKs inside one
// message with no ACK between them: with retry_cnt 2, counting those NAKs ended writes in
// kRetryExceeded on a loaded machine (found by the vhost fault test at a 17 ms ACK timeout).
using RetryBudget = TwoNodes;
TEST_F(RetryBudget, SequenceNaksThatMoveForwardRefillIt) {
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 14;  // 67 ms: only a lost tail waits for the timer
  connect(o);
  FaultConfig f;
  f.seed = 20261121;
  f.tx.drop = 0.04;  // A's requests only: B's NAKs and ACKs all arrive
  a->dev.set_faults(&f);
  constexpr uint32_t kLen = 64 * 1024, kWrites = 40;
  for (uint32_t i = 0; i < kLen; i++) a->buf[i] = uint8_t(i * 13 + 7);
  for (uint32_t n = 0; n < kWrites; n++) {
    SendWr w = send_wr(WrOpcode::kWrite, *a, 0, kLen, n);
    w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + kLen * (n % 8));
    w.rkey = b->mr.rkey;
    ASSERT_TRUE(a->qp->post_send(w));
    std::vector<Completion> c;
    ASSERT_TRUE(wait_cq(a->scq, 1, &c, 20000)) << "write " << n;
    ASSERT_EQ(c[0].status, WcStatus::kSuccess) << "write " << n << ": " << wc_status_name(c[0].status)
                                                << " after " << a->qp->counters().naks_received[0] << " NAKs";
    ASSERT_EQ(0, std::memcmp(a->buf.data(), b->buf.data() + kLen * (n % 8), kLen)) << "write " << n;
  }
  const Qp::Counters ca = a->qp->counters();
  EXPECT_GT(ca.naks_received[0], kWrites) << "the drops did not cause the NAKs this test is about";
}

// Messages longer than the requester's window (kMaxUnackedPsns packets) under faults: SENDs,
// WRITEs and READs of 16 to 128 KiB at path MTU 256 (64 to 512 packets), two in flight, with
// drops, duplicates, reordering and corruption in both directions. A go-back-N inside one
// message must resume mid-message (a SEND's MIDDLE, a READ restarted from the PSN it lost,
// with the RETH naming the rest) and every byte land once.
class BigFaults : public TwoNodes, public ::testing::WithParamInterface<double> {};

TEST_P(BigFaults, MessagesLongerThanTheWindowArriveWhole) {
  ConnectOptions o;
  o.mtu = 256;
  // 67 ms, as RetryBudget above. At 4 ms the ASan+UBSan build on a slower host (2.69 GHz
  // EPYC), several times slower than a release build against a wall-clock timer, ended the 5%
  // run in retry_exceeded every time, at a different message each run (a READ or a SEND of
  // 90-125 KiB), with or without the change under test; at 67 ms the counts repeat run after
  // run (5%: 19 timeouts; 4.4 s under ASan, 1.5 s in release).
  o.timeout = 14;
  connect(o);
  FaultConfig f;
  f.seed = 20261127;
  const double each = GetParam() / 4;
  f.tx = {each, each, each, each};
  a->dev.set_faults(&f);
  f.seed++;
  b->dev.set_faults(&f);
  constexpr uint32_t kMax = 128 * 1024, kCount = 240;
  // A: sources at 0 and kMax, READ sinks at 512 KiB and 640 KiB. B: receives at 0 and kMax,
  // WRITE targets at 256 KiB and 384 KiB, READ sources from 768 KiB.
  constexpr uint64_t kSink = 512 * 1024, kTarget = 256 * 1024, kSource = 768 * 1024;
  for (uint32_t i = 0; i < 256 * 1024; i++) b->buf[kSource + i] = uint8_t(i * 29 + (i >> 9));
  std::mt19937 rng(11);
  std::vector<Msg> plan(kCount);
  for (Msg& m : plan) {
    const unsigned k = rng() % 3;
    m.op = k == 0 ? WrOpcode::kSend : k == 1 ? WrOpcode::kWrite : WrOpcode::kRead;
    m.len = 16 * 1024 + rng() % (kMax - 16 * 1024 + 1);
  }
  std::vector<uint32_t> sends;  // message numbers of the SENDs, in the order their receives were posted
  uint32_t posted = 0, completed = 0, recvs_done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (completed < kCount) {
    a->dev.poll();
    b->dev.poll();
    Completion c[8];
    for (unsigned k = b->rcq->poll(c, 8), j = 0; j < k; j++) {
      ASSERT_EQ(c[j].status, WcStatus::kSuccess) << wc_status_name(c[j].status);
      ASSERT_EQ(c[j].wr_id, recvs_done) << "receive completions out of order";
      const uint32_t i = sends[recvs_done];
      ASSERT_EQ(c[j].byte_len, plan[i].len);
      const uint8_t* got = b->buf.data() + (recvs_done % 2) * kMax;
      for (uint32_t n = 0; n < plan[i].len; n++) ASSERT_EQ(got[n], pattern(i, n)) << "send " << i << " byte " << n;
      recvs_done++;
    }
    for (unsigned k = a->scq->poll(c, 8), j = 0; j < k; j++) {
      const uint32_t i = completed;
      const Msg& m = plan[i];
      ASSERT_EQ(c[j].status, WcStatus::kSuccess)
          << "message " << i << " (opcode " << int(m.op) << ", " << m.len << " bytes): " << wc_status_name(c[j].status);
      ASSERT_EQ(c[j].wr_id, i) << "send completions out of order or repeated";
      const uint64_t slot = (i % 2) * kMax;
      if (m.op == WrOpcode::kRead) {
        ASSERT_EQ(0, std::memcmp(a->buf.data() + kSink + slot, b->buf.data() + kSource + i % 97, m.len)) << "read " << i;
      } else if (m.op == WrOpcode::kWrite) {
        for (uint32_t n = 0; n < m.len; n++)
          ASSERT_EQ(b->buf[kTarget + slot + n], pattern(i, n)) << "write " << i << " byte " << n;
      }
      completed++;
    }
    // Two messages in flight; a SEND's receive slot is reused only once its last one was checked.
    while (posted < kCount && posted - completed < 2) {
      const Msg& m = plan[posted];
      const uint64_t slot = (posted % 2) * kMax;
      if (m.op == WrOpcode::kSend) {
        if (sends.size() - recvs_done >= 2) break;
        ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, (sends.size() % 2) * kMax, kMax, sends.size())));
        sends.push_back(posted);
      }
      for (uint32_t n = 0; n < m.len; n++) a->buf[slot + n] = pattern(posted, n);
      SendWr w = send_wr(m.op, *a, m.op == WrOpcode::kRead ? kSink + slot : slot, m.len, posted);
      w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + (m.op == WrOpcode::kRead ? kSource + posted % 97
                                                                                            : kTarget + slot));
      w.rkey = b->mr.rkey;
      ASSERT_TRUE(a->qp->post_send(w));
      posted++;
    }
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(240)) << completed << " completed";
  }
  ASSERT_TRUE(run_until([&] {
    Completion c[8];
    for (unsigned k = b->rcq->poll(c, 8), j = 0; j < k; j++) recvs_done++;
    return recvs_done == sends.size();
  }));
  const Qp::Counters ca = a->qp->counters(), cb = b->qp->counters();
  printf("big messages, faults %.0f%%: %u messages; A retransmits %lu, timeouts %lu; B duplicates %lu\n",
         GetParam() * 100, kCount, ca.retransmits, ca.timeouts, cb.duplicates);
  EXPECT_GT(ca.retransmits, 0u);
}

INSTANTIATE_TEST_SUITE_P(Rates, BigFaults, ::testing::Values(0.01, 0.05));

}  // namespace
}  // namespace ndnic::nic::testing
