#include "tests/nic/two_nodes.h"
namespace ndnic::nic::testing {
TEST_F(TwoNodes, Scratch) {
  connect();
  const uint32_t len = 1 << 19;  // tweak
  const char* e = getenv("LEN");
  uint32_t L = e ? atoi(e) : len;
  SendWr w = send_wr(WrOpcode::kWrite, *a, 0, L, 1);
  w.remote_addr = reinterpret_cast<uint64_t>(b->buf.data());
  w.rkey = b->mr.rkey;
  ASSERT_TRUE(a->qp->post_send(w));
  std::vector<Completion> sc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc, 3000)) << "tx " << a->qp->counters().tx_packets;
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << wc_status_name(sc[0].status);
}
}
