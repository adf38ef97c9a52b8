// What the CM agent's suites (agent_test, hostile_test) share: two engines over a
// net_ring pair, each with a PD, a buffer, CQs, one RC QP and its CM agent; the events each
// connection reports; and a fixture that connects A to B and sends traffic over the QPs.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cm/agent.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/fixtures/node_pair.h"

namespace ndnic::cm::testing {

constexpr int kCmWaitMs = 10000;  ///< generous: two busy pollers and two agents share two CPUs

/// One connection's events, as an ND connector would queue them for its OVERLAPPED requests.
class CmEvents {
 public:
  Callback cb() {
    return [this](const Event& e) {
      std::lock_guard lk(mu_);
      evs_.push_back(e);
      cv_.notify_all();
    };
  }
  /// The first event of this kind, waiting up to ms for it.
  bool wait(EventKind k, int ms = kCmWaitMs, Event* out = nullptr) {
    std::unique_lock lk(mu_);
    const bool got = cv_.wait_for(lk, std::chrono::milliseconds(ms), [&] { return find(k) != nullptr; });
    if (got && out) *out = *find(k);
    return got;
  }
  std::string kinds() {
    std::lock_guard lk(mu_);
    std::string s;
    for (const Event& e : evs_) s += std::string(event_name(e.kind)) + " ";
    return s;
  }

 private:
  const Event* find(EventKind k) const {
    for (const Event& e : evs_)
      if (e.kind == k) return &e;
    return nullptr;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> evs_;
};

/// One end: its port, device, buffer, CQs, RC QP and CM agent.
struct CmNode : ndnic::testing::VerbsEnd {
  static constexpr size_t kBuf = 1 << 16;
  static constexpr uint32_t kCqEntries = 256;
  static constexpr uint32_t kAccess = nic::kAccessLocalWrite | nic::kAccessRemoteWrite | nic::kAccessRemoteRead;
  std::unique_ptr<Agent> cm;
  CmEvents ev;

  /// On a device that is up: the PD, the buffer registered, the CQs (no QP yet).
  bool open() { return VerbsEnd::open(kBuf, kCqEntries, kAccess); }
};

template <class Node>
class CmPairTest : public ::testing::Test {
 protected:
  /// A connects to B (on a port B listens on), B accepts; both see kEstablished unless
  /// `defer_rtu` holds A's RTU back.
  void establish(ConnId* ida, ConnId* idb, bool defer_rtu = false) {
    const uint16_t port = b.cm->listen(0);
    ASSERT_NE(port, 0);
    ConnectParams p;
    p.qp = a.qp;
    p.dest_ipv4 = b.port.ipv4();
    p.dest_port = port;
    p.defer_rtu = defer_rtu;
    *ida = a.cm->connect(p, a.ev.cb());
    ASSERT_NE(*ida, 0u);
    Request r;
    ASSERT_TRUE(b.cm->get_request(port, &r, kCmWaitMs));
    *idb = r.conn;
    AcceptParams ap;
    ap.qp = b.qp;
    ASSERT_TRUE(b.cm->accept(r.conn, ap, b.ev.cb()));
    if (defer_rtu) return;
    ASSERT_TRUE(a.ev.wait(EventKind::kEstablished)) << a.ev.kinds();
    ASSERT_TRUE(b.ev.wait(EventKind::kEstablished)) << b.ev.kinds();
  }

  /// A connect from A's QP to B's address at `port`.
  ConnectParams to_b(uint16_t port) const {
    ConnectParams p;
    p.qp = a.qp;
    p.dest_ipv4 = b.port.ipv4();
    p.dest_port = port;
    return p;
  }

  /// B takes A's request on `port` and accepts it on its QP: both see kEstablished.
  void accept_on_b(uint16_t port) {
    Request r;
    ASSERT_TRUE(b.cm->get_request(port, &r, kCmWaitMs));
    AcceptParams ap;
    ap.qp = b.qp;
    ASSERT_TRUE(b.cm->accept(r.conn, ap, b.ev.cb()));
    ASSERT_TRUE(a.ev.wait(EventKind::kEstablished)) << a.ev.kinds();
    ASSERT_TRUE(b.ev.wait(EventKind::kEstablished)) << b.ev.kinds();
  }

  static bool wait_cq(nic::Cq* cq, nic::Completion* out, int ms = kCmWaitMs) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      if (cq->poll(out, 1) == 1) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return false;
  }

  static nic::SendWr wr(Node& from, nic::WrOpcode op, uint64_t off, uint32_t len, uint64_t id) {
    nic::SendWr w{};
    w.wr_id = id;
    w.opcode = op;
    w.flags = nic::kWrSignaled;
    w.num_sge = 1;
    w.sge[0] = {reinterpret_cast<uint64_t>(from.buf.data() + off), len, from.mr.lkey};
    return w;
  }

  static nic::RecvWr recv(Node& on, uint64_t off, uint32_t len, uint64_t id) {
    nic::RecvWr r{};
    r.wr_id = id;
    r.num_sge = 1;
    r.sge[0] = {reinterpret_cast<uint64_t>(on.buf.data() + off), len, on.mr.lkey};
    return r;
  }

  /// A SEND A -> B of `send` bytes and an RDMA WRITE B -> A of `write` bytes over the
  /// connected QPs, each checked where it landed.
  void traffic(uint32_t send, uint32_t write) {
    for (size_t i = 0; i < send; i++) a.buf[i] = uint8_t(i * 7);
    for (size_t i = 0; i < write; i++) b.buf[8192 + i] = uint8_t(i * 13 + 1);
    ASSERT_TRUE(b.qp->post_recv(recv(b, 32768, 8192, 1)));
    ASSERT_TRUE(a.qp->post_send(wr(a, nic::WrOpcode::kSend, 0, send, 2)));
    nic::Completion c;
    ASSERT_TRUE(wait_cq(a.scq, &c));
    EXPECT_EQ(c.status, nic::WcStatus::kSuccess) << nic::wc_status_name(c.status);
    ASSERT_TRUE(wait_cq(b.rcq, &c));
    EXPECT_EQ(c.status, nic::WcStatus::kSuccess) << nic::wc_status_name(c.status);
    EXPECT_EQ(c.byte_len, send);
    EXPECT_EQ(0, std::memcmp(a.buf.data(), b.buf.data() + 32768, send));
    nic::SendWr w = wr(b, nic::WrOpcode::kWrite, 8192, write, 3);
    w.remote_addr = reinterpret_cast<uint64_t>(a.buf.data() + 16384);
    w.rkey = a.mr.rkey;
    ASSERT_TRUE(b.qp->post_send(w));
    ASSERT_TRUE(wait_cq(b.scq, &c));
    EXPECT_EQ(c.status, nic::WcStatus::kSuccess) << nic::wc_status_name(c.status);
    EXPECT_EQ(0, std::memcmp(b.buf.data() + 8192, a.buf.data() + 16384, write));
  }

  Node a, b;
};

}  // namespace ndnic::cm::testing
