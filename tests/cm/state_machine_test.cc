// The CM state machine alone, without DPDK: two ends whose MADs the test carries from one to the
// other (or drops, or repeats, or forges), fake QPs that record the transitions asked of them,
// and a clock the test moves. Each test checks states, the MADs that leave with their fields,
// the QP transitions and the events the application hears.
#include "cm/state_machine.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cm/mads.h"
#include "wire/cm_mad.h"

namespace ndnic::cm {
namespace {

namespace ib = wire::cm;
using std::chrono::milliseconds;

constexpr uint32_t kIpA = 0x0A000001;
constexpr uint32_t kIpB = 0x0A000002;
constexpr uint32_t kIpEvil = 0x0A000063;
constexpr uint16_t kPort = 5000;
constexpr uint32_t kQpnA = 0x11;
constexpr uint32_t kQpnB = 0x22;

/// Short timers: a REQ try is 2 * 1 ms + 128 ms, three retries; an ACK timeout of 64 ms.
const Config kTestConfig{
    .cm_response_timeout = 15, .max_cm_retries = 3, .packet_life_time = 8, .ack_timeout = 14};

/// What the state machine asked of one QP: kept by the test, since a connection that ends
/// takes its QP handle with it.
struct QpRecord {
  std::string log;            ///< the transitions asked for, in order
  /// What the last RTR / RTS was given.
  struct Path {
    uint32_t remote_qpn, rq_psn, sq_psn, dest_ipv4, flow_label;
  } path{};
  bool refuse_rtr = false;
  bool transport_failed = false;
};

/// A QP that records what the state machine asks of it.
struct FakeQp : AppQp {
  FakeQp(uint32_t n, QpRecord* r) : n_(n), r_(r) {}
  uint32_t qpn() const override { return n_; }
  bool to_rtr(const Connection& c) override {
    r_->log += "rtr ";
    r_->path = {c.peer_qpn, c.rq_psn, c.sq_psn, c.peer_ipv4, c.flow_label};
    return !r_->refuse_rtr;
  }
  bool to_rts(const Connection& c) override {
    r_->log += "rts ";
    r_->path = {c.peer_qpn, c.rq_psn, c.sq_psn, c.peer_ipv4, c.flow_label};
    return true;
  }
  void to_error() override { r_->log += "error "; }
  bool failed() const override { return r_->transport_failed; }

  uint32_t n_;
  QpRecord* r_;
};

struct Sent {
  uint32_t dest;
  ib::CmMad mad;
  std::array<uint8_t, ib::kMadLen> bytes;
  ConnId owner;
};

/// One end: the state machine, its world (what it sent, posted callbacks, a clock) and the
/// events its application heard.
class End : public Effects {
 public:
  End(uint32_t ip, uint32_t seed, Config cfg = kTestConfig) : ip(ip), seed_(seed), sm(cfg, ip, 0xCA00 + ip, *this) {}

  void send(uint32_t dest, const uint8_t* mad, ConnId owner) override {
    Sent s{dest, {}, {}, owner};
    std::memcpy(s.bytes.data(), mad, ib::kMadLen);
    EXPECT_EQ(ib::decode_cm_mad(mad, ib::kMadLen, &s.mad), ib::CmError::kOk) << "every MAD that leaves decodes";
    sent.push_back(s);
  }
  void post(std::function<void()> f) override { posted.push_back(std::move(f)); }
  void requests_changed() override { requests_changed_count++; }
  Clock::time_point now() override { return t; }
  uint32_t random32() override { return seed_++; }

  /// Runs the callbacks posted so far, as the agent does with no lock held.
  void deliver() {
    auto todo = std::move(posted);
    posted.clear();
    for (auto& f : todo) f();
  }
  /// What was sent since the last call.
  std::vector<Sent> take() {
    auto out = std::move(sent);
    sent.clear();
    return out;
  }
  Callback cb() {
    return [this](const Event& e) { events.push_back(e); };
  }
  /// The event kinds heard so far, by name.
  std::string heard() {
    deliver();
    std::string s;
    for (const Event& e : events) s += std::string(event_name(e.kind)) + " ";
    return s;
  }
  /// Moves the clock on and runs the timers due.
  void advance(milliseconds d) {
    t += d;
    sm.fire_timers(t);
  }

