// ACKNOWLEDGE coalesced per RX burst: the requests of one burst that ask for an ACK get one, for
// the newest of them, and any other response of the QP (a NAK, a READ response) leaves after it,
// so that the peer sees responses in PSN order. B's answers are read off A's port; A's device
// is never polled.
#include <cstring>
#include <vector>

#include <rte_mbuf.h>

#include "nic/engine.h"
#include "tests/nic/hostile.h"

namespace ndnic::nic::testing {
namespace {

struct Answer {
  uint8_t opcode;
  uint32_t psn;
  uint8_t syndrome;
  uint32_t msn;
};

class AckCoalescing : public Hostile {
 protected:
  /// Puts every frame on A's port at once, so that B's next poll takes them in one RX burst.
  void queue(const std::vector<wire::RocePacket>& ps, const std::vector<uint8_t>& payload) {
    ASSERT_LE(ps.size(), size_t(kRxBurst));
    std::vector<rte_mbuf*> ms;
    for (wire::RocePacket p : ps) {
      p.payload = payload.data();
      p.payload_len = wire::opcode_info(p.bth.opcode).has_payload ? uint32_t(payload.size()) : 0;
      std::vector<uint8_t> f(wire::frame_length(p));
      ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
      rte_mbuf* m = rte_pktmbuf_alloc(a->port.mempool());
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
      ms.push_back(m);
    }
    ASSERT_EQ(a->port.tx_burst(ms.data(), uint16_t(ms.size())), ms.size());
  }
  /// One poll of B, then what it sent, in order.
  std::vector<Answer> poll_b_once() {
    b->dev.poll();
    std::vector<Answer> out;
    rte_mbuf* m[64];
    const uint16_t n = a->port.rx_burst(m, 64);
    for (uint16_t k = 0; k < n; k++) {
      wire::RocePacket p;
      if (m[k]->nb_segs > 1) {
        EXPECT_EQ(rte_pktmbuf_linearize(m[k]), 0);  // a zero-copy chain
      }
      if (wire::decode_frame(rte_pktmbuf_mtod(m[k], const uint8_t*), rte_pktmbuf_data_len(m[k]), &p) ==
          wire::Reject::kOk)
        out.push_back({p.bth.opcode, p.bth.psn, p.aeth.syndrome, p.aeth.msn});
      rte_pktmbuf_free(m[k]);
    }
    return out;
  }
  wire::RocePacket write_only(uint32_t psn_off, uint32_t rkey) const {
    wire::RocePacket p = request(wire::kRcWriteOnly, b->qp->qpn(), opts.psn_a + psn_off);
    p.reth = {reinterpret_cast<uint64_t>(b->buf.data() + 4096 + 64 * psn_off), rkey, 64};
    return p;
  }
};

TEST_F(AckCoalescing, OneAckForEveryRequestOfABurstThatAskedForOne) {
  connect();
  std::vector<wire::RocePacket> ps;
  for (uint32_t i = 0; i < 16; i++) ps.push_back(write_only(i, b->mr.rkey));  // each asks for an ACK
  ps[15].bth.ack_req = false;  // the newest does not: the ACK names the newest that did
  queue(ps, std::vector<uint8_t>(64, 0xAB));
  const std::vector<Answer> got = poll_b_once();
  ASSERT_EQ(got.size(), 1u) << "one ACK for the burst, not one per request";
  EXPECT_EQ(got[0].opcode, wire::kRcAck);
  EXPECT_EQ(got[0].syndrome, kAckUnlimited);
  EXPECT_EQ(got[0].psn, opts.psn_a + 14);
  EXPECT_EQ(got[0].msn, 15u) << "the MSN as of the PSN acknowledged";
  EXPECT_EQ(b->buf[4096 + 64 * 15 + 63], 0xAB);  // all 16 were executed
  EXPECT_EQ(b->qp->state(), QpState::kRts);
  // The next burst gets its own ACK, with everything since.
  queue({write_only(16, b->mr.rkey)}, std::vector<uint8_t>(64, 0xCD));
  const std::vector<Answer> next = poll_b_once();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].psn, opts.psn_a + 16);
  EXPECT_EQ(next[0].msn, 17u);
}

TEST_F(AckCoalescing, ANakLeavesAfterTheAckOfTheRequestsBeforeIt) {
  connect();
  queue({write_only(0, b->mr.rkey), write_only(1, b->mr.rkey), write_only(2, b->mr.rkey ^ 0x80)},
        std::vector<uint8_t>(64, 0xAB));
  const std::vector<Answer> got = poll_b_once();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].opcode, wire::kRcAck);
  EXPECT_EQ(got[0].syndrome, kAckUnlimited);
  EXPECT_EQ(got[0].psn, opts.psn_a + 1);
  EXPECT_EQ(got[1].opcode, wire::kRcAck);
  EXPECT_EQ(got[1].syndrome, 0x62) << "remote access error NAK";
  EXPECT_EQ(got[1].psn, opts.psn_a + 2);
  EXPECT_EQ(b->qp->state(), QpState::kError);
}

TEST_F(AckCoalescing, AReadResponseLeavesAfterTheAckOfTheRequestsBeforeIt) {
  connect();
  wire::RocePacket rd = request(wire::kRcReadRequest, b->qp->qpn(), opts.psn_a + 2);
  rd.reth = {reinterpret_cast<uint64_t>(b->buf.data()), b->mr.rkey, 64};
  queue({write_only(0, b->mr.rkey), write_only(1, b->mr.rkey), rd}, std::vector<uint8_t>(64, 0xAB));
  std::vector<Answer> got = poll_b_once();
  for (int i = 0; i < 4 && got.size() < 2; i++) {
    std::vector<Answer> more = poll_b_once();
    got.insert(got.end(), more.begin(), more.end());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].opcode, wire::kRcAck);
  EXPECT_EQ(got[0].psn, opts.psn_a + 1);
  EXPECT_EQ(got[1].opcode, wire::kRcReadResponseOnly);
  EXPECT_EQ(got[1].psn, opts.psn_a + 2);
  EXPECT_EQ(b->qp->state(), QpState::kRts);
}

}  // namespace
}  // namespace ndnic::nic::testing
