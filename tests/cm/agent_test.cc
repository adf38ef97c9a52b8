// The CM agent end to end: two engines over a net_ring pair, each on a worker lcore, a CM agent
// per device on its own thread. Connect / accept / reject / disconnect with private data, RC
// traffic over the connected QPs, lost MADs recovered the way Linux ib_cm recovers them, peers
// that do not answer, and the MADs on the wire as rdma_cm sends them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cm/agent.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/cm/pair.h"
#include "tests/fixtures/node_pair.h"
#include "wire/cm_mad.h"
#include "ndnic/wire/headers.h"
#include "ndnic/wire/opcode.h"
#include "ndnic/wire/packet.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::cm::testing {
namespace {

namespace ib = wire::cm;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kIpA = 0xC6124501;       // 198.18.69.1
constexpr uint32_t kIpB = 0xC6124502;
constexpr uint32_t kIpNobody = 0xC6124563;  // on the wire, but no host answers ARP for it
constexpr size_t kBuf = 1 << 16;
constexpr int kWaitMs = 10000;              // generous: two busy pollers share two CPUs

/// Short CM timers so that lost MADs are retried quickly: 2 * 1 ms + 128 ms per try.
Config fast_config(uint8_t retries = 4, uint8_t response_timeout = 15) {
  Config c;
  c.cm_response_timeout = response_timeout;
  c.packet_life_time = 8;
  c.max_cm_retries = retries;
  // RC transport timer 268 ms: 16 ms let a loaded machine (load 7 on 2 CPUs) run a WRITE's
  // retries out, and made TIMEWAIT (ACK timeout + REQ timer) end before a lost MAD's retry came.
  c.ack_timeout = 16;
  return c;
}

/// For the tests where nothing is lost: 1 s per try, so a loaded machine does not retransmit.
Config calm_config() { return fast_config(4, 18); }

std::vector<uint8_t> text(const char* s) { return std::vector<uint8_t>(s, s + std::strlen(s)); }

bool starts_with(const std::vector<uint8_t>& data, const std::vector<uint8_t>& prefix) {
  return data.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), data.begin());
}

using Node = CmNode;

class CmAgentTest : public CmPairTest<CmNode> {
 protected:
  void SetUp() override {
    static unsigned serial = 0;
    const std::string name = "cm" + std::to_string(serial++);
    capture_ = "/tmp/ndnic-cm-" + std::to_string(getpid()) + "-" + name + ".pcap";
    ndnic::testing::PairSpec spec;
    spec.name = "cm";
    spec.ipv4 = {kIpA, kIpB};
    spec.mbufs = 4095;
    spec.capture_a = capture_;
    spec.lcores = {std::vector<unsigned>{1}, std::vector<unsigned>{2}};
    ASSERT_EQ(ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev}), "");
    for (Node* n : {&a, &b}) {
      ASSERT_TRUE(n->open());
      nic::QpCaps caps;
      caps.send_cq = n->scq;
      caps.recv_cq = n->rcq;
      caps.pd = n->pd;
      n->qp = n->dev.create_qp(caps);
      ASSERT_NE(n->qp, nullptr);
    }
  }

  void TearDown() override {
    for (Node* n : {&a, &b}) n->cm.reset();
    ndnic::testing::close_pair({&a.port, &b.port}, {&a.dev, &b.dev});
    unlink(capture_.c_str());
  }

  void make_agent(Node& n, Config cfg = calm_config(), DropTx drop = {}) {
    n.cm = std::make_unique<Agent>(n.dev, n.port, std::move(cfg), std::move(drop));
  }
  /// `da`, `db`: the MADs A and B lose on their way out.
  void start_agents(Config ca = calm_config(), Config cb = calm_config(), DropTx da = {}, DropTx db = {}) {
    make_agent(a, std::move(ca), std::move(da));
    make_agent(b, std::move(cb), std::move(db));
    ASSERT_TRUE(a.cm->start()) << a.cm->error();
    ASSERT_TRUE(b.cm->start()) << b.cm->error();
  }

  void traffic() { CmPairTest::traffic(2000, 1500); }

  /// Waits until the QP is in `s` (the agent moves it on its own thread).
  static bool qp_reaches(nic::Qp* qp, nic::QpState s, int ms = kWaitMs) {
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (qp->state() != s)
      if (Clock::now() > end) return false;
      else std::this_thread::sleep_for(1ms);
    return true;
  }

  std::string capture_;
};