  uint32_t ip;
  uint32_t seed_;
  Clock::time_point t = Clock::time_point{} + std::chrono::hours(1);
  std::vector<Sent> sent;
  std::vector<std::function<void()>> posted;
  int requests_changed_count = 0;
  std::vector<Event> events;
  StateMachine sm;
};

template <class M>
const M& as(const Sent& s) {
  EXPECT_TRUE(std::holds_alternative<M>(s.mad.msg));
  return std::get<M>(s.mad.msg);
}

class StateMachineTest : public ::testing::Test {
 protected:
  /// Carries every MAD `from` sent to `to` (the address they name must be `to`'s); returns them.
  std::vector<Sent> carry(End& from, End& to) {
    auto mads = from.take();
    for (const Sent& s : mads) {
      EXPECT_EQ(s.dest, to.ip);
      to.sm.on_mad(from.ip, s.mad);
    }
    return mads;
  }

  /// A sends a REQ to B's listener; returns A's connection. The REQ is left in A's outbox.
  ConnId connect(bool defer_rtu = false, std::vector<uint8_t> data = {1, 2, 3}) {
    connect_data_ = std::move(data);
    ConnectParams p;
    p.dest_ipv4 = kIpB;
    p.dest_port = kPort;
    p.src_port = 40000;
    p.private_data = connect_data_;
    p.defer_rtu = defer_rtu;
    *qpa = {};
    return a.sm.connect(p, std::make_unique<FakeQp>(kQpnA, qpa), a.cb());
  }

  /// B takes the request the REQ made.
  Request take_request() {
    Request r;
    EXPECT_EQ(b.sm.take_request(kPort, &r), StateMachine::Take::kTaken);
    return r;
  }

  bool accept(ConnId id, std::vector<uint8_t> data = {9, 8}) {
    accept_data_ = std::move(data);
    AcceptParams p;
    p.private_data = accept_data_;
    *qpb = {};
    return b.sm.accept(id, p, std::make_unique<FakeQp>(kQpnB, qpb), b.cb());
  }

  /// REQ, REP, RTU: both ends established. Returns (A's, B's) connection IDs.
  std::pair<ConnId, ConnId> establish() {
    EXPECT_NE(b.sm.listen(kPort, {}, 0), 0);
    const ConnId ida = connect();
    carry(a, b);
    const ConnId idb = take_request().conn;
    EXPECT_TRUE(accept(idb));
    carry(b, a);
    carry(a, b);
    EXPECT_EQ(a.sm.state(ida), State::kEstablished);
    EXPECT_EQ(b.sm.state(idb), State::kEstablished);
    a.deliver();
    b.deliver();
    a.events.clear();
    b.events.clear();
    return {ida, idb};
  }

