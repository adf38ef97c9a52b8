// ND v1 connection management end to end: INDListen / INDConnector over the CM agent, the CM
// MADs crossing a net_ring pair between two ndnic devices, each device on its own worker lcore.
// The scenarios are those of Microsoft's NetworkDirect SDK provider tests (ndconn, ndmpic,
// ndmemorytest) that the Nd suite leaves out. Status codes follow ../shared/notes/nd-v1-facts.md:
// the v1 seed pages first (they say nothing about connectors), then what the SDK's tests
// expect, then ndnic's own choice; each test names its source.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cm/cm.h"
#include "ndnic/nd.h"
#include "nd_frontend/status.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/drive_mode.h"
#include "tests/fixtures/node_pair.h"

namespace {

using namespace ndnic;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kIpA = 0xC6124701;       // 198.18.71.1
constexpr uint32_t kIpB = 0xC6124702;
constexpr uint32_t kIpNobody = 0xC6124763;  // on the wire, but no host answers ARP for it
constexpr int kWaitMs = 8000;               // bounded waits: a broken test fails, never hangs
constexpr SIZE_T kEntries = 8;

/// CM timers of 2 * 1 ms + 2^(t-8) ms per try. The default (t = 18: 1 s per try, 8 retries)
/// recovers a MAD lost on a loaded machine within a second and gives an application 9 s to
/// answer a request; tests of a timeout change it.
cm::Config cm_config(uint8_t retries = 8, uint8_t response_timeout = 18) {
  cm::Config c;
  c.cm_response_timeout = response_timeout;
  c.packet_life_time = 8;
  c.max_cm_retries = retries;
  c.ack_timeout = 16;  // RC transport timer 268 ms: 7 retries ride out a stalled lcore
  return c;
}

sockaddr_in address(uint32_t ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip);
  sa.sin_port = htons(port);
  return sa;
}

const sockaddr* sa(const sockaddr_in& s) { return reinterpret_cast<const sockaddr*>(&s); }

/// GetOverlappedResult, waiting at most ms: ND_PENDING if still pending then.
HRESULT wait(INDOverlapped* o, OVERLAPPED* ov, int ms = kWaitMs) {
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    SIZE_T bytes;
    const HRESULT hr = o->GetOverlappedResult(ov, &bytes, FALSE);
    if (hr != ND_PENDING || Clock::now() > end) return hr;
    std::this_thread::sleep_for(100us);
  }
}

/// Collects results from `cq` until `n` arrived or ms passed.
std::vector<ND_RESULT*> results(INDCompletionQueue* cq, size_t n, int ms = kWaitMs) {
  std::vector<ND_RESULT*> out;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (out.size() < n && Clock::now() < end) {
    ND_RESULT* r[16];
    const SIZE_T k = cq->GetResults(r, 16);
    out.insert(out.end(), r, r + k);
    if (!k) std::this_thread::sleep_for(50us);
  }
  return out;
}

/// The adapter, CQ, connector, endpoint and registered buffer (NdEnd) on a device and its port.
struct Side : ndnic::testing::NdEnd {
  glue::Port port;
  nic::Device dev;
  bool registered = false;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 16);
  std::vector<IUnknown*> extra;  ///< connectors, endpoints, listeners a test made: released first
};

class NdConn : public ::testing::Test {
 protected:
  void SetUp() override {
    ndnic::testing::PairSpec spec;
    spec.name = "ndc";
    spec.ipv4 = {kIpA, kIpB};
    unsigned lcore = 1;
    spec.lcores[0] = ndnic::testing::device_lcores(&lcore);
    spec.lcores[1] = ndnic::testing::device_lcores(&lcore);
    ASSERT_EQ(ndnic::testing::open_pair(spec, {&a.port, &b.port}, {&a.dev, &b.dev}), "");
  }

  void TearDown() override {
    for (Side* s : {&a, &b}) {
      for (auto it = s->extra.rbegin(); it != s->extra.rend(); ++it) (*it)->Release();
      ndnic::testing::release_nd(*s);
      if (s->registered) nd::unregister_adapter(&s->port);
    }
    ndnic::testing::close_pair({&a.port, &b.port}, {&a.dev, &b.dev});
  }

  /// Starts the side's CM agent and opens its adapter with a CQ, a connector, an endpoint on
  /// that CQ (both directions) and its buffer registered.
  void up(Side& s, const cm::Config& cm = cm_config()) {
    ASSERT_TRUE(nd::register_adapter(&s.dev, &s.port, &cm));
    s.registered = true;
    ndnic::testing::NdSpec nd;
    nd.depth = kEntries;
    nd.sge = 2;
    ASSERT_EQ(ndnic::testing::open_nd(s.port, s.buf, nd, &s), "");
  }
  void up_both() {
    ASSERT_NO_FATAL_FAILURE(up(a));
    ASSERT_NO_FATAL_FAILURE(up(b));
  }

  /// A further connector with its endpoint on the side's CQ; released at teardown.
  void fresh(Side& s, INDConnector** c, INDEndpoint** ep) {
    ASSERT_EQ(s.adapter->CreateConnector(c), ND_SUCCESS);
    s.extra.push_back(*c);
    ASSERT_EQ((*c)->CreateEndpoint(s.cq, s.cq, kEntries, kEntries, 2, 2, 4, 4, nullptr, ep), ND_SUCCESS);
    s.extra.push_back(*ep);
  }

  INDListen* listen(uint16_t port) {
    INDListen* l = nullptr;
    USHORT assigned = 0;
    EXPECT_EQ(b.adapter->Listen(0, 0, htons(port), &assigned, &l), ND_SUCCESS);
    if (l) b.extra.push_back(l);
    EXPECT_EQ(ntohs(assigned), port);
    return l;
  }