TEST_F(CmAgentTest, ConnectAcceptWithPrivateDataBothWaysThenTraffic) {
  start_agents();
  const uint16_t port = b.cm->listen(0);
  ASSERT_NE(port, 0);
  EXPECT_EQ(b.cm->listen(port), 0) << "one listener per port";
  const auto hello_a = text("hello from A"), hello_b = text("and hello from B");
  ConnectParams p = to_b(port);
  p.private_data = hello_a;
  p.responder_resources = 3;
  p.initiator_depth = 2;
  const ConnId ida = a.cm->connect(p, a.ev.cb());
  ASSERT_NE(ida, 0u);

  Request r;
  ASSERT_TRUE(b.cm->get_request(port, &r, kWaitMs));
  EXPECT_EQ(r.listen_port, port);
  EXPECT_EQ(r.peer_ipv4, kIpA);
  EXPECT_EQ(r.local_ipv4, kIpB);
  EXPECT_GE(r.peer_port, 32768);
  EXPECT_EQ(r.peer_qpn, a.qp->qpn());
  EXPECT_EQ(r.responder_resources, 3);
  EXPECT_EQ(r.initiator_depth, 2);
  EXPECT_EQ(r.path_mtu, 1024u);
  EXPECT_EQ(r.private_data.size(), kConnectDataLen);
  EXPECT_TRUE(starts_with(r.private_data, hello_a));
  EXPECT_EQ(b.cm->state(r.conn), State::kReqRcvd);

  AcceptParams ap;
  ap.qp = b.qp;
  ap.private_data = hello_b;
  ap.responder_resources = 4;  // clamped to the REQ's initiator depth (2)
  ap.initiator_depth = 4;      // clamped to the REQ's responder resources (3)
  ASSERT_TRUE(b.cm->accept(r.conn, ap, b.ev.cb()));
  Event ea, eb;
  ASSERT_TRUE(a.ev.wait(EventKind::kEstablished, kCmWaitMs, &ea)) << a.ev.kinds();
  ASSERT_TRUE(b.ev.wait(EventKind::kEstablished, kCmWaitMs, &eb)) << b.ev.kinds();
  EXPECT_EQ(ea.conn, ida);
  EXPECT_EQ(ea.private_data.size(), kAcceptDataLen);
  EXPECT_TRUE(starts_with(ea.private_data, hello_b));
  EXPECT_TRUE(starts_with(eb.private_data, hello_a));
  std::vector<uint8_t> got;
  ASSERT_TRUE(a.cm->peer_private_data(ida, &got));
  EXPECT_TRUE(starts_with(got, hello_b));
  EXPECT_EQ(a.cm->state(ida), State::kEstablished);
  EXPECT_EQ(b.cm->state(r.conn), State::kEstablished);
  EXPECT_EQ(a.qp->state(), nic::QpState::kRts);
  EXPECT_EQ(b.qp->state(), nic::QpState::kRts);
  traffic();

  // A disconnects: B is told, both QPs end in ERROR, B's posted receive is flushed.
  ASSERT_TRUE(b.qp->post_recv(recv(b, 0, 64, 77)));
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  ASSERT_TRUE(b.ev.wait(EventKind::kDisconnected)) << b.ev.kinds();
  EXPECT_EQ(a.qp->state(), nic::QpState::kError);
  EXPECT_TRUE(qp_reaches(b.qp, nic::QpState::kError));
  nic::Completion c;
  ASSERT_TRUE(wait_cq(b.rcq, &c));
  EXPECT_EQ(c.wr_id, 77u);
  EXPECT_EQ(c.status, nic::WcStatus::kWrFlushed);
}

TEST_F(CmAgentTest, DisconnectFromThePassiveSide) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb);
  ASSERT_TRUE(b.cm->disconnect(idb));
  ASSERT_TRUE(b.ev.wait(EventKind::kDisconnectDone)) << b.ev.kinds();
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnected)) << a.ev.kinds();
  EXPECT_EQ(b.qp->state(), nic::QpState::kError);
  EXPECT_TRUE(qp_reaches(a.qp, nic::QpState::kError));
  // A disconnecting afterwards (ND Disconnect after NotifyDisconnect) completes at once.
  ASSERT_TRUE(a.cm->disconnect(ida));
  EXPECT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  // TIMEWAIT ends and the connections are forgotten.
  const auto end = Clock::now() + 5s;
  while ((a.cm->state(ida) != State::kIdle || b.cm->state(idb) != State::kIdle) && Clock::now() < end)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(a.cm->state(ida), State::kIdle);
  EXPECT_EQ(b.cm->state(idb), State::kIdle);
}