  End a{kIpA, 0x1000};
  End b{kIpB, 0x2000};
  QpRecord rec_a, rec_b;
  QpRecord* qpa = &rec_a;  ///< A's QP, as the connection moved it
  QpRecord* qpb = &rec_b;
  std::vector<uint8_t> connect_data_, accept_data_;
};

TEST(StateNames, AsLinuxIbCmNamesThem) {
  EXPECT_STREQ(state_name(State::kReqSent), "REQ_SENT");
  EXPECT_STREQ(state_name(State::kMraRepRcvd), "MRA_REP_RCVD");
  EXPECT_STREQ(state_name(State::kTimewait), "TIMEWAIT");
  EXPECT_STREQ(event_name(EventKind::kDisconnectDone), "disconnect_done");
}

TEST_F(StateMachineTest, ActiveConnectReqRepRtu) {
  int requests = 0;
  ASSERT_EQ(b.sm.listen(kPort, [&](uint16_t port) { requests += port == kPort; }, 0), kPort);
  const ConnId ida = connect();
  ASSERT_NE(ida, 0u);
  EXPECT_EQ(a.sm.state(ida), State::kReqSent);
  EXPECT_EQ(a.sm.local_port(ida), 40000);

  auto reqs = carry(a, b);
  ASSERT_EQ(reqs.size(), 1u);
  const ib::CmReq& req = as<ib::CmReq>(reqs[0]);
  EXPECT_EQ(req.local_comm_id, ida);
  EXPECT_EQ(req.service_id, ib::rdma_tcp_service_id(kPort));
  EXPECT_EQ(req.local_qpn, kQpnA);
  EXPECT_EQ(req.local_ca_guid, 0xCA00u + kIpA);
  EXPECT_EQ(req.path_mtu, 3) << "1024 bytes";
  EXPECT_EQ(req.primary.flow_label, mads::flow_label(40000, kPort));
  EXPECT_EQ(reqs[0].mad.hdr.tid & 0xFFFFFFFF, ida) << "the TID carries our comm ID";
  ib::CmaHeader cma;
  ASSERT_EQ(ib::decode_cma_header(req.private_data.data(), req.private_data.size(), &cma), ib::CmError::kOk);
  EXPECT_EQ(cma.port, 40000);
  EXPECT_EQ(cma.src_ipv4(), kIpA);
  EXPECT_EQ(cma.dst_ipv4(), kIpB);

  // B: a request queued for the application, nothing sent yet.
  EXPECT_TRUE(b.sent.empty());
  b.deliver();
  EXPECT_EQ(requests, 1);
  EXPECT_EQ(b.sm.pending_requests(kPort), 1u);
  const Request r = take_request();
  EXPECT_EQ(b.sm.pending_requests(kPort), 0u);
  EXPECT_EQ(b.sm.state(r.conn), State::kReqRcvd);
  EXPECT_EQ(r.peer_ipv4, kIpA);
  EXPECT_EQ(r.peer_port, 40000);
  EXPECT_EQ(r.peer_qpn, kQpnA);
  EXPECT_EQ(r.peer_starting_psn, req.starting_psn);
  EXPECT_EQ(r.local_ipv4, kIpB);
  ASSERT_EQ(r.private_data.size(), kConnectDataLen);
  EXPECT_EQ(r.private_data[0], 1);
  EXPECT_EQ(r.private_data[2], 3);

  // accept: B's QP to RTS before the REP leaves.
  ASSERT_TRUE(accept(r.conn));
  EXPECT_EQ(qpb->log, "rtr rts ");
  EXPECT_EQ(qpb->path.remote_qpn, kQpnA);
  EXPECT_EQ(qpb->path.sq_psn, req.starting_psn);
  EXPECT_EQ(qpb->path.dest_ipv4, kIpA);
  EXPECT_EQ(qpb->path.flow_label, req.primary.flow_label);
  EXPECT_EQ(b.sm.state(r.conn), State::kRepSent);
  auto reps = carry(b, a);
  ASSERT_EQ(reps.size(), 1u);
  const ib::CmRep& rep = as<ib::CmRep>(reps[0]);
  EXPECT_EQ(rep.local_comm_id, r.conn);
  EXPECT_EQ(rep.remote_comm_id, ida);
  EXPECT_EQ(rep.local_qpn, kQpnB);
  EXPECT_EQ(rep.starting_psn, qpb->path.rq_psn);
  EXPECT_EQ(reps[0].mad.hdr.tid, reqs[0].mad.hdr.tid);

  // A: REP in, QP to RTR and RTS, RTU out, established.
  EXPECT_EQ(qpa->log, "rtr rts ");
  EXPECT_EQ(qpa->path.remote_qpn, kQpnB);
  EXPECT_EQ(qpa->path.sq_psn, rep.starting_psn);
  EXPECT_EQ(qpa->path.rq_psn, req.starting_psn);
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  EXPECT_EQ(a.heard(), "established ");
  EXPECT_EQ(a.events[0].conn, ida);
  EXPECT_EQ(a.events[0].private_data[0], 9);
  auto rtus = carry(a, b);
  ASSERT_EQ(rtus.size(), 1u);
  EXPECT_EQ(as<ib::CmRtu>(rtus[0]).local_comm_id, ida);
  EXPECT_EQ(as<ib::CmRtu>(rtus[0]).remote_comm_id, r.conn);

  EXPECT_EQ(b.sm.state(r.conn), State::kEstablished);
  EXPECT_EQ(b.heard(), "established ");
  std::vector<uint8_t> got;
  ASSERT_TRUE(b.sm.peer_private_data(r.conn, &got));
  EXPECT_EQ(got[1], 2);
  EXPECT_TRUE(a.sent.empty());
  EXPECT_TRUE(b.sent.empty());
  EXPECT_EQ(b.sm.next_deadline(), Clock::time_point::max()) << "no timer once established";
}

TEST_F(StateMachineTest, DeferredRtuWaitsForCompleteConnect) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect(/*defer_rtu=*/true);
  carry(a, b);
  ASSERT_TRUE(accept(take_request().conn));
  carry(b, a);
  EXPECT_EQ(a.sm.state(ida), State::kRepRcvd);
  EXPECT_EQ(qpa->log, "rtr ");
  EXPECT_EQ(a.heard(), "connect_response ");
  EXPECT_TRUE(a.sent.empty()) << "no RTU before complete_connect";