  /// a.conn/a.ep connect to b.conn/b.ep through a listener on `port`, no private data.
  void establish(uint16_t port) {
    INDListen* l = listen(port);
    ASSERT_NE(l, nullptr);
    OVERLAPPED &ovr = ov(), &ovc = ov();
    ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
    const sockaddr_in to = address(kIpB, port);
    ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
    ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(accept_and_complete(&ovc));
  }

  /// One Send from `from` into a receive posted on `to`: both complete with `len` bytes.
  void send(Side& from, INDEndpoint* from_ep, Side& to, INDEndpoint* to_ep, size_t len = 100) {
    ND_RESULT rr{}, rs{};
    ND_SGE in = sge(to, 8192, len), out = sge(from, 0, len);
    for (size_t i = 0; i < len; i++) from.buf[i] = uint8_t(i * 5 + len);
    ASSERT_EQ(to_ep->Receive(&rr, &in, 1), ND_SUCCESS);
    ASSERT_EQ(from_ep->Send(&rs, &out, 1, 0), ND_SUCCESS);
    ASSERT_EQ(results(from.cq, 1).size(), 1u);
    ASSERT_EQ(results(to.cq, 1).size(), 1u);
    EXPECT_EQ(rs.Status, ND_SUCCESS);
    EXPECT_EQ(rr.Status, ND_SUCCESS);
    EXPECT_EQ(rr.BytesTransferred, len);
    EXPECT_EQ(0, std::memcmp(from.buf.data(), to.buf.data() + 8192, len));
  }

  ND_SGE sge(Side& s, size_t off, size_t len) { return ND_SGE{s.buf.data() + off, len, s.mr}; }

  static size_t live_qps(nic::Device& d) { return d.qp_count(); }

  /// A zeroed OVERLAPPED that lives as long as the fixture: a test failing with a request still
  /// pending returns before teardown releases the connector, which completes it (canceled).
  OVERLAPPED& ov() { return ovs_.emplace_back(); }

  /// B accepts the request it has taken, A's pending Connect (`ovc`) completes, and A
  /// completes the connection: both ends established.
  void accept_and_complete(OVERLAPPED* ovc) {
    OVERLAPPED &ova = ov(), &ovcc = ov();
    ASSERT_EQ(b.conn->Accept(b.ep, nullptr, 0, &ova), ND_PENDING);
    ASSERT_EQ(wait(a.conn, ovc), ND_SUCCESS);
    ASSERT_EQ(a.conn->CompleteConnect(&ovcc), ND_PENDING);
    ASSERT_EQ(wait(a.conn, &ovcc), ND_SUCCESS);
    ASSERT_EQ(wait(b.conn, &ova), ND_SUCCESS);
  }

  Side a, b;
  std::deque<OVERLAPPED> ovs_;
};

// G1 (ndconn 5, ndmpic 9): the SDK expects ND_CANCELED for the canceled GetConnectionRequest.
TEST_F(NdConn, ListenerCancelCompletesGetConnectionRequestCanceled) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen* l = listen(7100);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  EXPECT_EQ(wait(l, &ovr, 50), ND_PENDING) << "no request yet";
  ASSERT_EQ(l->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(wait(l, &ovr), ND_CANCELED);
  // The canceled wait took nothing: the next request goes to the next GetConnectionRequest.
  OVERLAPPED &ovc = ov(), &ovr2 = ov();
  const sockaddr_in to = address(kIpB, 7100);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr2), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr2), ND_SUCCESS);
  EXPECT_EQ(wait(l, &ovr, 0), ND_CANCELED) << "the canceled request stays canceled";
  ASSERT_NO_FATAL_FAILURE(accept_and_complete(&ovc));
  send(a, a.ep, b, b.ep);
}