TEST_F(CmAgentTest, NobodyListeningIsRefusedWithInvalidServiceId) {
  start_agents();
  ConnectParams p = to_b(4242);
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  Event e;
  ASSERT_TRUE(a.ev.wait(EventKind::kRefused, kCmWaitMs, &e)) << a.ev.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejInvalidServiceId);
  EXPECT_EQ(a.qp->state(), nic::QpState::kInit) << "left for another try";
  EXPECT_EQ(b.cm->counters().rejects_sent, 1u);
}

TEST_F(CmAgentTest, ConsumerRejectCarriesPrivateData) {
  start_agents();
  const uint16_t port = b.cm->listen(7174);
  ASSERT_EQ(port, 7174);
  ConnectParams p = to_b(port);
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  Request r;
  ASSERT_TRUE(b.cm->get_request(port, &r, kWaitMs));
  const auto why = text("go away");
  ASSERT_TRUE(b.cm->reject(r.conn, why));
  AcceptParams ap;
  ap.qp = b.qp;
  EXPECT_FALSE(b.cm->accept(r.conn, ap, {})) << "already answered";
  Event e;
  ASSERT_TRUE(a.ev.wait(EventKind::kRejected, kCmWaitMs, &e)) << a.ev.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejConsumerDefined);
  EXPECT_EQ(e.private_data.size(), kRejectDataLen);
  EXPECT_TRUE(starts_with(e.private_data, why));
  EXPECT_FALSE(b.cm->get_request(port, &r, 0)) << "no second request";
}

TEST_F(CmAgentTest, LostReqIsRetransmitted) {
  // B's agent is not up when the first REQ arrives: it reaches B's engine, finds no QP1 and is
  // dropped there, a real loss on the wire. A's retransmission then finds the agent.
  make_agent(a, fast_config(8));
  make_agent(b, fast_config(8));
  ASSERT_TRUE(a.cm->start());
  ASSERT_EQ(b.cm->listen(7174), 7174);
  ConnectParams p = to_b(7174);
  const ConnId ida = a.cm->connect(p, a.ev.cb());
  ASSERT_NE(ida, 0u);
  const auto end = Clock::now() + 5s;
  while (b.dev.counters().unknown_qp == 0 && Clock::now() < end) std::this_thread::sleep_for(1ms);
  ASSERT_GT(b.dev.counters().unknown_qp, 0u) << "the first REQ never reached B";
  ASSERT_TRUE(b.cm->start());
  ASSERT_NO_FATAL_FAILURE(accept_on_b(7174));
  EXPECT_GE(a.cm->counters().retransmits, 1u);
  traffic();
}

TEST_F(CmAgentTest, LostRepAndRtuAreAnsweredAgain) {
  // B loses its first REP, A its first RTU. A's REQ retry meets B in REP_SENT: the REP again.
  // B's REP retry meets A in ESTABLISHED: the RTU again (Linux cm_dup_rep_handler).
  std::atomic<int> reps{0}, rtus{0};
  start_agents(fast_config(8), fast_config(8),
               [&](const ib::CmMad& m) { return m.hdr.attr_id == ib::kAttrRtu && rtus++ == 0; },
               [&](const ib::CmMad& m) { return m.hdr.attr_id == ib::kAttrRep && reps++ == 0; });
  ConnId ida, idb;
  establish(&ida, &idb);
  EXPECT_EQ(a.cm->counters().dropped_tx, 1u);
  EXPECT_EQ(b.cm->counters().dropped_tx, 1u);
  EXPECT_GE(a.cm->counters().duplicates, 1u) << "RTU resent for a duplicate REP";
  EXPECT_GE(rtus.load(), 2);
  EXPECT_GE(reps.load(), 2);
  traffic();
}

