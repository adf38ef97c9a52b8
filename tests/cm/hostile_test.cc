// Hostile traffic on QP1: CM MADs forged by other hosts on the segment, a REQ flood and a seeded
// storm of random MADs, each injected as a frame into the receiving device's real DPDK port (an
// RX callback on the port's queue adds it to the burst the device's lcore receives). A
// connection must survive whatever does not come from its peer's address with both its comm IDs
// (and, for a DREQ, its QPN), and the agent's state must stay bounded whatever arrives.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rte_arp.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cm/agent.h"
#include "ndnic/nd.h"
#include "nd_frontend/objects.h"
#include "nd_frontend/status.h"
#include "ndnic/nic.h"
#include "pmd_glue/arp.h"
#include "ndnic/port.h"
#include "tests/cm/pair.h"
#include "tests/fixtures/node_pair.h"
#include "wire/cm_mad.h"
#include "ndnic/wire/headers.h"
#include "ndnic/wire/packet.h"

namespace ndnic::cm::testing {
namespace {

namespace ib = wire::cm;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kIpA = 0xC6124601;  // 198.18.70.1
constexpr uint32_t kIpB = 0xC6124602;
/// Other hosts on the segment. Each announces itself by ARP first, so that what the agents
/// answer them leaves at once instead of waiting on ARP (a host that never answers is another
/// test's subject).
constexpr std::array<uint32_t, 4> kIpThird = {0xC612460A, 0xC612460B, 0xC612460C, 0xC612460D};
constexpr size_t kBuf = 1 << 16;
constexpr int kWaitMs = 10000;  // generous: two busy pollers and two agents share two CPUs
/// MADs injected before waiting for them to be handled: well under QP1's receive depth (64).
constexpr int kInjectWindow = 16;

/// 1 s per CM try (2 * 1 ms + 1024 ms), 4 retries: nothing is retransmitted on a loaded machine.
Config calm_config() {
  Config c;
  c.cm_response_timeout = 18;
  c.packet_life_time = 8;
  c.max_cm_retries = 4;
  c.ack_timeout = 16;
  return c;
}

rte_ether_addr third_mac(size_t i) { return {{0x02, 0x00, 0x5E, 0x46, 0x00, uint8_t(0x0A + i)}}; }

/// Where a forged frame claims to come from.
struct Source {
  uint32_t ip;
  rte_ether_addr mac;
};

Source third(size_t i) { return {kIpThird[i % kIpThird.size()], third_mac(i % kIpThird.size())}; }

ib::CmMad mad_of(ib::CmMessage msg, uint64_t tid = 0x600DF00D) {
  ib::CmMad m;
  m.hdr.tid = tid;
  m.msg = std::move(msg);
  return m;
}

ib::CmMad rej(uint32_t local, uint32_t remote, uint16_t reason, uint8_t msg = ib::kMsgOther) {
  ib::CmRej r;
  r.local_comm_id = local;
  r.remote_comm_id = remote;
  r.reason = reason;
  r.message_rejected = msg;
  return mad_of(r);
}

ib::CmMad dreq(uint32_t local, uint32_t remote, uint32_t remote_qpn) {
  ib::CmDreq r;
  r.local_comm_id = local;
  r.remote_comm_id = remote;
  r.remote_qpn_eecn = remote_qpn;
  return mad_of(r);
}

ib::CmMad drep(uint32_t local, uint32_t remote) {
  ib::CmDrep r;
  r.local_comm_id = local;
  r.remote_comm_id = remote;
  return mad_of(r);
}

ib::CmMad rtu(uint32_t local, uint32_t remote) {
  ib::CmRtu r;
  r.local_comm_id = local;
  r.remote_comm_id = remote;
  return mad_of(r);
}

ib::CmMad mra(uint32_t local, uint32_t remote, uint8_t msg, uint8_t service_timeout) {
  ib::CmMra r;
  r.local_comm_id = local;
  r.remote_comm_id = remote;
  r.message_mraed = msg;
  r.service_timeout = service_timeout;
  return mad_of(r);
}

/// A well-formed rdma_cm REQ whose timers ask for the longest waits the fields allow.
ib::CmMad greedy_req(uint32_t local_id, uint16_t port, uint32_t src_ip, uint32_t dst_ip) {
  ib::CmReq r;
  r.local_comm_id = local_id;
  r.service_id = ib::rdma_tcp_service_id(port);
  r.local_ca_guid = 0x0200'5EFF'FE46'0000ull | local_id;
  r.local_qpn = (local_id * 7 + 0x40) & 0xFFFFFF;
  r.responder_resources = r.initiator_depth = 1;
  r.remote_cm_response_timeout = r.local_cm_response_timeout = 31;
  r.max_cm_retries = 15;
  r.starting_psn = local_id & 0xFFFFFF;
  r.retry_count = 7;
  r.rnr_retry_count = 7;
  r.pkey = 0xFFFF;
  r.path_mtu = 3;
  r.primary.local_lid = r.primary.remote_lid = 0xFFFF;
  r.primary.local_ack_timeout = 31;
  r.primary.hop_limit = 64;
  const ib::CmaHeader h = ib::CmaHeader::ipv4(src_ip, dst_ip, uint16_t(40000 + local_id % 20000));
  ib::encode_cma_header(h, r.private_data.data(), r.private_data.size());
  return mad_of(r, uint64_t(local_id) << 32 | 0xF100D);
}

/// Frames for a port's next RX bursts: the callback runs on the lcore that polls the port and
/// appends them to what the PMD returned, so they meet the port's classification, ARP and the
/// engine as any received frame does.
class Injector {
 public:
  ~Injector() { clear(); }
  bool attach(uint16_t port_id) {
    port_ = port_id;
    cb_ = rte_eth_add_rx_callback(port_id, 0, &Injector::on_rx, this);
    return cb_ != nullptr;
  }
  /// The callback may still be running once: call before the port's lcore stops.
  void detach() {
    if (cb_) rte_eth_remove_rx_callback(port_, 0, cb_);
    cb_ = nullptr;
  }
  /// Frees what never went out (before the port's mempool goes).
  void clear() {
    std::lock_guard lk(mu_);
    for (rte_mbuf* m : q_) rte_pktmbuf_free(m);
    q_.clear();
  }
  void push(rte_mbuf* m) {
    std::lock_guard lk(mu_);
    q_.push_back(m);
  }