// G2 (ndconn 4, ndmpic 9): the SDK expects ND_CANCELED for a canceled NotifyDisconnect and
// tolerates it for a canceled Connect. A canceled Connect abandons the attempt (a REJ to the
// peer), and the connector may Connect again: ndnic's choice, as closing the request would.
TEST_F(NdConn, ConnectorCancelCompletesNotifyDisconnectAndConnectCanceled) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  ASSERT_NO_FATAL_FAILURE(establish(7110));
  OVERLAPPED &ovn = ov();
  ASSERT_EQ(b.conn->NotifyDisconnect(&ovn), ND_PENDING);
  ASSERT_EQ(b.conn->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(wait(b.conn, &ovn), ND_CANCELED);
  send(a, a.ep, b, b.ep);  // the connection itself is untouched
  send(b, b.ep, a, a.ep);

  // A pending Connect: the peer listens, takes the request, does not answer it.
  INDConnector *ac, *b1, *b2;
  INDEndpoint *aep, *b1ep, *b2ep;
  fresh(a, &ac, &aep);
  fresh(b, &b1, &b1ep);
  fresh(b, &b2, &b2ep);
  INDListen* l = listen(7111);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov(), &ovc = ov();
  ASSERT_EQ(l->GetConnectionRequest(b1, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7111);
  ASSERT_EQ(ac->Connect(aep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  EXPECT_EQ(wait(ac, &ovc, 50), ND_PENDING);
  ASSERT_EQ(ac->CancelOverlappedRequests(), ND_SUCCESS);
  EXPECT_EQ(wait(ac, &ovc), ND_CANCELED);
  // Again on the same connector and endpoint. B's agent handles MADs in arrival order, so once
  // this second request is in, the first one's REJ has been seen: b1's Accept finds the
  // connecting peer gone, ND_CONNECTION_ABORTED (the only Accept failure the SDK's ndconn
  // tolerates, for a peer that gave up).
  OVERLAPPED &ovr2 = ov(), &ovc2 = ov(), &ova1 = ov(), &ova2 = ov(), &ovcc = ov();
  ASSERT_EQ(l->GetConnectionRequest(b2, &ovr2), ND_PENDING);
  ASSERT_EQ(ac->Connect(aep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc2), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr2), ND_SUCCESS);
  EXPECT_EQ(b1->Accept(b1ep, nullptr, 0, &ova1), ND_CONNECTION_ABORTED);
  ASSERT_EQ(b2->Accept(b2ep, nullptr, 0, &ova2), ND_PENDING);
  ASSERT_EQ(wait(ac, &ovc2), ND_SUCCESS);
  ASSERT_EQ(ac->CompleteConnect(&ovcc), ND_PENDING);
  ASSERT_EQ(wait(ac, &ovcc), ND_SUCCESS);
  ASSERT_EQ(wait(b2, &ova2), ND_SUCCESS);
  send(a, aep, b, b2ep);
}

// G3 (ndconn 3): the SDK expects ND_SUCCESS for the passive side's Disconnect and the active
// side's NotifyDisconnect; the cut-off Receive completes ND_CANCELED (the ND_RESULT seed:
// "canceled (generally due to a previous request failing)").
TEST_F(NdConn, PassiveSideDisconnects) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  ASSERT_NO_FATAL_FAILURE(establish(7120));
  send(a, a.ep, b, b.ep);
  OVERLAPPED &ovn = ov(), &ovd = ov(), &ovd2 = ov();
  ASSERT_EQ(a.conn->NotifyDisconnect(&ovn), ND_PENDING);
  ND_RESULT pending{};
  ND_SGE in = sge(a, 8192, 64);
  ASSERT_EQ(a.ep->Receive(&pending, &in, 1), ND_SUCCESS);
  const HRESULT hr = b.conn->Disconnect(&ovd);
  EXPECT_TRUE(hr == ND_PENDING || hr == ND_SUCCESS) << std::hex << hr;
  EXPECT_EQ(wait(b.conn, &ovd), ND_SUCCESS);
  EXPECT_EQ(wait(a.conn, &ovn), ND_SUCCESS);
  ASSERT_EQ(results(a.cq, 1).size(), 1u);
  EXPECT_EQ(pending.Status, ND_CANCELED);
  // The peer went first: A's own Disconnect has nothing left to wait for.
  EXPECT_EQ(a.conn->Disconnect(&ovd2), ND_SUCCESS);
  EXPECT_EQ(wait(a.conn, &ovd2, 0), ND_SUCCESS);
}

// G4 (ndconn 1, 6, 10; ndmpic 1): the SDK expects ND_SUCCESS from every call and result of the
// cycle. Client and server threads, each side's connections sharing one inbound and one
// outbound CQ, two listeners; afterwards no QP is left behind.
TEST_F(NdConn, ConnectionChurnOnSharedSplitCqs) {
  static constexpr unsigned kCycles = 100;
  static constexpr uint16_t kPorts[2] = {7130, 7131};
  static constexpr size_t kMsg = 64;
  ASSERT_NO_FATAL_FAILURE(up_both());
  const size_t qps_a = live_qps(a.dev), qps_b = live_qps(b.dev);
  INDCompletionQueue *a_in, *a_out, *b_in, *b_out;
  ASSERT_EQ(a.adapter->CreateCompletionQueue(64, &a_in), ND_SUCCESS);
  a.extra.push_back(a_in);
  ASSERT_EQ(a.adapter->CreateCompletionQueue(64, &a_out), ND_SUCCESS);
  a.extra.push_back(a_out);
  ASSERT_EQ(b.adapter->CreateCompletionQueue(64, &b_in), ND_SUCCESS);
  b.extra.push_back(b_in);
  ASSERT_EQ(b.adapter->CreateCompletionQueue(64, &b_out), ND_SUCCESS);
  b.extra.push_back(b_out);
  INDListen* listeners[2] = {listen(kPorts[0]), listen(kPorts[1])};
  ASSERT_NE(listeners[0], nullptr);
  ASSERT_NE(listeners[1], nullptr);
  std::atomic<bool> stop{false};
  std::atomic<unsigned> done_a{0}, done_b{0};

  // One result from `cq`, which must be `want` with ND_SUCCESS and kMsg bytes.
  auto one = [](INDCompletionQueue* cq, ND_RESULT* want) {
    auto r = results(cq, 1);
    ASSERT_EQ(r.size(), 1u);
    ASSERT_EQ(r[0], want);
    ASSERT_EQ(want->Status, ND_SUCCESS);
    ASSERT_EQ(want->BytesTransferred, kMsg);
  };
  // After the data: the cycle's designated side disconnects, the other hears of it first.
  auto finish = [](INDConnector* c, OVERLAPPED* ovn, OVERLAPPED* ovd, bool ours) {
    if (ours) {
      const HRESULT hr = c->Disconnect(ovd);
      ASSERT_TRUE(hr == ND_PENDING || hr == ND_SUCCESS) << std::hex << hr;
      ASSERT_EQ(wait(c, ovd), ND_SUCCESS);
      ASSERT_EQ(wait(c, ovn), ND_SUCCESS);
    } else {
      ASSERT_EQ(wait(c, ovn), ND_SUCCESS);
      ASSERT_EQ(c->Disconnect(ovd), ND_SUCCESS);
    }
    ASSERT_EQ(c->CancelOverlappedRequests(), ND_SUCCESS);  // as ndconn does: nothing left to cancel
  };

  // A cycle's connector and endpoint, released when the cycle ends however it ends.
  struct Drop {
    INDConnector* c;
    INDEndpoint* ep;
    ~Drop() {
      ep->Release();
      c->Release();
    }
  };
  // Each cycle's OVERLAPPEDs are declared before its Drop: if the cycle fails with one still
  // pending, the connector's release completes it while it still exists.
  auto client = [&](unsigned i) {
    OVERLAPPED ovc{}, ovcc{}, ovn{}, ovd{};
    INDConnector* c = nullptr;
    INDEndpoint* ep = nullptr;
    ASSERT_EQ(a.adapter->CreateConnector(&c), ND_SUCCESS);
    ASSERT_EQ(c->CreateEndpoint(a_in, a_out, 2, 2, 1, 1, 0, 0, nullptr, &ep), ND_SUCCESS);
    const Drop drop{c, ep};
    ND_RESULT rr{}, rs{};
    ND_SGE in = sge(a, 8192, kMsg), out = sge(a, 0, kMsg);
    ASSERT_EQ(ep->Receive(&rr, &in, 1), ND_SUCCESS);
    const uint32_t tag = i;
    const sockaddr_in to = address(kIpB, kPorts[i % 2]);
    ASSERT_EQ(c->Connect(ep, sa(to), sizeof to, 0, 0, &tag, sizeof tag, &ovc), ND_PENDING);
    ASSERT_EQ(wait(c, &ovc), ND_SUCCESS) << "cycle " << i;
    ASSERT_EQ(c->CompleteConnect(&ovcc), ND_PENDING);
    ASSERT_EQ(wait(c, &ovcc), ND_SUCCESS);
    ASSERT_EQ(c->NotifyDisconnect(&ovn), ND_PENDING);
    std::memset(a.buf.data(), int(i), kMsg);
    ASSERT_EQ(ep->Send(&rs, &out, 1, 0), ND_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(one(a_out, &rs));
    ASSERT_NO_FATAL_FAILURE(one(a_in, &rr));
    ASSERT_EQ(a.buf[8192], uint8_t(~i)) << "cycle " << i;
    ASSERT_NO_FATAL_FAILURE(finish(c, &ovn, &ovd, i % 2 == 0));
  };
  auto server = [&](unsigned i) {
    OVERLAPPED ovr{}, ova{}, ovn{}, ovd{};
    INDConnector* c = nullptr;
    INDEndpoint* ep = nullptr;
    ASSERT_EQ(b.adapter->CreateConnector(&c), ND_SUCCESS);
    ASSERT_EQ(c->CreateEndpoint(b_in, b_out, 2, 2, 1, 1, 0, 0, nullptr, &ep), ND_SUCCESS);
    const Drop drop{c, ep};
    ND_RESULT rr{}, rs{};
    ND_SGE in = sge(b, 8192, kMsg), out = sge(b, 0, kMsg);
    ASSERT_EQ(ep->Receive(&rr, &in, 1), ND_SUCCESS);
    INDListen* l = listeners[i % 2];
    ASSERT_EQ(l->GetConnectionRequest(c, &ovr), ND_PENDING);
    if (const HRESULT hr = wait(l, &ovr); hr != ND_SUCCESS) {
      l->CancelOverlappedRequests();  // before ovr goes away with this frame
      FAIL() << "cycle " << i << ": GetConnectionRequest " << std::hex << hr;
    }
    uint8_t data[cm::kConnectDataLen];
    SIZE_T len = sizeof data;
    ASSERT_EQ(c->GetConnectionData(nullptr, nullptr, data, &len), ND_SUCCESS);
    uint32_t tag;
    std::memcpy(&tag, data, sizeof tag);
    ASSERT_EQ(tag, i) << "the request of this cycle, on this cycle's listener";
    ASSERT_EQ(c->Accept(ep, nullptr, 0, &ova), ND_PENDING);
    ASSERT_EQ(wait(c, &ova), ND_SUCCESS);
    ASSERT_EQ(c->NotifyDisconnect(&ovn), ND_PENDING);
    ASSERT_NO_FATAL_FAILURE(one(b_in, &rr));
    ASSERT_EQ(b.buf[8192], uint8_t(i));
    std::memset(b.buf.data(), int(~i & 0xFF), kMsg);
    ASSERT_EQ(ep->Send(&rs, &out, 1, 0), ND_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(one(b_out, &rs));
    ASSERT_NO_FATAL_FAILURE(finish(c, &ovn, &ovd, i % 2 == 1));
  };
  auto run = [&](auto cycle, std::atomic<unsigned>& done) {
    for (unsigned i = 0; i < kCycles && !stop; i++) {
      cycle(i);
      if (::testing::Test::HasFatalFailure()) {
        stop = true;
        return;
      }
      done++;
    }
  };

  const auto t0 = Clock::now();
  std::thread tb([&] { run(server, done_b); });
  std::thread ta([&] { run(client, done_a); });
  ta.join();
  tb.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  ASSERT_EQ(done_a.load(), kCycles);
  ASSERT_EQ(done_b.load(), kCycles);
  RecordProperty("cycles_per_s", int(kCycles * 1000 / std::max<int64_t>(took.count(), 1)));
  for (INDCompletionQueue* cq : {a_in, a_out, b_in, b_out}) EXPECT_TRUE(results(cq, 1, 20).empty());
  EXPECT_EQ(live_qps(a.dev), qps_a) << "every endpoint's QP destroyed";
  EXPECT_EQ(live_qps(b.dev), qps_b);
}

// G5 (ndconn 2, ndmw 2): the SDK expects ND_SUCCESS for Receives posted before Connect and
// Accept, and the first Send to land in them.
TEST_F(NdConn, ReceivesPostedBeforeConnectAndAccept) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  ND_RESULT ra{}, rb{}, sa_{}, sb{};
  ND_SGE ina = sge(a, 8192, 300), inb = sge(b, 8192, 300);
  ASSERT_EQ(a.ep->Receive(&ra, &ina, 1), ND_SUCCESS);
  ASSERT_EQ(b.ep->Receive(&rb, &inb, 1), ND_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(establish(7140));
  for (int i = 0; i < 300; i++) a.buf[i] = uint8_t(i), b.buf[i] = uint8_t(3 * i);
  ND_SGE outa = sge(a, 0, 123), outb = sge(b, 0, 217);
  ASSERT_EQ(a.ep->Send(&sa_, &outa, 1, 0), ND_SUCCESS);
  ASSERT_EQ(b.ep->Send(&sb, &outb, 1, 0), ND_SUCCESS);
  ASSERT_EQ(results(a.cq, 2).size(), 2u);
  ASSERT_EQ(results(b.cq, 2).size(), 2u);
  EXPECT_EQ(sa_.Status, ND_SUCCESS);
  EXPECT_EQ(sb.Status, ND_SUCCESS);
  EXPECT_EQ(rb.Status, ND_SUCCESS);
  EXPECT_EQ(rb.BytesTransferred, 123u);
  EXPECT_EQ(ra.Status, ND_SUCCESS);
  EXPECT_EQ(ra.BytesTransferred, 217u);
  EXPECT_EQ(0, std::memcmp(b.buf.data() + 8192, a.buf.data(), 123));
  EXPECT_EQ(0, std::memcmp(a.buf.data() + 8192, b.buf.data(), 217));
}

// G6 (ndconn 8, ndmpic 2): the SDK expects ND_TIMEOUT (success severity) from a Connect nobody
// answers, and retries on the same connector and endpoint.
TEST_F(NdConn, ConnectTimesOutThenRetrySucceeds) {
  if (ndnic::testing::run_to_completion())
    GTEST_SKIP() << "B's engine without a CM agent: run to completion, nothing drives it (not even ARP)";
  // 4 tries of 2 ms + 1 s: about 4 s until ND_TIMEOUT, and as long for B to answer the retry.
  ASSERT_NO_FATAL_FAILURE(up(a, cm_config(3, 18)));
  // B's engine runs but has no CM agent yet: every REQ is dropped at its QP1.
  const sockaddr_in to = address(kIpB, 7150);
  OVERLAPPED &ovc = ov();
  const auto t0 = Clock::now();
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  const HRESULT hr = wait(a.conn, &ovc);
  EXPECT_EQ(hr, ND_TIMEOUT);
  EXPECT_FALSE(FAILED(hr)) << "ND_TIMEOUT has success severity";
  EXPECT_GE(Clock::now() - t0, 4000ms) << "after the REQ's retries";
  EXPECT_GT(b.dev.counters().unknown_qp, 0u) << "the REQs reached B";

  ASSERT_NO_FATAL_FAILURE(up(b));
  INDListen* l = listen(7150);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(accept_and_complete(&ovc));
  send(a, a.ep, b, b.ep);
}

/// Up to A's Connect completing (REP in), B's Accept pending, a Receive pending on B.
class NdConnAbandon : public NdConn {
 protected:
  void connect_until_response(uint16_t port) {
    ASSERT_NO_FATAL_FAILURE(up_both());
    INDListen* l = listen(port);
    ASSERT_NE(l, nullptr);
    ASSERT_EQ(b.ep->Receive(&pending_, nullptr, 0), ND_SUCCESS);
    OVERLAPPED &ovr = ov(), &ovc = ov();
    ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
    const sockaddr_in to = address(kIpB, port);
    ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
    ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
    ASSERT_EQ(b.conn->Accept(b.ep, nullptr, 0, &ova_), ND_PENDING);
    ASSERT_EQ(wait(a.conn, &ovc), ND_SUCCESS);
  }
  /// B's Accept fails refused (its REP retries running out, after 9 s, would be
  /// ND_CONNECTION_ABORTED), and its pending Receive ends canceled once B flushes.
  void accept_refused() {
    const auto t0 = Clock::now();
    EXPECT_EQ(wait(b.conn, &ova_), ND_CONNECTION_REFUSED);
    EXPECT_LT(Clock::now() - t0, 4s) << "the REJ, not the REP timer running out";
    EXPECT_EQ(b.ep->Flush(), ND_SUCCESS);
    ASSERT_EQ(results(b.cq, 1).size(), 1u);
    EXPECT_EQ(pending_.Status, ND_CANCELED);
  }

  OVERLAPPED ova_{};
  ND_RESULT pending_{};
};

// G7a (ndmemorytest NdConnReject): the SDK expects ND_SUCCESS from the active side's Reject and
// ND_CONNECTION_REFUSED from the passive side's Accept.
TEST_F(NdConnAbandon, ActiveSideRejectRefusesTheAccept) {
  ASSERT_NO_FATAL_FAILURE(connect_until_response(7160));
  EXPECT_EQ(a.conn->Reject(nullptr, 0), ND_SUCCESS);
  accept_refused();
  OVERLAPPED &ovcc = ov();
  EXPECT_EQ(a.conn->CompleteConnect(&ovcc), ND_CONNECTION_INVALID) << "rejected: nothing to complete";
  EXPECT_EQ(a.conn->Reject(nullptr, 0), ND_CONNECTION_INVALID) << "only once";
}

// G7b (ndmemorytest NdConnClose, NdDualConnection server): the SDK expects ND_CONNECTION_REFUSED
// from the Accept when the connecting peer releases its connector without CompleteConnect.
TEST_F(NdConnAbandon, ReleasingTheActiveConnectorRefusesTheAccept) {
  ASSERT_NO_FATAL_FAILURE(connect_until_response(7161));
  // The SDK's order: the connector goes, the endpoint stays a while.
  EXPECT_EQ(a.conn->Release(), 0u) << "no hidden reference keeps the connector alive";
  a.conn = nullptr;
  accept_refused();
  a.ep->Release();
  a.ep = nullptr;
}

// G8 (ndmpic 4): the SDK expects ND_SUCCESS from the passive Reject, ND_CONNECTION_REFUSED from
// the Connect, ND_CANCELED for the Receives a Flush ends. The reject's private data stays
// readable with GetConnectionData (the NDK GetConnectionData page: data "sent by the peer with
// connect, accept, or reject"; ndnic's choice for v1).
TEST_F(NdConn, PassiveRejectCarriesDataAndTheEndpointFlushes) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen* l = listen(7170);
  ASSERT_NE(l, nullptr);
  ND_RESULT pending[2]{};
  for (auto& p : pending) ASSERT_EQ(a.ep->Receive(&p, nullptr, 0), ND_SUCCESS);
  OVERLAPPED &ovr = ov(), &ovc = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7170);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  ASSERT_EQ(b.conn->Reject("go away", 7), ND_SUCCESS);
  EXPECT_EQ(wait(a.conn, &ovc), ND_CONNECTION_REFUSED);
  char why[256];
  SIZE_T len = sizeof why;
  ASSERT_EQ(a.conn->GetConnectionData(nullptr, nullptr, why, &len), ND_SUCCESS);
  EXPECT_EQ(len, cm::kRejectDataLen) << "a REJ's private data field is 148 bytes on the wire";
  EXPECT_EQ(0, std::memcmp(why, "go away", 7));
  OVERLAPPED &ova = ov();
  EXPECT_EQ(b.conn->Accept(b.ep, nullptr, 0, &ova), ND_CONNECTION_INVALID) << "already rejected";
  EXPECT_EQ(a.ep->Flush(), ND_SUCCESS);
  ASSERT_EQ(results(a.cq, 2).size(), 2u);
  EXPECT_EQ(pending[0].Status, ND_CANCELED);
  EXPECT_EQ(pending[1].Status, ND_CANCELED);
}

// G9 (ndmemorytest NdConnListenClosing): the SDK expects ND_CONNECTION_REFUSED.
TEST_F(NdConn, ReleasedListenerRefuses) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen* l = nullptr;
  ASSERT_EQ(b.adapter->Listen(0, 0, htons(7180), nullptr, &l), ND_SUCCESS);
  EXPECT_EQ(l->Release(), 0u);
  const sockaddr_in to = address(kIpB, 7180);
  OVERLAPPED &ovc = ov();
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  EXPECT_EQ(wait(a.conn, &ovc), ND_CONNECTION_REFUSED);
}