// The RNR retry count in a REQ or REP is what its sender asks of the other side's QP (Linux's
// cm_req_handler / cm_rep_handler take it so): a receiver that asks for none sees
// a SEND to it with no receive posted fail at the first RNR NAK, in either role. (ndnic's
// active side once kept its own count: found against rxe by tests/interop's verbs peer.)
class RnrRetryCountTest : public CmAgentTest {
 protected:
  void sender_gives_up_at_once(bool passive_asks) {
    Config ca = calm_config(), cb = calm_config();
    (passive_asks ? cb : ca).rnr_retry_count = 0;
    start_agents(std::move(ca), std::move(cb));
    ConnId ida, idb;
    establish(&ida, &idb);
    Node& sender = passive_asks ? a : b;
    ASSERT_TRUE(sender.qp->post_send(wr(sender, nic::WrOpcode::kSend, 0, 64, 9)));
    nic::Completion c;
    ASSERT_TRUE(wait_cq(sender.scq, &c));
    EXPECT_EQ(c.status, nic::WcStatus::kRnrRetryExceeded) << nic::wc_status_name(c.status);
    EXPECT_EQ(sender.qp->counters().rnr_naks_received, 1u);
  }
};

TEST_F(RnrRetryCountTest, TheActiveSideUsesTheReps) { sender_gives_up_at_once(/*passive_asks=*/true); }
TEST_F(RnrRetryCountTest, ThePassiveSideUsesTheReqs) { sender_gives_up_at_once(/*passive_asks=*/false); }

TEST_F(CmAgentTest, LostDrepIsAnsweredAgainFromTimewait) {
  std::atomic<int> dreps{0};
  start_agents(fast_config(8), fast_config(8), {},
               [&](const ib::CmMad& m) { return m.hdr.attr_id == ib::kAttrDrep && dreps++ == 0; });
  ConnId ida, idb;
  establish(&ida, &idb);
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(b.ev.wait(EventKind::kDisconnected)) << b.ev.kinds();
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  EXPECT_GE(a.cm->counters().retransmits, 1u) << "the DREQ again";
  EXPECT_GE(b.cm->counters().duplicates, 1u) << "the DREP again, from TIMEWAIT";
}

TEST_F(CmAgentTest, DeferredRtuForNdCompleteConnect) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb, /*defer_rtu=*/true);
  ASSERT_TRUE(a.ev.wait(EventKind::kConnectResponse)) << a.ev.kinds();
  EXPECT_EQ(a.cm->state(ida), State::kRepRcvd);
  EXPECT_EQ(a.qp->state(), nic::QpState::kRtr);
  EXPECT_FALSE(b.ev.wait(EventKind::kEstablished, 50)) << "no RTU yet";
  ASSERT_TRUE(a.cm->complete_connect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kEstablished)) << a.ev.kinds();
  ASSERT_TRUE(b.ev.wait(EventKind::kEstablished)) << b.ev.kinds();
  traffic();
}

TEST_F(CmAgentTest, PeerWithoutCmTimesOut) {
  // B's engine runs but has no QP1: every REQ is dropped there.
  make_agent(a, fast_config(2));
  ASSERT_TRUE(a.cm->start());
  ConnectParams p = to_b(7174);
  const auto t0 = Clock::now();
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  ASSERT_TRUE(a.ev.wait(EventKind::kTimeout)) << a.ev.kinds();
  const auto took = Clock::now() - t0;
  // Three tries of 2 * 1 ms + 128 ms each.
  EXPECT_GE(took, 390ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(a.cm->counters().retransmits, 2u);
  EXPECT_EQ(a.cm->counters().mads_sent, 3u);
}

TEST_F(CmAgentTest, AddressThatDoesNotAnswerIsUnreachable) {
  make_agent(a, fast_config(15));
  ASSERT_TRUE(a.cm->start());
  ConnectParams p;
  p.qp = a.qp;
  p.dest_ipv4 = kIpNobody;
  p.dest_port = 7174;
  const auto t0 = Clock::now();
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  ASSERT_TRUE(a.ev.wait(EventKind::kUnreachable)) << a.ev.kinds();
  EXPECT_LT(Clock::now() - t0, 5s) << "ARP gives up after 5 x 200 ms";
}

TEST_F(CmAgentTest, PeerThatVanishesStillEndsTheDisconnect) {
  start_agents(fast_config(2), fast_config(2));
  ConnId ida, idb;
  establish(&ida, &idb);
  b.cm->stop();  // B's host is gone as far as the CM goes
  const auto t0 = Clock::now();
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  EXPECT_GE(Clock::now() - t0, 390ms) << "after the DREQ's retries";
  EXPECT_EQ(a.qp->state(), nic::QpState::kError);
  EXPECT_FALSE(b.ev.wait(EventKind::kDisconnected, 0));
}

// ---- giving up before the RTU (ND Reject / Release on the active side) ---------------------

TEST_F(CmAgentTest, ActiveSideRejectsTheRep) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb, /*defer_rtu=*/true);
  ASSERT_TRUE(a.ev.wait(EventKind::kConnectResponse)) << a.ev.kinds();
  const auto why = text("limits not acceptable");
  ASSERT_TRUE(a.cm->reject(ida, why));
  EXPECT_EQ(a.qp->state(), nic::QpState::kError) << "the QP was in RTR with the REP's values";
  EXPECT_EQ(a.cm->state(ida), State::kTimewait);
  EXPECT_FALSE(a.cm->reject(ida, {})) << "once";
  EXPECT_FALSE(a.cm->complete_connect(ida));
  Event e;
  ASSERT_TRUE(b.ev.wait(EventKind::kRejected, kCmWaitMs, &e)) << b.ev.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejConsumerDefined);
  EXPECT_TRUE(starts_with(e.private_data, why));
  EXPECT_TRUE(qp_reaches(b.qp, nic::QpState::kError));
  EXPECT_FALSE(b.ev.wait(EventKind::kEstablished, 0));
}