  ASSERT_TRUE(a.sm.complete_connect(ida));
  EXPECT_EQ(qpa->log, "rtr rts ");
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  EXPECT_EQ(a.heard(), "connect_response established ");
  auto rtus = carry(a, b);
  ASSERT_EQ(rtus.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ib::CmRtu>(rtus[0].mad.msg));
  EXPECT_FALSE(a.sm.complete_connect(ida)) << "only in REP_RCVD";
}

TEST_F(StateMachineTest, ConsumerRejectOfTheRequest) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  carry(a, b);
  const Request r = take_request();
  const std::vector<uint8_t> why = {'n', 'o'};
  ASSERT_TRUE(b.sm.reject(r.conn, why));
  EXPECT_EQ(b.sm.state(r.conn), State::kTimewait);
  EXPECT_FALSE(accept(r.conn)) << "a rejected request cannot be accepted";
  auto rejs = carry(b, a);
  ASSERT_EQ(rejs.size(), 1u);
  const ib::CmRej& rej = as<ib::CmRej>(rejs[0]);
  EXPECT_EQ(rej.reason, ib::kRejConsumerDefined);
  EXPECT_EQ(rej.message_rejected, ib::kMsgReq);
  EXPECT_EQ(rej.remote_comm_id, ida);
  EXPECT_EQ(rej.private_data[0], 'n');

  EXPECT_EQ(a.heard(), "rejected ");
  EXPECT_EQ(a.events[0].reject_reason, ib::kRejConsumerDefined);
  EXPECT_EQ(a.events[0].private_data[1], 'o');
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
  EXPECT_EQ(qpa->log, "") << "the QP stays in INIT: the application may try again";
  EXPECT_EQ(b.sm.counters().rejects_sent, 1u);
}

TEST_F(StateMachineTest, NobodyListensIsARefusal) {
  const ConnId ida = connect();
  carry(a, b);
  auto rejs = carry(b, a);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).reason, ib::kRejInvalidServiceId);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).local_comm_id, 0u) << "no connection of B's";
  EXPECT_EQ(b.sm.connection_count(), 0u);
  EXPECT_EQ(a.heard(), "refused ");
  EXPECT_EQ(a.events[0].reject_reason, ib::kRejInvalidServiceId);
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
}