// G10 (ndmemorytest NdDualConnection): the SDK expects ND_CONNECTION_ACTIVE from a second
// Connect on a connector whose Connect completed.
TEST_F(NdConn, SecondConnectIsActive) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen* l = listen(7190);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov(), &ovc = ov(), &ova = ov(), &ovcc = ov(), &ov2 = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7190);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  EXPECT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ov2), ND_CONNECTION_ACTIVE)
      << "while the first is pending";
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  ASSERT_EQ(b.conn->Accept(b.ep, nullptr, 0, &ova), ND_PENDING);
  ASSERT_EQ(wait(a.conn, &ovc), ND_SUCCESS);
  EXPECT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ov2), ND_CONNECTION_ACTIVE);
  ASSERT_EQ(a.conn->CompleteConnect(&ovcc), ND_PENDING);
  ASSERT_EQ(wait(a.conn, &ovcc), ND_SUCCESS);
  ASSERT_EQ(wait(b.conn, &ova), ND_SUCCESS);
  EXPECT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ov2), ND_CONNECTION_ACTIVE);
  EXPECT_EQ(b.conn->Connect(b.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ov2), ND_CONNECTION_ACTIVE)
      << "a passive connector is taken as well";
  send(a, a.ep, b, b.ep);  // the first connection is unaffected
  send(b, b.ep, a, a.ep);
}