 private:
  static uint16_t on_rx(uint16_t, uint16_t, rte_mbuf** pkts, uint16_t n, uint16_t max, void* self) {
    auto* me = static_cast<Injector*>(self);
    std::unique_lock lk(me->mu_, std::try_to_lock);  // never stall the poller on the test thread
    if (!lk) return n;
    while (n < max && !me->q_.empty()) {
      pkts[n++] = me->q_.front();
      me->q_.pop_front();
    }
    return n;
  }

  std::mutex mu_;
  std::deque<rte_mbuf*> q_;
  const rte_eth_rxtx_callback* cb_ = nullptr;
  uint16_t port_ = 0;
};

/// An end, and what the test injects into its port.
struct Node : CmNode {
  Injector in;
  uint64_t injected = 0;   ///< MADs injected into this node so far
  size_t most_conns = 0;   ///< the most connection records seen at a check
};

class CmHostileTest : public CmPairTest<Node> {
 protected:
  void SetUp() override {
    ndnic::testing::PairSpec spec;
    spec.name = "cmh";
    spec.ipv4 = {kIpA, kIpB};
    spec.mbufs = 4095;
    spec.lcores = {std::vector<unsigned>{1}, std::vector<unsigned>{2}};
    ASSERT_EQ(ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev}), "");
    for (Node* n : {&a, &b}) {
      ASSERT_TRUE(n->open());
      n->qp = new_qp(*n);
      ASSERT_NE(n->qp, nullptr);
      ASSERT_TRUE(n->in.attach(n->port.port_id()));
      for (size_t i = 0; i < kIpThird.size(); i++) announce(*n, third(i));
    }
  }

  void TearDown() override {
    release_nd();
    for (Node* n : {&a, &b}) {
      n->in.detach();
      n->cm.reset();
      if (registered_ == n) nd::unregister_adapter(&n->port);
      n->dev.close();
      n->in.clear();
      n->port.close();
    }
  }

  nic::Qp* new_qp(Node& n) {
    nic::QpCaps caps;
    caps.send_cq = n.scq;
    caps.recv_cq = n.rcq;
    caps.pd = n.pd;
    return n.dev.create_qp(caps);
  }

  /// `da`: the MADs A loses on their way out.
  void start_agents(Config ca = calm_config(), Config cb = calm_config(), DropTx da = {}) {
    a.cm = std::make_unique<Agent>(a.dev, a.port, std::move(ca), std::move(da));
    b.cm = std::make_unique<Agent>(b.dev, b.port, std::move(cb));
    ASSERT_TRUE(a.cm->start()) << a.cm->error();
    ASSERT_TRUE(b.cm->start()) << b.cm->error();
  }

  // ---- injection ------------------------------------------------------------------------

  /// An ARP request from `s` for `to`'s address: `to` learns the host as any neighbour.
  void announce(Node& to, const Source& s) {
    static constexpr rte_ether_addr kBroadcast = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
    const glue::ArpMessage msg{RTE_ARP_OP_REQUEST, s.mac, s.ip, rte_ether_addr{}, to.port.ipv4()};
    rte_mbuf* m = glue::arp_build(to.port.mempool(), s.mac, kBroadcast, msg);
    ASSERT_NE(m, nullptr);
    to.in.push(m);
  }