TEST_F(StateMachineTest, ActiveSideRejectsTheRep) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect(/*defer_rtu=*/true);
  carry(a, b);
  const ConnId idb = take_request().conn;
  ASSERT_TRUE(accept(idb));
  const auto reps = carry(b, a);
  ASSERT_TRUE(a.sm.reject(ida, {}));
  EXPECT_EQ(qpa->log, "rtr error ");
  EXPECT_EQ(a.sm.state(ida), State::kTimewait);
  auto rejs = carry(a, b);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).message_rejected, ib::kMsgRep);
  EXPECT_EQ(b.heard(), "rejected ");
  EXPECT_EQ(qpb->log, "rtr rts error ");
  EXPECT_EQ(b.sm.state(idb), State::kTimewait);

  // B's REP again (A's REJ lost): the same REJ again, from what A kept.
  a.sm.on_mad(kIpB, reps[0].mad);
  auto again = a.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, rejs[0].bytes);
  EXPECT_EQ(a.sm.counters().duplicates, 1u);
}

TEST_F(StateMachineTest, QpRefusingRtrFailsTheConnection) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  carry(a, b);
  const ConnId idb = take_request().conn;
  ASSERT_TRUE(accept(idb));
  qpa->refuse_rtr = true;
  carry(b, a);
  EXPECT_EQ(a.heard(), "error ");
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
  const auto rejs = carry(a, b);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).message_rejected, ib::kMsgRep);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).reason, ib::kRejConsumerDefined);
  EXPECT_EQ(b.heard(), "rejected ");
  EXPECT_EQ(b.sm.state(idb), State::kTimewait);
}

TEST_F(StateMachineTest, MraGivesThePeerMoreTime) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  const auto reqs = carry(a, b);
  const Clock::time_point first = a.sm.next_deadline();
  EXPECT_EQ(first, a.t + milliseconds(2 * 1 + 128));

  ib::CmMra mra;
  mra.local_comm_id = 0x7777;
  mra.remote_comm_id = ida;
  mra.message_mraed = ib::kMsgReq;
  mra.service_timeout = 20;  // 4 s
  a.sm.on_mad(kIpEvil, {reqs[0].mad.hdr, mra});
  EXPECT_EQ(a.sm.state(ida), State::kReqSent) << "an MRA from another host is ignored";
  EXPECT_EQ(a.sm.counters().bad_mads, 1u);

  a.sm.on_mad(kIpB, {reqs[0].mad.hdr, mra});
  EXPECT_EQ(a.sm.state(ida), State::kMraReqRcvd);
  EXPECT_EQ(a.sm.next_deadline(), a.t + milliseconds(4096 + 2 * 1));
  a.advance(milliseconds(200));
  EXPECT_TRUE(a.sent.empty()) << "no retransmission while the peer said it needs longer";

  // The REP still completes the connection from MRA_REQ_RCVD.
  ASSERT_TRUE(accept(take_request().conn));
  carry(b, a);
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
}

TEST_F(StateMachineTest, ReqRetransmittedThenTimesOut) {
  const ConnId ida = connect();
  const auto first = a.take();
  ASSERT_EQ(first.size(), 1u);
  a.advance(milliseconds(129));
  EXPECT_TRUE(a.sent.empty()) << "not due yet";
  for (int i = 1; i <= 3; i++) {
    a.advance(milliseconds(130));
    auto again = a.take();
    ASSERT_EQ(again.size(), 1u) << "retry " << i;
    EXPECT_EQ(again[0].bytes, first[0].bytes) << "the same REQ, byte for byte";
    EXPECT_EQ(again[0].owner, ida);
    EXPECT_EQ(a.sm.counters().retransmits, uint64_t(i));
  }
  EXPECT_EQ(a.heard(), "");
  a.advance(milliseconds(130));
  EXPECT_TRUE(a.sent.empty());
  EXPECT_EQ(a.heard(), "timeout ");
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
  EXPECT_EQ(a.sm.connection_count(), 0u) << "forgotten";
}

TEST_F(StateMachineTest, SendErrorOfTheReqIsUnreachable) {
  const ConnId ida = connect();
  a.sm.on_send_error(ida);
  EXPECT_EQ(a.heard(), "unreachable ");
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
}