// G11 (ndmemorytest NdDualListen): the SDK expects STATUS_ADDRESS_ALREADY_ASSOCIATED, which v1
// has no name for: ndnic's own choice is ND_ADDRESS_ALREADY_EXISTS.
TEST_F(NdConn, DuplicateListenOnTheSameAddress) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen *l1 = nullptr, *l2 = nullptr, *l3 = nullptr;
  ASSERT_EQ(b.adapter->Listen(0, 0, htons(7200), nullptr, &l1), ND_SUCCESS);
  EXPECT_EQ(b.adapter->Listen(0, 0, htons(7200), nullptr, &l2), ND_ADDRESS_ALREADY_EXISTS);
  EXPECT_EQ(l2, nullptr);
  INDAdapter* other = nullptr;
  const sockaddr_in at = address(kIpB, 0);
  ASSERT_EQ(NdOpenV1Adapter(sa(at), sizeof at, &other), ND_SUCCESS);
  b.extra.push_back(other);
  EXPECT_EQ(other->Listen(0, 0, htons(7200), nullptr, &l2), ND_ADDRESS_ALREADY_EXISTS)
      << "a second adapter on the same address";
  l1->Release();
  ASSERT_EQ(other->Listen(0, 0, htons(7200), nullptr, &l3), ND_SUCCESS) << "free again";
  b.extra.push_back(l3);
  // The new listener is the one that gets the requests.
  OVERLAPPED &ovr = ov(), &ovc = ov();
  ASSERT_EQ(l3->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7200);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  EXPECT_EQ(wait(l3, &ovr), ND_SUCCESS);
  EXPECT_EQ(b.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_EQ(wait(a.conn, &ovc), ND_CONNECTION_REFUSED);
}