TEST_F(CmAgentTest, DisconnectBeforeCompleteConnectIsAReject) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb, /*defer_rtu=*/true);
  ASSERT_TRUE(a.ev.wait(EventKind::kConnectResponse)) << a.ev.kinds();
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  // Linux cm_destroy_id in REP_RCVD: a consumer REJ, which ends B's accept at once (not a
  // DREQ, and not B's REP retries running out: kDisconnected or kTimeout).
  Event e;
  ASSERT_TRUE(b.ev.wait(EventKind::kRejected, kCmWaitMs, &e)) << b.ev.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejConsumerDefined);
  EXPECT_EQ(a.qp->state(), nic::QpState::kError);
}

TEST_F(CmAgentTest, LostRejOfTheRepIsSentAgain) {
  // A's REJ of the REP is lost: B's REP retry finds A in TIMEWAIT and gets the REJ again.
  std::atomic<int> rejs{0};
  Config ca = fast_config(8);
  // A's TIMEWAIT (ACK timeout + its REQ timer: 1074 + 130 ms) far over B's REP retry period
  // (128 ms), so that the retry finds it even on a loaded machine (with 256 + 130 ms it did
  // not, once, at load 7). After TIMEWAIT the REP would get a REJ all the same (unknown comm
  // ID: kRefused), just not this one.
  ca.ack_timeout = 18;
  start_agents(std::move(ca), fast_config(8),
               [&](const ib::CmMad& m) { return m.hdr.attr_id == ib::kAttrRej && rejs++ == 0; });
  ConnId ida, idb;
  establish(&ida, &idb, /*defer_rtu=*/true);
  ASSERT_TRUE(a.ev.wait(EventKind::kConnectResponse)) << a.ev.kinds();
  ASSERT_TRUE(a.cm->reject(ida, {}));
  ASSERT_TRUE(b.ev.wait(EventKind::kRejected)) << b.ev.kinds();
  EXPECT_FALSE(b.ev.wait(EventKind::kTimeout, 0));
  EXPECT_GE(rejs.load(), 2);
  EXPECT_GE(b.cm->counters().retransmits, 1u) << "the REP again";
  EXPECT_GE(a.cm->counters().duplicates, 1u) << "the REJ again, from TIMEWAIT";
}