  /// `bytes` (a MAD) as a QP1 datagram from `s` to `to`.
  void inject_bytes(Node& to, const Source& s, const uint8_t* bytes) {
    wire::RocePacket p;
    std::memcpy(p.eth.dst, to.port.mac().addr_bytes, 6);
    std::memcpy(p.eth.src, s.mac.addr_bytes, 6);
    p.ip4.src = s.ip;
    p.ip4.dst = to.port.ipv4();
    p.udp.src_port = 0xC000;
    p.bth.opcode = wire::kUdSendOnly;
    p.bth.dest_qp = ib::kGsiQpn;
    p.deth.qkey = ib::kGsiQkey;
    p.deth.src_qp = ib::kGsiQpn;
    p.payload = bytes;
    p.payload_len = ib::kMadLen;
    std::vector<uint8_t> f(wire::frame_length(p));
    ASSERT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
    rte_mbuf* m = rte_pktmbuf_alloc(to.port.mempool());
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
    to.in.push(m);
    to.injected++;
  }

  void inject(Node& to, const Source& s, const ib::CmMad& mad) {
    std::array<uint8_t, ib::kMadLen> bytes{};
    ASSERT_EQ(ib::encode_cm_mad(mad, bytes.data(), bytes.size()), ib::CmError::kOk);
    inject_bytes(to, s, bytes.data());
  }

  /// Waits until `n`'s agent has taken in `count` MADs (counted under the lock each is handled
  /// under, so each one is through).
  static bool handled(Node& n, uint64_t count, int ms = kWaitMs) {
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (n.cm->counters().mads_received < count)
      if (Clock::now() > end) return false;
      else std::this_thread::sleep_for(200us);
    return true;
  }

  /// Injects one MAD and waits until the agent has handled it.
  void forge(Node& to, const Source& s, const ib::CmMad& mad) {
    const uint64_t before = to.cm->counters().mads_received;
    ASSERT_NO_FATAL_FAILURE(inject(to, s, mad));
    ASSERT_TRUE(handled(to, before + 1)) << "the forged MAD never reached the agent";
  }

  static void note_size(Node& n) { n.most_conns = std::max(n.most_conns, n.cm->connection_count()); }

  Source peer_of(const Node& n) const {
    const Node& p = &n == &a ? b : a;
    return {p.port.ipv4(), p.port.mac()};
  }

  // ---- a connection and traffic over it -------------------------------------------------

  void traffic() { CmPairTest::traffic(4000, 3000); }

  /// Both ends still established, told nothing but that, and carrying data; then a real
  /// disconnect still works.
  void expect_intact_then_disconnect(ConnId ida, ConnId idb) {
    EXPECT_FALSE(a.ev.wait(EventKind::kDisconnected, 200)) << a.ev.kinds();
    EXPECT_FALSE(b.ev.wait(EventKind::kDisconnected, 0)) << b.ev.kinds();
    EXPECT_EQ(a.ev.kinds(), "established ");
    EXPECT_EQ(b.ev.kinds(), "established ");
    EXPECT_EQ(a.cm->state(ida), State::kEstablished);
    EXPECT_EQ(b.cm->state(idb), State::kEstablished);
    EXPECT_EQ(a.qp->state(), nic::QpState::kRts);
    EXPECT_EQ(b.qp->state(), nic::QpState::kRts);
    ASSERT_NO_FATAL_FAILURE(traffic());
    ASSERT_TRUE(a.cm->disconnect(ida));
    EXPECT_TRUE(a.ev.wait(EventKind::kDisconnectDone)) << a.ev.kinds();
    EXPECT_TRUE(b.ev.wait(EventKind::kDisconnected)) << b.ev.kinds();
  }

  // ---- the ND side (register_adapter owns the agent) ------------------------------------

  INDAdapter* open_nd(Node& n, const Config& cfg) {
    if (!nd::register_adapter(&n.dev, &n.port, &cfg)) return nullptr;
    registered_ = &n;
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(n.port.ipv4());
    INDAdapter* ad = nullptr;
    if (NdOpenV1Adapter(reinterpret_cast<const sockaddr*>(&at), sizeof at, &ad) != ND_SUCCESS) return nullptr;
    nd_objects_.push_back(ad);
    return ad;
  }
  void keep(IUnknown* o) { nd_objects_.push_back(o); }
  void release_nd() {
    for (auto it = nd_objects_.rbegin(); it != nd_objects_.rend(); ++it) (*it)->Release();
    nd_objects_.clear();
  }

  /// Events of connections a test starts beside a.ev and b.ev: an agent delivers events until
  /// TearDown stops it, after the test body's locals are gone.
  std::deque<CmEvents> more_events_;
  Node* registered_ = nullptr;
  std::vector<IUnknown*> nd_objects_;  ///< released in reverse, adapter last
};

// ---- forged MADs against an established connection ----------------------------------------