TEST_F(StateMachineTest, DuplicateReqGetsTheKeptRep) {
  b.sm.listen(kPort, {}, 0);
  connect();
  const auto reqs = carry(a, b);
  b.sm.on_mad(kIpA, reqs[0].mad);
  EXPECT_TRUE(b.sent.empty()) << "REQ_RCVD: the application has not answered, nothing to repeat";
  ASSERT_TRUE(accept(take_request().conn));
  const auto rep = b.take();
  b.sm.on_mad(kIpA, reqs[0].mad);
  const auto again = b.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, rep[0].bytes);
  EXPECT_EQ(b.sm.counters().duplicates, 1u);
  EXPECT_EQ(b.sm.connection_count(), 1u) << "not a second request";
}

TEST_F(StateMachineTest, DuplicateRepGetsTheKeptRtu) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  carry(a, b);
  ASSERT_TRUE(accept(take_request().conn));
  const auto reps = carry(b, a);
  const auto rtu = a.take();
  a.sm.on_mad(kIpB, reps[0].mad);
  const auto again = a.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, rtu[0].bytes);
  EXPECT_EQ(a.sm.counters().duplicates, 1u);
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  EXPECT_EQ(a.heard(), "established ") << "once";
}

TEST_F(StateMachineTest, RepRetransmittedUntilTheRtu) {
  b.sm.listen(kPort, {}, 0);
  connect();
  carry(a, b);
  const ConnId idb = take_request().conn;
  ASSERT_TRUE(accept(idb));
  const auto rep = b.take();
  b.advance(milliseconds(128));
  const auto again = b.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, rep[0].bytes);
  for (int i = 0; i < 3; i++) b.advance(milliseconds(128));
  EXPECT_EQ(b.heard(), "timeout ");
  EXPECT_EQ(qpb->log, "rtr rts error ");
}

TEST_F(StateMachineTest, DisconnectFromTheActiveSide) {
  const auto [ida, idb] = establish();
  ASSERT_TRUE(a.sm.disconnect(ida));
  EXPECT_EQ(qpa->log, "rtr rts error ") << "ERROR before the DREQ leaves";
  EXPECT_EQ(a.sm.state(ida), State::kDreqSent);
  const auto dreqs = carry(a, b);
  ASSERT_EQ(dreqs.size(), 1u);
  const ib::CmDreq& dreq = as<ib::CmDreq>(dreqs[0]);
  EXPECT_EQ(dreq.local_comm_id, ida);
  EXPECT_EQ(dreq.remote_comm_id, idb);
  EXPECT_EQ(dreq.remote_qpn_eecn, kQpnB);

  EXPECT_EQ(b.heard(), "disconnected ");
  EXPECT_EQ(qpb->log, "rtr rts error ");
  EXPECT_EQ(b.sm.state(idb), State::kTimewait);
  const auto dreps = carry(b, a);
  ASSERT_EQ(dreps.size(), 1u);
  EXPECT_EQ(as<ib::CmDrep>(dreps[0]).local_comm_id, idb);
  EXPECT_EQ(as<ib::CmDrep>(dreps[0]).remote_comm_id, ida);
  EXPECT_EQ(a.heard(), "disconnect_done ");
  EXPECT_EQ(a.sm.state(ida), State::kTimewait);

  // The DREQ again (B's DREP lost): the DREP again, nothing else.
  b.sm.on_mad(kIpA, dreqs[0].mad);
  const auto again = b.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, dreps[0].bytes);
  EXPECT_EQ(b.sm.counters().duplicates, 1u);
  EXPECT_EQ(b.heard(), "disconnected ");
}

TEST_F(StateMachineTest, DisconnectFromThePassiveSide) {
  const auto [ida, idb] = establish();
  ASSERT_TRUE(b.sm.disconnect(idb));
  const auto dreqs = carry(b, a);
  ASSERT_EQ(dreqs.size(), 1u);
  EXPECT_EQ(as<ib::CmDreq>(dreqs[0]).remote_qpn_eecn, kQpnA);
  EXPECT_EQ(a.heard(), "disconnected ");
  EXPECT_EQ(a.sm.state(ida), State::kTimewait);
  carry(a, b);
  EXPECT_EQ(b.heard(), "disconnect_done ");
  EXPECT_EQ(b.sm.state(idb), State::kTimewait);
  EXPECT_TRUE(a.sm.disconnect(ida)) << "the peer was first";
  EXPECT_EQ(a.heard(), "disconnected disconnect_done ");
}

