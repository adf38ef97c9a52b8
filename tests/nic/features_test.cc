// Requester features that show on the wire: inline data, fence, the SE bit, the limit on
// outstanding READs/atomics, AckReq cadence and ACK coalescing. Each test reads A's capture.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "tests/fixtures/two_nodes.h"
#include "ndnic/wire/packet.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::nic::testing {
namespace {

struct Frame {
  bool from_a;
  wire::RocePacket pkt;
  std::vector<uint8_t> bytes;
};

class Wire : public TwoNodes {
 protected:
  void SetUp() override {
    prefix_ = "/tmp/ndnic-features-" + std::to_string(getpid()) + "-";
    setenv("NDNIC_TEST_CAPTURE", prefix_.c_str(), 1);
    TwoNodes::SetUp();
    unsetenv("NDNIC_TEST_CAPTURE");
  }
  void TearDown() override {
    TwoNodes::TearDown();
    for (unsigned n = 0; n < 256; n++) unlink((prefix_ + "tn" + std::to_string(n) + ".pcap").c_str());
  }
  /// Every RoCE frame A's port saw, in order. Closes the port first so the file is complete.
  std::vector<Frame> frames() {
    const uint32_t a_ip = a->port.ipv4();
    a->dev.close();
    a->port.close();
    std::vector<Frame> out;
    for (unsigned n = 0; n < 64; n++) {
      const std::string path = prefix_ + "tn" + std::to_string(n) + ".pcap";
      if (access(path.c_str(), R_OK) != 0) continue;
      wire::PcapReader r;
      if (!r.open(path)) continue;
      out.clear();
      for (const auto& rec : r.records()) {
        Frame f;
        f.bytes = rec.data;
        if (wire::decode_frame(f.bytes.data(), f.bytes.size(), &f.pkt) != wire::Reject::kOk) continue;
        f.from_a = f.pkt.ip4.src == a_ip;
        out.push_back(std::move(f));
      }
    }
    return out;
  }
  /// A 64 KiB READ, then a small WRITE (fenced or not).
  void read_then_write(bool fence) {
    SendWr rd = send_wr(WrOpcode::kRead, *a, 0, 64 * 1024, 1);
    rd.remote_addr = reinterpret_cast<uint64_t>(b->buf.data());
    rd.rkey = b->mr.rkey;
    ASSERT_TRUE(a->qp->post_send(rd));
    SendWr w = send_wr(WrOpcode::kWrite, *a, 200000, 64, 2);
    w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + 500000);
    w.rkey = b->mr.rkey;
    if (fence) w.flags |= kWrFence;
    ASSERT_TRUE(a->qp->post_send(w));
  }
  std::string prefix_;
};

TEST_F(Wire, InlineDataIsCopiedAtPostTime) {
  connect();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 256, 1)));
  SendWr w{};
  w.wr_id = 1;
  w.opcode = WrOpcode::kSend;
  w.flags = kWrSignaled | kWrInline;
  const char msg[] = "inline: the caller may reuse its buffer at once";
  w.inline_len = sizeof(msg);
  std::memcpy(w.inline_data, msg, sizeof(msg));
  ASSERT_TRUE(a->qp->post_send(w));
  std::memset(w.inline_data, 0, sizeof(msg));  // the posted copy is what goes out
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(rc[0].byte_len, sizeof(msg));
  EXPECT_EQ(0, memcmp(b->buf.data(), msg, sizeof(msg)));
  // Too long for the QP's inline limit: refused at post time, nothing queued.
  w.inline_len = kMaxInline + 1;
  EXPECT_FALSE(a->qp->post_send(w));
}

TEST_F(Wire, SolicitedEventBitOnTheLastPacketOnly) {
  connect();
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 8192, 1)));
  SendWr w = send_wr(WrOpcode::kSend, *a, 0, 3000, 1);  // 3 packets
  w.flags |= kWrSolicited;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> rc;
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_TRUE(rc[0].solicited);
  std::vector<bool> se;
  for (const Frame& f : frames())
    if (f.from_a) se.push_back(f.pkt.bth.se);
  EXPECT_EQ(se, (std::vector<bool>{false, false, true}));
}