// G12 (ndmemorytest NdInvalidIP): the unspecified address 0.0.0.0 is STATUS_BAD_NETWORK_NAME, as
// the SDK's provider tests expect (v1 has no name for it); other addresses that cannot be a peer
// are ND_INVALID_ADDRESS, at once. An address nobody answers ARP for: ND_HOST_UNREACHABLE
// (ndnic's choice; the SDK has no such test).
TEST_F(NdConn, BadDestinations) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  OVERLAPPED &ovc = ov();
  const sockaddr_in unspecified = address(0, 7210);
  EXPECT_EQ(a.conn->Connect(a.ep, sa(unspecified), sizeof unspecified, 0, 0, nullptr, 0, &ovc),
            nd::STATUS_BAD_NETWORK_NAME);
  for (const sockaddr_in& to : {address(0xFFFFFFFF, 7210), address(0xE0000001, 7210), address(kIpB, 0)}) {
    EXPECT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_INVALID_ADDRESS)
        << std::hex << ntohl(to.sin_addr.s_addr) << ":" << std::dec << ntohs(to.sin_port);
  }
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  EXPECT_EQ(a.conn->Connect(a.ep, reinterpret_cast<sockaddr*>(&v6), sizeof v6, 0, 0, nullptr, 0, &ovc),
            ND_INVALID_ADDRESS);
  const sockaddr_in nobody = address(kIpNobody, 7210);
  const auto t0 = Clock::now();
  ASSERT_EQ(a.conn->Connect(a.ep, sa(nobody), sizeof nobody, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  EXPECT_EQ(wait(a.conn, &ovc), ND_HOST_UNREACHABLE);
  EXPECT_LT(Clock::now() - t0, 4s) << "ARP gives up after 5 x 200 ms, before the CM's retries";
  // The connector and endpoint are still good for a real peer.
  ASSERT_NO_FATAL_FAILURE(establish(7211));
  send(a, a.ep, b, b.ep);
}

// G17 (ndmemorytest NdLargePrivateData): the SDK expects ND_INVALID_BUFFER_SIZE for Connect over
// MaxCallerData and Accept over MaxCalleeData, then ND_SUCCESS at the limits. Reject over its
// 148 bytes: the SDK has no case and the v1 Reject page (not a seed) names ND_BUFFER_OVERFLOW;
// ndnic's choice is ND_INVALID_BUFFER_SIZE, as for Connect and Accept.
TEST_F(NdConn, PrivateDataLimits) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  ND_ADAPTER_INFO info{};
  SIZE_T size = sizeof info;
  ASSERT_EQ(a.adapter->Query(1, &info, &size), ND_SUCCESS);
  ASSERT_EQ(info.MaxCallerData, cm::kConnectDataLen);
  ASSERT_EQ(info.MaxCalleeData, cm::kAcceptDataLen);
  std::vector<uint8_t> caller(info.MaxCallerData + 1), callee(info.MaxCalleeData + 1);
  for (size_t i = 0; i < caller.size(); i++) caller[i] = uint8_t(i + 1);
  for (size_t i = 0; i < callee.size(); i++) callee[i] = uint8_t(0xA0 ^ i);
  INDListen* l = listen(7220);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov(), &ovc = ov(), &ova = ov(), &ovcc = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7220);
  EXPECT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, caller.data(), caller.size(), &ovc),
            ND_INVALID_BUFFER_SIZE);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, caller.data(), info.MaxCallerData, &ovc),
            ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  std::vector<uint8_t> got(512);
  SIZE_T len = got.size();
  ASSERT_EQ(b.conn->GetConnectionData(nullptr, nullptr, got.data(), &len), ND_SUCCESS);
  ASSERT_EQ(len, info.MaxCallerData);
  EXPECT_EQ(0, std::memcmp(got.data(), caller.data(), len));
  const std::vector<uint8_t> too_long_reject(cm::kRejectDataLen + 1, 0x55);
  EXPECT_EQ(b.conn->Reject(too_long_reject.data(), too_long_reject.size()), ND_INVALID_BUFFER_SIZE);
  EXPECT_EQ(b.conn->Accept(b.ep, callee.data(), callee.size(), &ova), ND_INVALID_BUFFER_SIZE);
  // Neither error answered the request: it is still there to accept.
  ASSERT_EQ(b.conn->Accept(b.ep, callee.data(), info.MaxCalleeData, &ova), ND_PENDING);
  ASSERT_EQ(wait(a.conn, &ovc), ND_SUCCESS);
  len = got.size();
  ASSERT_EQ(a.conn->GetConnectionData(nullptr, nullptr, got.data(), &len), ND_SUCCESS);
  ASSERT_EQ(len, info.MaxCalleeData);
  EXPECT_EQ(0, std::memcmp(got.data(), callee.data(), len));
  ASSERT_EQ(a.conn->CompleteConnect(&ovcc), ND_PENDING);
  ASSERT_EQ(wait(a.conn, &ovcc), ND_SUCCESS);
  ASSERT_EQ(wait(b.conn, &ova), ND_SUCCESS);
  send(a, a.ep, b, b.ep);
}