TEST_F(CmHostileTest, ForgedMadsOfEveryKindLeaveTheConnectionUp) {
  ASSERT_NO_FATAL_FAILURE(start_agents());
  ConnId ida, idb;
  ASSERT_NO_FATAL_FAILURE(establish(&ida, &idb));
  const uint32_t qpn_a = a.qp->qpn(), qpn_b = b.qp->qpn();
  // A third host that saw both comm IDs (and the QPNs) tries each message at each end.
  for (auto [to, mine, theirs, my_qpn] : {std::tuple{&b, idb, ida, qpn_b}, std::tuple{&a, ida, idb, qpn_a}}) {
    const Source h = third(to == &a ? 1 : 2);
    for (const ib::CmMad& m :
         {rej(theirs, mine, ib::kRejConsumerDefined), rej(0, mine, ib::kRejStaleConn),
          rej(theirs, 0, ib::kRejTimeout, ib::kMsgReq), dreq(theirs, mine, my_qpn), drep(theirs, mine),
          rtu(theirs, mine), mra(theirs, mine, ib::kMsgRep, 31), mra(theirs, mine, ib::kMsgReq, 31)})
      ASSERT_NO_FATAL_FAILURE(forge(*to, h, m));
    // From the peer's own address: a REJ that names no comm ID of the peer's (what an
    // unanswered REQ or REP gets, so a reflection off any host that answers one), and a DREQ
    // for another QP.
    const Source peer = peer_of(*to);
    ASSERT_NO_FATAL_FAILURE(forge(*to, peer, rej(0, mine, ib::kRejInvalidCommId, ib::kMsgRep)));
    ASSERT_NO_FATAL_FAILURE(forge(*to, peer, rej(0, mine, ib::kRejInvalidServiceId, ib::kMsgReq)));
    ASSERT_NO_FATAL_FAILURE(forge(*to, peer, dreq(theirs, mine, my_qpn ^ 0x5)));
  }
  expect_intact_then_disconnect(ida, idb);
}

/// A message that ends a connection when it is genuine, forged at both ends.
enum class Forgery { kRejThirdHost, kRejNoPeerIdThirdHost, kRejNoPeerIdFromPeer, kDreqThirdHost, kDreqWrongQpn };

class ForgedEndTest : public CmHostileTest, public ::testing::WithParamInterface<Forgery> {};

TEST_P(ForgedEndTest, DoesNotEndTheConnection) {
  ASSERT_NO_FATAL_FAILURE(start_agents());
  ConnId ida, idb;
  ASSERT_NO_FATAL_FAILURE(establish(&ida, &idb));
  for (auto [to, mine, theirs] : {std::tuple{&b, idb, ida}, std::tuple{&a, ida, idb}}) {
    const uint32_t my_qpn = to->qp->qpn();
    const Source h = third(0), peer = peer_of(*to);
    switch (GetParam()) {
      case Forgery::kRejThirdHost:
        ASSERT_NO_FATAL_FAILURE(forge(*to, h, rej(theirs, mine, ib::kRejConsumerDefined)));
        break;
      case Forgery::kRejNoPeerIdThirdHost:
        ASSERT_NO_FATAL_FAILURE(forge(*to, h, rej(0, mine, ib::kRejConsumerDefined)));
        break;
      case Forgery::kRejNoPeerIdFromPeer:
        ASSERT_NO_FATAL_FAILURE(forge(*to, peer, rej(0, mine, ib::kRejInvalidCommId, ib::kMsgRep)));
        break;
      case Forgery::kDreqThirdHost:
        ASSERT_NO_FATAL_FAILURE(forge(*to, h, dreq(theirs, mine, my_qpn)));
        break;
      case Forgery::kDreqWrongQpn:
        ASSERT_NO_FATAL_FAILURE(forge(*to, peer, dreq(theirs, mine, (my_qpn + 1) & 0xFFFFFF)));
        break;
    }
  }
  expect_intact_then_disconnect(ida, idb);
}

INSTANTIATE_TEST_SUITE_P(Each, ForgedEndTest,
                         ::testing::Values(Forgery::kRejThirdHost, Forgery::kRejNoPeerIdThirdHost,
                                           Forgery::kRejNoPeerIdFromPeer, Forgery::kDreqThirdHost,
                                           Forgery::kDreqWrongQpn),
                         [](const auto& info) {
                           switch (info.param) {
                             case Forgery::kRejThirdHost: return "RejFromAThirdHost";
                             case Forgery::kRejNoPeerIdThirdHost: return "RejWithoutThePeersIdFromAThirdHost";
                             case Forgery::kRejNoPeerIdFromPeer: return "RejWithoutThePeersIdFromThePeer";
                             case Forgery::kDreqThirdHost: return "DreqFromAThirdHost";
                             case Forgery::kDreqWrongQpn: return "DreqForAnotherQpFromThePeer";
                           }
                           return "?";
                         });

// ---- forged MADs in the states where the other messages matter ---------------------------------