TEST_F(StateMachineTest, DreqRetriedThenDoneWithoutAnAnswer) {
  const auto [ida, idb] = establish();
  ASSERT_TRUE(a.sm.disconnect(ida));
  const auto dreq = a.take();
  a.advance(milliseconds(130));
  const auto again = a.take();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].bytes, dreq[0].bytes);
  for (int i = 0; i < 3; i++) a.advance(milliseconds(130));
  EXPECT_EQ(a.heard(), "disconnect_done ");
  EXPECT_EQ(a.sm.state(ida), State::kTimewait);
  (void)idb;
}

TEST_F(StateMachineTest, TimewaitEndsAndTheRecordGoes) {
  const auto [ida, idb] = establish();
  ASSERT_TRUE(a.sm.disconnect(ida));
  carry(a, b);
  carry(b, a);
  ASSERT_EQ(a.sm.state(ida), State::kTimewait);
  // TIMEWAIT: one ACK timeout (2^14 * 4 us ~ 64 ms) and one retry period (130 ms).
  EXPECT_EQ(a.sm.next_deadline(), a.t + milliseconds(64 + 130));
  a.advance(milliseconds(64 + 129));
  EXPECT_EQ(a.sm.state(ida), State::kTimewait);
  EXPECT_EQ(a.sm.connection_count(), 1u);
  a.advance(milliseconds(1));
  EXPECT_EQ(a.sm.state(ida), State::kIdle);
  EXPECT_EQ(a.sm.connection_count(), 0u);
  EXPECT_EQ(a.sm.next_deadline(), Clock::time_point::max());
  (void)idb;
}

TEST_F(StateMachineTest, MadsFromTheWrongPeerOrCommIdAreIgnored) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  const auto reqs = carry(a, b);
  const ConnId idb = take_request().conn;
  ASSERT_TRUE(accept(idb));
  const auto reps = b.take();

  // An RTU for B's connection from another host, then from A with the wrong comm ID.
  ib::CmRtu rtu;
  rtu.local_comm_id = ida;
  rtu.remote_comm_id = idb;
  b.sm.on_mad(kIpEvil, {reqs[0].mad.hdr, rtu});
  rtu.local_comm_id = ida + 1;
  b.sm.on_mad(kIpA, {reqs[0].mad.hdr, rtu});
  EXPECT_EQ(b.sm.state(idb), State::kRepSent);
  EXPECT_EQ(b.sm.counters().bad_mads, 2u);
  EXPECT_EQ(b.heard(), "");

  // A REP for A's connection from another host: refused (REJ invalid comm ID), A untouched.
  a.sm.on_mad(kIpEvil, reps[0].mad);
  EXPECT_EQ(a.sm.state(ida), State::kReqSent);
  EXPECT_EQ(qpa->log, "");
  const auto rejs = a.take();
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(rejs[0].dest, kIpEvil);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).reason, ib::kRejInvalidCommId);

  // A REJ naming A's connection from another host: ignored.
  ib::CmRej rej;
  rej.remote_comm_id = ida;
  rej.reason = ib::kRejConsumerDefined;
  a.sm.on_mad(kIpEvil, {reqs[0].mad.hdr, rej});
  EXPECT_EQ(a.sm.state(ida), State::kReqSent);
  EXPECT_EQ(a.heard(), "");

  // The real REP and RTU still connect them.
  a.sm.on_mad(kIpB, reps[0].mad);
  carry(a, b);
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  EXPECT_EQ(b.sm.state(idb), State::kEstablished);

  // A DREQ with the wrong comm ID: answered (cm_issue_drep) but the connection stays up.
  ib::CmDreq dreq;
  dreq.local_comm_id = idb + 1;
  dreq.remote_comm_id = ida;
  dreq.remote_qpn_eecn = kQpnA;
  a.sm.on_mad(kIpB, {reqs[0].mad.hdr, dreq});
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  const auto dreps = a.take();
  ASSERT_EQ(dreps.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ib::CmDrep>(dreps[0].mad.msg));
  // ... and the right comm ID but another QP: dropped.
  dreq.local_comm_id = idb;
  dreq.remote_qpn_eecn = kQpnA + 1;
  a.sm.on_mad(kIpB, {reqs[0].mad.hdr, dreq});
  EXPECT_EQ(a.sm.state(ida), State::kEstablished);
  EXPECT_TRUE(a.take().empty());
  EXPECT_EQ(a.heard(), "established ");
}