// G22 (ndmpic 3, ndmw 1): the SDK's ndmpic reads a 40-byte buffer that gets ND_BUFFER_OVERFLOW
// and uses the bytes in it; ndmw expects ND_BUFFER_OVERFLOW for a null buffer. So a short
// buffer gets what fits, the length is the full one (the REQ's user field: 56 bytes, whatever
// the sender gave).
TEST_F(NdConn, ConnectionDataTruncatesIntoAShortBuffer) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  INDListen* l = listen(7230);
  ASSERT_NE(l, nullptr);
  uint8_t sent[40];
  for (size_t i = 0; i < sizeof sent; i++) sent[i] = uint8_t(0x40 + i);
  OVERLAPPED &ovr = ov(), &ovc = ov();
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7230);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, 0, sent, sizeof sent, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  uint8_t buf40[40] = {};
  SIZE_T len = sizeof buf40;
  EXPECT_EQ(b.conn->GetConnectionData(nullptr, nullptr, buf40, &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, cm::kConnectDataLen);
  EXPECT_EQ(0, std::memcmp(buf40, sent, sizeof sent)) << "what fits is copied";
  len = 0;
  EXPECT_EQ(b.conn->GetConnectionData(nullptr, nullptr, nullptr, &len), ND_BUFFER_OVERFLOW);
  EXPECT_EQ(len, cm::kConnectDataLen);
  len = 64;
  EXPECT_EQ(b.conn->GetConnectionData(nullptr, nullptr, nullptr, &len), ND_BUFFER_OVERFLOW) << "no buffer";
  EXPECT_EQ(len, cm::kConnectDataLen);
  uint8_t full[cm::kConnectDataLen];
  len = sizeof full;
  ASSERT_EQ(b.conn->GetConnectionData(nullptr, nullptr, full, &len), ND_SUCCESS);
  EXPECT_EQ(0, std::memcmp(full, sent, sizeof sent));
  for (size_t i = sizeof sent; i < sizeof full; i++) EXPECT_EQ(full[i], 0) << "rdma_cm pads with zeros";
  EXPECT_EQ(b.conn->Reject(nullptr, 0), ND_SUCCESS);
  EXPECT_EQ(wait(a.conn, &ovc), ND_CONNECTION_REFUSED);
}