TEST_F(CmHostileTest, ForgedRtuDoesNotCompleteAnAccept) {
  ASSERT_NO_FATAL_FAILURE(start_agents());
  ConnId ida, idb;
  ASSERT_NO_FATAL_FAILURE(establish(&ida, &idb, /*defer_rtu=*/true));
  ASSERT_TRUE(a.ev.wait(EventKind::kConnectResponse)) << a.ev.kinds();
  // B waits for A's RTU; a third host that saw the REQ and REP sends one first.
  ASSERT_NO_FATAL_FAILURE(forge(b, third(0), rtu(ida, idb)));
  EXPECT_FALSE(b.ev.wait(EventKind::kEstablished, 200)) << b.ev.kinds();
  EXPECT_EQ(b.cm->state(idb), State::kRepSent);
  ASSERT_TRUE(a.cm->complete_connect(ida));
  ASSERT_TRUE(b.ev.wait(EventKind::kEstablished)) << b.ev.kinds();
  ASSERT_NO_FATAL_FAILURE(traffic());
}

TEST_F(CmHostileTest, ForgedDrepDoesNotEndADisconnect) {
  // A's DREQs never reach B: only a DREP from B could end A's disconnect before its retries.
  ASSERT_NO_FATAL_FAILURE(
      start_agents(calm_config(), calm_config(), [](const ib::CmMad& m) { return m.hdr.attr_id == ib::kAttrDreq; }));
  ConnId ida, idb;
  ASSERT_NO_FATAL_FAILURE(establish(&ida, &idb));
  ASSERT_TRUE(a.cm->disconnect(ida));
  ASSERT_NO_FATAL_FAILURE(forge(a, third(1), drep(idb, ida)));
  EXPECT_FALSE(a.ev.wait(EventKind::kDisconnectDone, 200)) << a.ev.kinds();
  EXPECT_EQ(a.cm->state(ida), State::kDreqSent);
  EXPECT_EQ(b.cm->state(idb), State::kEstablished) << "B never heard of it";
}

TEST_F(CmHostileTest, ForgedMraDoesNotStallAConnect) {
  // Nobody answers A's REQ (B runs no CM). An MRA asking for 2^31 * 4 us (2.3 hours) would
  // hold A's connect that long; A must give up on its own schedule (3 tries of about 1 s).
  Config ca = calm_config();
  ca.max_cm_retries = 2;
  a.cm = std::make_unique<Agent>(a.dev, a.port, std::move(ca));
  ASSERT_TRUE(a.cm->start());
  ConnectParams p = to_b(7174);
  const ConnId ida = a.cm->connect(p, a.ev.cb());
  ASSERT_NE(ida, 0u);
  ASSERT_NO_FATAL_FAILURE(forge(a, third(2), mra(0x1234, ida, ib::kMsgReq, 31)));
  EXPECT_TRUE(a.ev.wait(EventKind::kTimeout)) << a.ev.kinds() << state_name(a.cm->state(ida));
}

// ---- requests nobody takes -------------------------------------------------------------------

TEST_F(CmHostileTest, BacklogFullDropsTheReqAndItsRetryGetsIn) {
  ASSERT_NO_FATAL_FAILURE(start_agents());
  const uint16_t port = b.cm->listen(0, {}, /*backlog=*/1);
  ASSERT_NE(port, 0);
  nic::Qp* second = new_qp(a);
  ASSERT_NE(second, nullptr);
  CmEvents& ev2 = more_events_.emplace_back();  // outlives the agents that call it
  ConnectParams p = to_b(port);
  const uint64_t base = b.cm->counters().mads_received;
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  ASSERT_TRUE(handled(b, base + 1));
  p.qp = second;
  ASSERT_NE(a.cm->connect(p, ev2.cb()), 0u);
  ASSERT_TRUE(handled(b, base + 2));
  EXPECT_EQ(b.cm->pending_requests(port), 1u);
  EXPECT_GE(b.cm->counters().requests_dropped, 1u);
  EXPECT_EQ(b.cm->counters().rejects_sent, 0u) << "dropped, as rdma_cm does, not refused";
  // The first is taken: the second's REQ retry (1 s on) finds room.
  Request r;
  ASSERT_TRUE(b.cm->get_request(port, &r, 0));
  ASSERT_TRUE(b.cm->get_request(port, &r, kWaitMs)) << "the second REQ's retry was not queued";
  EXPECT_EQ(r.peer_qpn, second->qpn());
  EXPECT_GE(a.cm->counters().retransmits, 1u);
}

TEST_F(CmHostileTest, RequestNobodyAnswersIsRefusedWithTimeout) {
  Config cb = calm_config();
  cb.max_request_wait_ms = 300;
  ASSERT_NO_FATAL_FAILURE(start_agents(calm_config(), std::move(cb)));
  const uint16_t port = b.cm->listen(0);
  ConnectParams p = to_b(port);
  // Queued and never taken.
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  Event e;
  ASSERT_TRUE(a.ev.wait(EventKind::kRefused, kWaitMs, &e)) << a.ev.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejTimeout);
  EXPECT_EQ(b.cm->pending_requests(port), 0u);
  // Taken and never answered: a late accept fails rather than answer a peer that was refused.
  nic::Qp* second = new_qp(a);
  ASSERT_NE(second, nullptr);
  CmEvents& ev2 = more_events_.emplace_back();  // outlives the agents that call it
  p.qp = second;
  ASSERT_NE(a.cm->connect(p, ev2.cb()), 0u);
  Request r;
  ASSERT_TRUE(b.cm->get_request(port, &r, kWaitMs));
  ASSERT_TRUE(ev2.wait(EventKind::kRefused, kWaitMs, &e)) << ev2.kinds();
  EXPECT_EQ(e.reject_reason, ib::kRejTimeout);
  AcceptParams ap;
  ap.qp = b.qp;
  EXPECT_FALSE(b.cm->accept(r.conn, ap, b.ev.cb()));
  EXPECT_EQ(b.cm->counters().requests_expired, 2u);
}