TEST_F(Wire, FencedRequestWaitsForEarlierReads) {
  connect();
  read_then_write(true);
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  // On the wire: the WRITE leaves only after the last READ response arrived.
  const auto f = frames();
  size_t last_resp = 0, write = 0;
  for (size_t i = 0; i < f.size(); i++) {
    if (f[i].pkt.bth.opcode == wire::kRcReadResponseLast) last_resp = i;
    if (f[i].pkt.bth.opcode == wire::kRcWriteOnly) write = i;
  }
  ASSERT_GT(last_resp, 0u);
  EXPECT_GT(write, last_resp);
}

TEST_F(Wire, UnfencedRequestDoesNotWait) {
  connect();
  read_then_write(false);
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 2, &sc));
  const auto f = frames();
  size_t first_resp = SIZE_MAX, write = SIZE_MAX;
  for (size_t i = 0; i < f.size(); i++) {
    if (f[i].pkt.bth.opcode == wire::kRcReadResponseFirst && first_resp == SIZE_MAX) first_resp = i;
    if (f[i].pkt.bth.opcode == wire::kRcWriteOnly) write = i;
  }
  EXPECT_LT(write, first_resp);  // sent right behind the READ request
}

TEST_F(Wire, OutstandingReadsAndAtomicsAreLimited) {
  ConnectOptions o;
  o.max_rd_atomic = 2;
  connect(o);
  for (int i = 0; i < 6; i++) {
    SendWr rd = send_wr(i % 2 ? WrOpcode::kRead : WrOpcode::kFetchAdd, *a, i * 8192, i % 2 ? 4096 : 8, i);
    rd.remote_addr = reinterpret_cast<uint64_t>(b->buf.data() + (i % 2 ? 0 : 700000));
    rd.rkey = b->mr.rkey;
    rd.compare_add = 1;
    ASSERT_TRUE(a->qp->post_send(rd));
  }
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 6, &sc));
  int outstanding = 0, most = 0;
  for (const Frame& f : frames()) {
    const uint8_t op = f.pkt.bth.opcode;
    if (op == wire::kRcReadRequest || op == wire::kRcFetchAdd) most = std::max(most, ++outstanding);
    if (op == wire::kRcReadResponseLast || op == wire::kRcReadResponseOnly || op == wire::kRcAtomicAck) outstanding--;
  }
  EXPECT_EQ(most, 2);
}

TEST_F(Wire, AckRequestsAndCoalescedAcks) {
  ConnectOptions o;
  o.mtu = 256;
  connect(o);
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 65536, 1)));
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 100 * 256, 1)));  // 100 packets
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  int sent = 0, ackreq = 0, acks = 0, gap = 0, max_gap = 0;
  for (const Frame& f : frames()) {
    if (f.from_a) {
      sent++;
      gap++;
      if (f.pkt.bth.ack_req) {
        ackreq++;
        max_gap = std::max(max_gap, gap);
        gap = 0;
      }
    } else if (f.pkt.bth.opcode == wire::kRcAck) {
      acks++;
      EXPECT_EQ(f.pkt.aeth.syndrome, 0x1F);
    }
  }
  EXPECT_EQ(sent, 100);
  EXPECT_LE(max_gap, 32);                // AckReq often enough to keep the window moving
  EXPECT_GE(ackreq, 4);                  // ... and on the last packet
  EXPECT_EQ(acks, ackreq);               // one ACK per AckReq, none per packet
  EXPECT_LT(acks, sent / 10);
}

}  // namespace
}  // namespace ndnic::nic::testing

namespace ndnic::nic::testing {
namespace {

// QP numbers are handed out round robin and come back once the table wraps: creating and
// destroying more QPs than the device holds never runs out.
TEST_F(Wire, QpNumbersWrapAroundTheTable) {
  QpCaps caps;
  caps.send_cq = a->scq;
  caps.recv_cq = a->rcq;
  caps.pd = a->pd;
  const size_t before = a->dev.qp_count();
  uint32_t first = 0, last = 0;
  bool wrapped = false;
  for (int i = 0; i < 1100; i++) {  // the device's table holds 1024
    Qp* q = a->dev.create_qp(caps);
    ASSERT_NE(q, nullptr) << "creation " << i;
    if (i == 0) first = q->qpn();
    if (i > 0 && q->qpn() < last) wrapped = true;
    last = q->qpn();
    EXPECT_EQ(a->dev.qp_count(), before + 1);
    a->dev.destroy_qp(q);
  }
  EXPECT_TRUE(wrapped);
  EXPECT_NE(first, 0u);
  EXPECT_EQ(a->dev.qp_count(), before);
}

}  // namespace
}  // namespace ndnic::nic::testing