TEST_F(StateMachineTest, TransportFailureBecomesADisconnect) {
  const auto [ida, idb] = establish();
  EXPECT_TRUE(a.sm.watch_transport()) << "an established connection is watched";
  EXPECT_TRUE(a.take().empty());
  qpa->transport_failed = true;
  a.sm.watch_transport();
  EXPECT_EQ(a.heard(), "disconnected ");
  EXPECT_EQ(a.sm.state(ida), State::kDreqSent);
  const auto dreqs = carry(a, b);
  ASSERT_EQ(dreqs.size(), 1u);
  EXPECT_EQ(b.heard(), "disconnected ");
  EXPECT_EQ(b.sm.state(idb), State::kTimewait);
  EXPECT_FALSE(a.sm.watch_transport()) << "nothing established any more";
}

TEST_F(StateMachineTest, CancelBeforeTheRepIsARejTimeout) {
  b.sm.listen(kPort, {}, 0);
  const ConnId ida = connect();
  carry(a, b);
  ASSERT_TRUE(a.sm.disconnect(ida));
  EXPECT_EQ(a.heard(), "disconnect_done ");
  const auto rejs = carry(a, b);
  ASSERT_EQ(rejs.size(), 1u);
  const ib::CmRej& rej = as<ib::CmRej>(rejs[0]);
  EXPECT_EQ(rej.reason, ib::kRejTimeout);
  EXPECT_EQ(rej.reject_info_length, 8) << "naming A's CA";
  // B's request is withdrawn: nothing left for the application to take.
  Request r;
  EXPECT_EQ(b.sm.take_request(kPort, &r), StateMachine::Take::kEmpty);
  EXPECT_EQ(b.sm.take_request(kPort + 1, &r), StateMachine::Take::kNoListener);
}

TEST_F(StateMachineTest, BacklogDropsRequestsUnanswered) {
  b.sm.listen(kPort, {}, /*backlog=*/1);
  connect();
  carry(a, b);
  End c{0x0A000003, 0x3000};
  ConnectParams p;
  p.dest_ipv4 = kIpB;
  p.dest_port = kPort;
  QpRecord rec_c;
  ASSERT_NE(c.sm.connect(p, std::make_unique<FakeQp>(0x33, &rec_c), c.cb()), 0u);
  carry(c, b);
  EXPECT_TRUE(b.sent.empty()) << "dropped, not refused: the sender's retry may get in";
  EXPECT_EQ(b.sm.counters().requests_dropped, 1u);
  EXPECT_EQ(b.sm.pending_requests(kPort), 1u);
}

TEST_F(StateMachineTest, UnansweredRequestIsRefusedWithTimeout) {
  b.sm.listen(kPort, {}, 0);
  connect();
  carry(a, b);
  // A gives up after (3 + 1) tries of 128 ms + its ACK timeout (64 ms): B refuses then.
  b.advance(milliseconds(4 * (128 + 64)));
  const auto rejs = carry(b, a);
  ASSERT_EQ(rejs.size(), 1u);
  EXPECT_EQ(as<ib::CmRej>(rejs[0]).reason, ib::kRejTimeout);
  EXPECT_EQ(b.sm.counters().requests_expired, 1u);
  EXPECT_EQ(a.heard(), "refused ");
}

}  // namespace
}  // namespace ndnic::cm