TEST_F(CmHostileTest, ReqFloodStaysBoundedAndALaterConnectSucceeds) {
  constexpr size_t kBacklog = 8;
  constexpr uint32_t kCap = 48;
  constexpr int kFlood = 3000;
  Config cb = calm_config();
  cb.max_connections = kCap;
  cb.max_request_wait_ms = 1500;
  ASSERT_NO_FATAL_FAILURE(start_agents(calm_config(), std::move(cb)));
  const uint16_t limited = b.cm->listen(0, {}, kBacklog);
  const uint16_t unlimited = b.cm->listen(0);  // ND's Backlog 0: only the agent's cap holds
  ASSERT_TRUE(limited && unlimited);
  const uint64_t base = b.cm->counters().mads_received;
  for (int i = 0; i < kFlood; i++) {
    const Source s = third(size_t(i));
    ASSERT_NO_FATAL_FAILURE(inject(b, s, greedy_req(0x10000 + i, i % 2 ? limited : unlimited, s.ip, kIpB)));
    if (i % kInjectWindow != kInjectWindow - 1) continue;
    ASSERT_TRUE(handled(b, base + i + 1));
    note_size(b);
    ASSERT_LE(b.cm->pending_requests(limited), kBacklog);
  }
  ASSERT_TRUE(handled(b, base + kFlood));
  note_size(b);
  EXPECT_LE(b.most_conns, kCap);
  EXPECT_LE(b.cm->pending_requests(limited), kBacklog);
  EXPECT_GE(b.cm->counters().requests_dropped, uint64_t(kFlood / 2));
  // The flood is over: what it left queued expires.
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while ((b.cm->pending_requests(limited) || b.cm->pending_requests(unlimited)) && Clock::now() < end)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(b.cm->pending_requests(limited), 0u);
  EXPECT_EQ(b.cm->pending_requests(unlimited), 0u);
  EXPECT_GE(b.cm->counters().requests_expired, kBacklog);
  // A real peer gets in and carries data.
  ConnectParams p = to_b(limited);
  ASSERT_NE(a.cm->connect(p, a.ev.cb()), 0u);
  ASSERT_NO_FATAL_FAILURE(accept_on_b(limited));
  ASSERT_NO_FATAL_FAILURE(traffic());
  EXPECT_LE(b.cm->connection_count(), kCap);
}

// ---- a seeded storm of random MADs ----------------------------------------------------------

/// Random CM MADs for one end of an established connection: any type, IDs drawn from the
/// connection's own, zero, recent REQs' and random ones, every field random within its width.
/// From the peer's own address it never sends the one message that is genuinely the peer's
/// (a REJ or DREQ carrying both comm IDs, and the DREQ our QPN): that one may end it.
class MadStorm {
 public:
  struct View {
    uint32_t mine, theirs, my_qpn;
    uint32_t my_ip, from_ip;
    std::vector<uint16_t> ports;  ///< where this end listens
    bool from_peer;
  };

  explicit MadStorm(uint64_t seed) : rng_(seed) {}

  /// A MAD (encoded) in `out`; false: raw noise instead of a message.
  void next(const View& v, std::array<uint8_t, ib::kMadLen>* out) {
    if (below(20) == 0) {  // noise, now and then with a valid CM header in front
      for (uint8_t& x : *out) x = uint8_t(rng_());
      if (below(2)) {  // base version, class, class version, method; attribute ID at 16
        const uint8_t cm_send[] = {ib::kMadBaseVersion, ib::kMgmtClassCm, ib::kCmClassVersion, ib::kMethodSend};
        std::memcpy(out->data(), cm_send, sizeof cm_send);
        (*out)[16] = 0;
        (*out)[17] = uint8_t(ib::kAttrReq + below(8));
      }
      return;
    }
    ib::CmMad m = message(v);
    m.hdr.tid = rng_();
    ASSERT_EQ(ib::encode_cm_mad(m, out->data(), out->size()), ib::CmError::kOk);
  }

 private:
  uint32_t below(uint32_t n) { return uint32_t(rng_() % n); }
  uint32_t bits(unsigned n) { return uint32_t(rng_() & ((1ull << n) - 1)); }
  uint32_t id(const View& v) {
    switch (below(6)) {
      case 0: return v.mine;
      case 1: return v.theirs;
      case 2: return 0;
      case 3: return recent_.empty() ? 0 : recent_[below(uint32_t(recent_.size()))];
      default: return bits(32);
    }
  }
  template <size_t N>
  void fill(std::array<uint8_t, N>* a) {
    for (uint8_t& x : *a) x = uint8_t(rng_());
  }