// G23 (ndmpic 2): the SDK binds the active side's port (v2 Bind); v1's Connect takes it as
// LocalPort. ND_SUCCESS, and both ends report that port. Without one, the port the CM picked.
TEST_F(NdConn, ConnectFromAGivenLocalPort) {
  ASSERT_NO_FATAL_FAILURE(up_both());
  auto ports = [&](INDConnector* ac, INDConnector* bc, uint16_t* local, uint16_t* seen) {
    sockaddr_in s{};
    SIZE_T len = sizeof s;
    ASSERT_EQ(ac->GetLocalAddress(reinterpret_cast<sockaddr*>(&s), &len), ND_SUCCESS);
    EXPECT_EQ(ntohl(s.sin_addr.s_addr), kIpA);
    *local = ntohs(s.sin_port);
    len = sizeof s;
    ASSERT_EQ(bc->GetPeerAddress(reinterpret_cast<sockaddr*>(&s), &len), ND_SUCCESS);
    EXPECT_EQ(ntohl(s.sin_addr.s_addr), kIpA);
    *seen = ntohs(s.sin_port);
  };
  INDListen* l = listen(7240);
  ASSERT_NE(l, nullptr);
  OVERLAPPED &ovr = ov(), &ovc = ov(), &ova = ov(), &ovcc = ov();  // the second connection reuses them
  ASSERT_EQ(l->GetConnectionRequest(b.conn, &ovr), ND_PENDING);
  const sockaddr_in to = address(kIpB, 7240);
  ASSERT_EQ(a.conn->Connect(a.ep, sa(to), sizeof to, 0, htons(40001), nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(accept_and_complete(&ovc));
  uint16_t local = 0, seen = 0;
  ports(a.conn, b.conn, &local, &seen);
  EXPECT_EQ(local, 40001);
  EXPECT_EQ(seen, 40001);
  sockaddr_in s{};
  SIZE_T len = sizeof s;
  ASSERT_EQ(b.conn->GetLocalAddress(reinterpret_cast<sockaddr*>(&s), &len), ND_SUCCESS);
  EXPECT_EQ(ntohs(s.sin_port), 7240);
  send(a, a.ep, b, b.ep);

  INDConnector *ac, *bc;
  INDEndpoint *aep, *bep;
  fresh(a, &ac, &aep);
  fresh(b, &bc, &bep);
  ASSERT_EQ(l->GetConnectionRequest(bc, &ovr), ND_PENDING);
  ASSERT_EQ(ac->Connect(aep, sa(to), sizeof to, 0, 0, nullptr, 0, &ovc), ND_PENDING);
  ASSERT_EQ(wait(l, &ovr), ND_SUCCESS);
  ASSERT_EQ(bc->Accept(bep, nullptr, 0, &ova), ND_PENDING);
  ASSERT_EQ(wait(ac, &ovc), ND_SUCCESS);
  ports(ac, bc, &local, &seen);
  EXPECT_NE(local, 0) << "the port the CM picked, not the 0 Connect was given";
  EXPECT_NE(local, 40001);
  EXPECT_EQ(local, seen);
  ASSERT_EQ(ac->CompleteConnect(&ovcc), ND_PENDING);
  ASSERT_EQ(wait(ac, &ovcc), ND_SUCCESS);
  ASSERT_EQ(wait(bc, &ova), ND_SUCCESS);
}

}  // namespace
