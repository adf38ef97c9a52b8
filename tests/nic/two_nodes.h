// Test fixture: two ndnic devices over real DPDK ports (a net_ring pair), each with a PD,
// a registered buffer, CQs and one connected RC QP; both polled from the test thread.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "nic/fault.h"
#include "nic/nic.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::nic::testing {

constexpr uint32_t kBufSize = 1 << 20;

struct Node {
  glue::Port port;
  Device dev;
  uint32_t pd = 0;
  std::vector<uint8_t> buf;
  MrKeys mr;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  Qp* qp = nullptr;
};

struct ConnectOptions {
  uint32_t mtu = 1024;
  uint32_t psn_a = 0x100, psn_b = 0x200;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t timeout = 10;        ///< 4.2 ms: quick recovery in tests
  uint8_t min_rnr_timer = 1;   ///< 0.01 ms
  uint8_t max_rd_atomic = 16;  ///< READs/atomics A and B may have outstanding
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                    kAccessRemoteAtomic | kAccessMwBind;
};

class TwoNodes : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  /// (Re)creates QPs on both nodes and connects them.
  void connect(const ConnectOptions& o = {});
  /// Polls both devices until pred() or `ms` pass; returns pred().
  bool run_until(const std::function<bool()>& pred, int ms = 5000);
  /// Polls until `n` completions arrived on `cq` (appended to out), or times out.
  bool wait_cq(Cq* cq, size_t n, std::vector<Completion>* out, int ms = 5000);

  SendWr send_wr(WrOpcode op, Node& from, uint64_t off, uint32_t len, uint64_t wr_id);
  RecvWr recv_wr(Node& on, uint64_t off, uint32_t len, uint64_t wr_id);

  std::unique_ptr<Node> a, b;
  ConnectOptions opts;
};

}  // namespace ndnic::nic::testing