  ib::CmMad message(const View& v) {
    switch (below(7)) {
      case 0: return req(v);
      case 1: {
        ib::CmRep r;
        r.local_comm_id = id(v), r.remote_comm_id = id(v);
        r.local_qpn = bits(24), r.starting_psn = bits(24), r.local_qkey = bits(32);
        r.responder_resources = uint8_t(bits(8)), r.initiator_depth = uint8_t(bits(8));
        r.target_ack_delay = uint8_t(bits(5)), r.rnr_retry_count = uint8_t(bits(3));
        r.local_ca_guid = rng_();
        fill(&r.private_data);
        return mad_of(r);
      }
      case 2: return rtu(id(v), id(v));
      case 3: {
        ib::CmRej r;
        r.local_comm_id = id(v), r.remote_comm_id = id(v);
        r.message_rejected = uint8_t(below(3));
        const uint16_t reasons[] = {ib::kRejTimeout, ib::kRejConsumerDefined, ib::kRejStaleConn,
                                    ib::kRejInvalidCommId, uint16_t(bits(6))};
        r.reason = reasons[below(5)];
        r.reject_info_length = uint8_t(below(2) ? 8 : below(73));
        fill(&r.ari);
        fill(&r.private_data);
        if (v.from_peer && r.local_comm_id == v.theirs && r.remote_comm_id == v.mine) r.local_comm_id ^= 0x100;
        return mad_of(r);
      }
      case 4: return mra(id(v), id(v), uint8_t(below(3)), uint8_t(bits(5)));
      case 5: {
        ib::CmMad m = dreq(id(v), id(v), below(2) ? v.my_qpn : bits(24));
        auto& d = std::get<ib::CmDreq>(m.msg);
        if (v.from_peer && d.local_comm_id == v.theirs && d.remote_comm_id == v.mine && d.remote_qpn_eecn == v.my_qpn)
          d.remote_qpn_eecn ^= 1;
        return m;
      }
      default: return drep(id(v), id(v));
    }
  }

  ib::CmMad req(const View& v) {
    ib::CmReq r;
    r.local_comm_id = below(4) ? bits(32) : id(v);
    recent_.push_back(r.local_comm_id);
    if (recent_.size() > 32) recent_.erase(recent_.begin());
    const uint16_t port = v.ports.empty() || below(4) == 0 ? uint16_t(bits(16)) : v.ports[below(uint32_t(v.ports.size()))];
    r.service_id = below(8) ? ib::rdma_tcp_service_id(port) : rng_();
    r.local_ca_guid = rng_();
    r.local_qpn = bits(24);
    r.responder_resources = uint8_t(bits(8)), r.initiator_depth = uint8_t(bits(8));
    r.remote_cm_response_timeout = uint8_t(bits(5)), r.local_cm_response_timeout = uint8_t(bits(5));
    r.transport_service_type = uint8_t(below(4) ? 0 : bits(2));
    r.starting_psn = bits(24);
    r.retry_count = uint8_t(bits(3)), r.rnr_retry_count = uint8_t(bits(3));
    r.max_cm_retries = uint8_t(bits(4));
    r.pkey = 0xFFFF;
    r.path_mtu = uint8_t(below(4) ? 3 : bits(4));
    r.primary.local_ack_timeout = uint8_t(bits(5));
    r.primary.flow_label = bits(20);
    if (below(4)) {
      const ib::CmaHeader h = ib::CmaHeader::ipv4(v.from_ip, v.my_ip, uint16_t(bits(16)));
      ib::encode_cma_header(h, r.private_data.data(), r.private_data.size());
      for (size_t i = ib::kCmaHdrLen; i < r.private_data.size(); i++) r.private_data[i] = uint8_t(rng_());
    } else {
      fill(&r.private_data);
    }
    return mad_of(r);
  }

  std::mt19937_64 rng_;
  std::vector<uint32_t> recent_;
};