TEST_F(CmAgentTest, RequestWithdrawnByItsSenderCannotBeAnswered) {
  start_agents();
  const uint16_t port = b.cm->listen(0);
  ASSERT_NE(port, 0);
  ConnectParams p = to_b(port);
  const ConnId ida = a.cm->connect(p, a.ev.cb());
  ASSERT_NE(ida, 0u);
  Request r;
  ASSERT_TRUE(b.cm->get_request(port, &r, kWaitMs));
  // A gives up while B holds the request: its REJ names only A's comm ID.
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
  EXPECT_EQ(a.qp->state(), nic::QpState::kInit) << "left for another try";
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (b.cm->state(r.conn) == State::kReqRcvd && Clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(b.cm->state(r.conn), State::kTimewait);
  AcceptParams ap;
  ap.qp = b.qp;
  EXPECT_FALSE(b.cm->accept(r.conn, ap, b.ev.cb())) << "no REP to a peer that gave up";
  EXPECT_FALSE(b.cm->reject(r.conn, {}));
  EXPECT_EQ(b.qp->state(), nic::QpState::kReset);

  // The same with the request still queued: it never reaches get_request(). A MAD is counted
  // under the lock it is handled under, so the count says when each one is through.
  const auto received = [&](uint64_t n) {
    const auto until = Clock::now() + std::chrono::milliseconds(kWaitMs);
    while (b.cm->counters().mads_received < n && Clock::now() < until) std::this_thread::sleep_for(1ms);
    return b.cm->counters().mads_received >= n;
  };
  const uint64_t before = b.cm->counters().mads_received;
  const ConnId ida2 = a.cm->connect(p, a.ev.cb());
  ASSERT_NE(ida2, 0u);
  ASSERT_TRUE(received(before + 1));  // the REQ, queued
  ASSERT_TRUE(a.cm->disconnect(ida2));
  ASSERT_TRUE(received(before + 2));  // its REJ
  EXPECT_FALSE(b.cm->get_request(port, &r, 0));
}

TEST_F(CmAgentTest, DetachedConnectionLeavesTheQpAlone) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb);
  EXPECT_GE(a.cm->local_port(ida), 32768) << "the ephemeral port rdma_cm would bind";
  EXPECT_EQ(a.cm->local_port(0), 0);
  a.cm->detach(ida);
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(b.ev.wait(EventKind::kDisconnected)) << b.ev.kinds();
  EXPECT_EQ(a.qp->state(), nic::QpState::kRts) << "the agent no longer moves it";
  EXPECT_FALSE(a.ev.wait(EventKind::kDisconnectDone, 200)) << "nor calls back";
}

// ---- on the wire --------------------------------------------------------------------------

struct WireMad {
  bool from_a;
  ib::CmMad mad;
};