TEST_F(CmHostileTest, RandomMadsKeepStateBoundedAndTheConnectionUp) {
  constexpr uint64_t kSeed = 0x5EEDCA11;
  constexpr int kMads = 3000;
  constexpr uint32_t kCap = 24;  // below what the storm's REQs would queue: the cap is hit
  constexpr size_t kBacklog = 4;
  Config cfg = calm_config();
  cfg.max_connections = kCap;
  cfg.max_request_wait_ms = 1000;
  ASSERT_NO_FATAL_FAILURE(start_agents(cfg, cfg));
  ConnId ida, idb;
  ASSERT_NO_FATAL_FAILURE(establish(&ida, &idb));
  const uint16_t established_on = b.cm->local_port(idb);
  const uint16_t limited = b.cm->listen(0, {}, kBacklog);
  ASSERT_NE(limited, 0);
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  MadStorm storm(kSeed);
  std::mt19937_64 pick(kSeed + 1);
  const uint64_t base_a = a.cm->counters().mads_received, base_b = b.cm->counters().mads_received;
  size_t most_pending = 0;
  for (int i = 0; i < kMads; i++) {
    const bool to_b = pick() & 1;
    Node& to = to_b ? b : a;
    const bool from_peer = pick() % 5 == 0;
    const Source s = from_peer ? peer_of(to) : third(size_t(pick()));
    MadStorm::View v{to_b ? idb : ida, to_b ? ida : idb, to.qp->qpn(), to.port.ipv4(), s.ip, {}, from_peer};
    if (to_b) v.ports = {established_on, limited};
    std::array<uint8_t, ib::kMadLen> bytes{};
    ASSERT_NO_FATAL_FAILURE(storm.next(v, &bytes));
    ASSERT_NO_FATAL_FAILURE(inject_bytes(to, s, bytes.data()));
    if (i % kInjectWindow != kInjectWindow - 1) continue;
    // Answers between A and B count too, so these only pace the storm; a MAD QP1 had no
    // receive for is no failure here.
    handled(a, base_a + a.injected, 2000);
    handled(b, base_b + b.injected, 2000);
    note_size(a);
    note_size(b);
    most_pending = std::max(most_pending, b.cm->pending_requests(limited));
  }
  handled(a, base_a + a.injected);
  handled(b, base_b + b.injected);
  note_size(a);
  note_size(b);
  EXPECT_LE(a.most_conns, kCap);
  EXPECT_LE(b.most_conns, kCap);
  EXPECT_LE(most_pending, kBacklog);
  // The storm did reach both agents (a MAD QP1 had no receive for may not have).
  EXPECT_GE(a.cm->counters().mads_received - base_a, a.injected * 9 / 10);
  EXPECT_GE(b.cm->counters().mads_received - base_b, b.injected * 9 / 10);
  expect_intact_then_disconnect(ida, idb);
}

// ---- through ND -----------------------------------------------------------------------------

TEST_F(CmHostileTest, NdConnectToTheUnspecifiedAddressIsBadNetworkName) {
  INDAdapter* ad = open_nd(b, calm_config());
  ASSERT_NE(ad, nullptr);
  INDCompletionQueue* cq = nullptr;
  ASSERT_EQ(ad->CreateCompletionQueue(16, &cq), ND_SUCCESS);
  keep(cq);
  INDConnector* conn = nullptr;
  ASSERT_EQ(ad->CreateConnector(&conn), ND_SUCCESS);
  keep(conn);
  INDEndpoint* ep = nullptr;
  ASSERT_EQ(conn->CreateEndpoint(cq, cq, 4, 4, 1, 1, 1, 1, nullptr, &ep), ND_SUCCESS);
  keep(ep);
  OVERLAPPED ov{};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(7174);
  // The SDK's ndmemorytest (NdInvalidIP) expects STATUS_BAD_NETWORK_NAME for 0.0.0.0.
  EXPECT_EQ(conn->Connect(ep, reinterpret_cast<const sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &ov),
            nd::STATUS_BAD_NETWORK_NAME);
  to.sin_addr.s_addr = htonl(INADDR_BROADCAST);
  EXPECT_EQ(conn->Connect(ep, reinterpret_cast<const sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &ov),
            ND_INVALID_ADDRESS);
}

TEST_F(CmHostileTest, NdListenBacklogBoundsTheQueuedRequests) {
  a.cm = std::make_unique<Agent>(a.dev, a.port, calm_config());
  ASSERT_TRUE(a.cm->start());
  INDAdapter* ad = open_nd(b, calm_config());
  ASSERT_NE(ad, nullptr);
  INDListen* l = nullptr;
  USHORT assigned = 0;
  ASSERT_EQ(ad->Listen(2, 0, 0, &assigned, &l), ND_SUCCESS);
  keep(l);
  Agent* agent = static_cast<nd::NdAdapter*>(ad)->cm();
  std::vector<CmEvents*> evs;  // in the fixture: the agents may still call them after the test
  for (int i = 0; i < 4; i++) evs.push_back(&more_events_.emplace_back());
  const uint64_t before = agent->counters().mads_received;
  for (size_t i = 0; i < evs.size(); i++) {
    ConnectParams p;
    p.qp = i == 0 ? a.qp : new_qp(a);
    ASSERT_NE(p.qp, nullptr);
    p.dest_ipv4 = kIpB;
    p.dest_port = ntohs(assigned);
    ASSERT_NE(a.cm->connect(p, evs[i]->cb()), 0u);
  }
  const auto end = Clock::now() + std::chrono::milliseconds(kWaitMs);
  while (agent->counters().mads_received < before + evs.size() && Clock::now() < end)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(agent->pending_requests(ntohs(assigned)), 2u);
  EXPECT_GE(agent->counters().requests_dropped, 2u);  // REQ retries are dropped too
}

}  // namespace
}  // namespace ndnic::cm::testing