TEST_F(CmAgentTest, MadsOnTheWireAreRdmaCms) {
  start_agents();
  ConnId ida, idb;
  establish(&ida, &idb);
  traffic();
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_TRUE(a.ev.wait(EventKind::kDisconnectDone));
  const uint32_t qpn_a = a.qp->qpn(), qpn_b = b.qp->qpn();
  a.cm.reset();
  a.dev.close();
  a.port.close();  // flushes the capture

  wire::PcapReader reader;
  ASSERT_TRUE(reader.open(capture_)) << reader.error();
  std::vector<WireMad> mads;
  std::vector<wire::RocePacket> rc;
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& rec : reader.records()) frames.push_back(rec.data);
  for (const auto& f : frames) {
    wire::RocePacket p;
    if (wire::decode_frame(f.data(), f.size(), &p) != wire::Reject::kOk) continue;
    if (p.bth.opcode != wire::kUdSendOnly) {
      rc.push_back(p);
      continue;
    }
    EXPECT_EQ(p.bth.dest_qp, ib::kGsiQpn);
    EXPECT_EQ(p.deth.src_qp, ib::kGsiQpn);
    EXPECT_EQ(p.deth.qkey, ib::kGsiQkey);
    WireMad m{p.ip4.src == kIpA, {}};
    ASSERT_EQ(ib::decode_cm_mad(p.payload, p.payload_len, &m.mad), ib::CmError::kOk);
    // A slow machine may retransmit; the copies are byte-identical, keep the first.
    if (std::none_of(mads.begin(), mads.end(), [&](const WireMad& w) { return w.mad.hdr.attr_id == m.mad.hdr.attr_id; }))
      mads.push_back(m);
  }
  // As in rping's cm.pcap: REQ, REP, RTU, DREQ, DREP, one TID.
  ASSERT_EQ(mads.size(), 5u);
  const uint16_t order[] = {ib::kAttrReq, ib::kAttrRep, ib::kAttrRtu, ib::kAttrDreq, ib::kAttrDrep};
  const bool from_a[] = {true, false, true, true, false};
  for (size_t i = 0; i < 5; i++) {
    EXPECT_EQ(mads[i].mad.hdr.attr_id, order[i]) << i;
    EXPECT_EQ(mads[i].from_a, from_a[i]) << i;
    EXPECT_EQ(mads[i].mad.hdr.method, ib::kMethodSend);
    EXPECT_EQ(mads[i].mad.hdr.tid, mads[0].mad.hdr.tid);
  }
  const auto& req = std::get<ib::CmReq>(mads[0].mad.msg);
  const auto& rep = std::get<ib::CmRep>(mads[1].mad.msg);
  const auto& rtu = std::get<ib::CmRtu>(mads[2].mad.msg);
  const auto& dreq = std::get<ib::CmDreq>(mads[3].mad.msg);
  const auto& drep = std::get<ib::CmDrep>(mads[4].mad.msg);

  uint16_t ps = 0, port = 0;
  ASSERT_TRUE(ib::parse_rdma_service_id(req.service_id, &ps, &port));
  EXPECT_EQ(ps, ib::kRdmaPsTcp);
  EXPECT_EQ(req.service_id, ib::rdma_tcp_service_id(port));
  EXPECT_EQ(req.local_qpn, qpn_a);
  EXPECT_EQ(req.transport_service_type, 0);
  EXPECT_EQ(req.pkey, 0xFFFF);
  EXPECT_EQ(req.path_mtu, 3);
  EXPECT_EQ(req.retry_count, 7);
  EXPECT_EQ(req.rnr_retry_count, 7);
  EXPECT_EQ(req.max_cm_retries, 4);
  EXPECT_EQ(req.remote_cm_response_timeout, 18);
  EXPECT_EQ(req.local_cm_response_timeout, 18);
  EXPECT_EQ(req.primary.local_lid, 0xFFFF);
  EXPECT_EQ(req.primary.remote_lid, 0xFFFF);
  EXPECT_EQ(req.primary.hop_limit, 64);
  ib::Gid ga{}, gb{};
  ga[10] = ga[11] = gb[10] = gb[11] = 0xFF;
  wire::store_be32(ga.data() + 12, kIpA);
  wire::store_be32(gb.data() + 12, kIpB);
  EXPECT_EQ(req.primary.local_gid, ga);
  EXPECT_EQ(req.primary.remote_gid, gb);
  ib::CmaHeader cma;
  ASSERT_EQ(ib::decode_cma_header(req.private_data.data(), req.private_data.size(), &cma), ib::CmError::kOk);
  EXPECT_EQ(cma.version, 0);
  EXPECT_EQ(cma.ip_version, 4);
  EXPECT_EQ(cma.src_ipv4(), kIpA);
  EXPECT_EQ(cma.dst_ipv4(), kIpB);
  const uint32_t fl = req.primary.flow_label;
  EXPECT_EQ(fl, (uint32_t(cma.port) * 31 + port) & 0xFFFFF) << "rdma_cm's flow label";

  EXPECT_EQ(rep.remote_comm_id, req.local_comm_id);
  EXPECT_EQ(rep.local_qpn, qpn_b);
  EXPECT_EQ(rtu.local_comm_id, req.local_comm_id);
  EXPECT_EQ(rtu.remote_comm_id, rep.local_comm_id);
  EXPECT_EQ(dreq.local_comm_id, req.local_comm_id);
  EXPECT_EQ(dreq.remote_comm_id, rep.local_comm_id);
  EXPECT_EQ(dreq.remote_qpn_eecn, qpn_b);
  EXPECT_EQ(drep.local_comm_id, rep.local_comm_id);
  EXPECT_EQ(drep.remote_comm_id, req.local_comm_id);

  // The RC traffic follows what the MADs said: each side sends from the PSN the other side's
  // message named, with the UDP source port the flow label gives (both directions).
  const uint16_t sport = uint16_t(0xC000 | ((fl & 0x3FFF) ^ (fl >> 14)));
  std::optional<uint32_t> first_a, first_b;
  ASSERT_FALSE(rc.empty());
  for (const wire::RocePacket& p : rc) {
    EXPECT_EQ(p.udp.src_port, sport);
    EXPECT_EQ(p.bth.dest_qp, p.ip4.src == kIpA ? qpn_b : qpn_a);
    const wire::OpKind k = wire::opcode_info(p.bth.opcode).kind;
    if (k != wire::OpKind::kSend && k != wire::OpKind::kWrite) continue;
    auto& first = p.ip4.src == kIpA ? first_a : first_b;
    if (!first) first = p.bth.psn;
  }
  ASSERT_TRUE(first_a && first_b);
  EXPECT_EQ(*first_a, rep.starting_psn) << "A sends from the REP's starting PSN";
  EXPECT_EQ(*first_b, req.starting_psn) << "B sends from the REQ's starting PSN";
}

}  // namespace
}  // namespace ndnic::cm::testing
