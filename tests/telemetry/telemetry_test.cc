// The /ndnic/ telemetry commands end to end: two devices exchange traffic over a net_ring pair
// (with one lost ACK, so one timeout, one retransmission and one duplicate; one RNR NAK; one
// remote invalidation; frames dropped for named reasons), and what EAL's telemetry socket
// answers must match that traffic, counter by counter. Also: dpdk-telemetry.py itself, the
// command registry, reads while worker lcores run, and the stats_text() table.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "ndnic/telemetry.h"
#include "tests/fixtures/two_nodes.h"
#include "tests/telemetry/client.h"
#include "ndnic/wire/packet.h"

namespace ndnic::telemetry::testing {
namespace {

using nic::Completion;
using nic::WcStatus;
using nic::WrOpcode;

constexpr uint32_t kMtu = 1024;
constexpr uint8_t kTimeout = 14;      ///< 67 ms: no spurious timeout even in a slow build
constexpr uint64_t kMwContext = 0x7E1E;
/// Frame sizes as counted (Ethernet header to the end, no FCS).
constexpr uint64_t kRoceHeaders = 14 + 20 + 8 + 12;  ///< Ethernet, IPv4, UDP, BTH
constexpr uint64_t kIcrc = 4;
constexpr uint64_t kIeth = 4;
constexpr uint64_t kAckFrame = kRoceHeaders + 4 + kIcrc;  ///< with the AETH
constexpr uint64_t kArpFrame = 60;                         ///< padded to Ethernet's minimum
constexpr const char* kNakKinds[] = {"psn_sequence", "invalid_request", "remote_access", "remote_operation"};

uint32_t send_packets(uint32_t len) { return len == 0 ? 1 : (len + kMtu - 1) / kMtu; }

/// The frame bytes of a SEND of `len` (WITH INVALIDATE: the last packet carries an IETH).
uint64_t send_bytes(uint32_t len, bool inv) {
  const uint32_t n = send_packets(len);
  const uint32_t last = len - (n - 1) * kMtu;
  return (n - 1) * (kRoceHeaders + kMtu + kIcrc) + kRoceHeaders + (inv ? kIeth : 0) + last +
         wire::pad_for(last) + kIcrc;
}

class Telemetry : public nic::testing::TwoNodes {
 protected:
  void SetUp() override {
    TwoNodes::SetUp();
    if (HasFatalFailure()) return;
    path_ = socket_path();
    ASSERT_FALSE(path_.empty()) << "EAL runs without telemetry";
    ASSERT_TRUE(register_device("a", &a->dev, &a->port));
    ASSERT_TRUE(register_device("b", &b->dev, &b->port));
    ASSERT_TRUE(client_.connect(path_)) << client_.error();
  }

  void TearDown() override {
    unregister_device("a");
    unregister_device("b");
    TwoNodes::TearDown();
  }

  void connect_rc() {
    nic::testing::ConnectOptions o;
    o.mtu = kMtu;
    o.timeout = kTimeout;
    connect(o);
  }

  Json query(const std::string& command) {
    Json j = client_.query(command);
    EXPECT_TRUE(client_.error().empty()) << client_.error();
    return j;
  }

  /// Polls A then B until pred() holds, checking after each device: a step that must be seen
  /// between two polls (a frame just sent, a NAK just answered) is.
  bool step_until(const std::function<bool()>& pred, int ms = 5000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      a->dev.poll();
      if (pred()) return true;
      b->dev.poll();
    }
    return true;
  }

  /// A SEND from A into a receive B posted; both completions must succeed.
  void send_ab(uint32_t len, uint64_t id) {
    ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 8192, id)));
    ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, len, id)));
    std::vector<Completion> sc, rc;
    ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
    ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
    EXPECT_EQ(sc[0].status, WcStatus::kSuccess) << nic::wc_status_name(sc[0].status);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess) << nic::wc_status_name(rc[0].status);
  }

  /// Sends `frame` from A's port as it stands; returns its length.
  size_t inject(const std::vector<uint8_t>& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(a->port.mempool());
    EXPECT_NE(m, nullptr);
    if (m == nullptr) return 0;
    std::memcpy(rte_pktmbuf_append(m, uint16_t(frame.size())), frame.data(), frame.size());
    EXPECT_EQ(a->port.tx_burst(&m, 1), 1);
    return frame.size();
  }

  /// A RoCE SEND ONLY from A's address to B's, for QP `dest_qp`, on UDP port `udp_port`.
  std::vector<uint8_t> roce_frame(uint32_t dest_qp, uint16_t udp_port = wire::kRoceV2Port) {
    wire::RocePacket p;
    std::memcpy(p.eth.dst, b->port.mac().addr_bytes, 6);
    std::memcpy(p.eth.src, a->port.mac().addr_bytes, 6);
    p.eth.ethertype = 0x0800;
    p.ip4.src = a->port.ipv4();
    p.ip4.dst = b->port.ipv4();
    p.udp.src_port = 0xC000;
    p.udp.dst_port = udp_port;
    p.bth.opcode = wire::kRcSendOnly;
    p.bth.dest_qp = dest_qp;
    p.bth.psn = 0x999;
    static const uint8_t kPayload[32] = {};
    p.payload = kPayload;
    p.payload_len = sizeof(kPayload);
    std::vector<uint8_t> f(wire::frame_length(p));
    EXPECT_EQ(wire::encode_frame(p, f.data(), f.size()), f.size());
    return f;
  }

  /// An IPv6 frame to B's MAC: the port drops it by EtherType.
  std::vector<uint8_t> ipv6_frame() {
    std::vector<uint8_t> f(kArpFrame, 0);
    std::memcpy(f.data(), b->port.mac().addr_bytes, 6);
    std::memcpy(f.data() + 6, a->port.mac().addr_bytes, 6);
    f[12] = 0x86;
    f[13] = 0xDD;
    f[14] = 0x60;
    return f;
  }

  std::string path_;
  Client client_;
};

void expect_number(const Json& j, const std::string& key, uint64_t want, const std::string& where) {
  EXPECT_EQ(j[key].kind, Json::Kind::kNumber) << where << " has no number " << key;
  EXPECT_EQ(j[key].u, want) << where << "." << key;
}

/// Every counter of a QP (or the device's sum) as the reply must name it.
void expect_qp_counters(const Json& j, const nic::QpCounters& c, const std::string& where) {
  const std::pair<const char*, uint64_t> fields[] = {
      {"tx_packets", c.tx_packets}, {"tx_bytes", c.tx_bytes}, {"tx_zero_copy", c.tx_zero_copy}, {"rx_packets", c.rx_packets},
      {"rx_bytes", c.rx_bytes}, {"retransmits", c.retransmits}, {"timeouts", c.timeouts},
      {"rnr_naks_sent", c.rnr_naks_sent}, {"rnr_naks_received", c.rnr_naks_received},
      {"duplicates", c.duplicates}, {"out_of_sequence", c.out_of_sequence},
      {"invalidations", c.invalidations}};
  for (const auto& [name, value] : fields) expect_number(j, name, value, where);
  for (size_t k = 0; k < 4; k++) {
    expect_number(j["naks_sent"], kNakKinds[k], c.naks_sent[k], where + ".naks_sent");
    expect_number(j["naks_received"], kNakKinds[k], c.naks_received[k], where + ".naks_received");
  }
  EXPECT_EQ(j["naks_sent"].o.size(), 4u);
  expect_number(j["drops"], "wrong_qkey", c.qkey_drops, where + ".drops");
  expect_number(j["drops"], "no_receive", c.no_recv_drops, where + ".drops");
}

void expect_port(const Json& j, const glue::PortCounters& c, const std::string& where) {
  const std::pair<const char*, uint64_t> fields[] = {
      {"rx_packets", c.rx_frames}, {"rx_bytes", c.rx_bytes}, {"tx_packets", c.tx_frames},
      {"tx_bytes", c.tx_bytes}, {"rx_roce", c.rx_roce}, {"rx_arp", c.rx_arp},
      {"tx_arp_requests", c.tx_arp_requests}, {"tx_arp_replies", c.tx_arp_replies},
      {"tx_errors", c.tx_errors}, {"capture_errors", c.capture_errors}, {"rx_dropped", c.dropped()}};
  for (const auto& [name, value] : fields) expect_number(j, name, value, where);
  EXPECT_EQ(j["drops"].o.size(), size_t(glue::Drop::kCount)) << where << ": every reason, zero or not";
  for (size_t i = 0; i < size_t(glue::Drop::kCount); i++)
    expect_number(j["drops"], glue::drop_name(glue::Drop(i)), c.drops[i], where + ".drops");
}

TEST_F(Telemetry, SocketIsThisProcesssAndListsTheCommands) {
  EXPECT_TRUE(path_.starts_with(std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2")) << path_;
  EXPECT_EQ(client_.hello()["pid"].u, uint64_t(getpid()));
  std::printf("telemetry socket: %s\n", path_.c_str());
  const Json all = query("/");
  std::set<std::string> commands;
  for (const Json& c : all.a) commands.insert(c.s);
  for (const char* c : {"/ndnic/devices", "/ndnic/port_stats", "/ndnic/device_stats", "/ndnic/qps", "/ndnic/qp_stats"})
    EXPECT_TRUE(commands.count(c)) << c;
  EXPECT_NE(query("/help,/ndnic/qp_stats")["/ndnic/qp_stats"].s.find("device:qpn"), std::string::npos);
}

TEST_F(Telemetry, CountersMatchTheTraffic) {
  connect_rc();
  const uint32_t qa = a->qp->qpn(), qb = b->qp->qpn();
  uint64_t a_packets = 0, a_bytes = 0;  // what A's QP sent (B's QP received all of it)
  auto sent = [&](uint32_t len, bool inv, unsigned times) {
    a_packets += uint64_t(send_packets(len)) * times;
    a_bytes += send_bytes(len, inv) * times;
  };

  // Messages of one to four packets.
  const uint32_t kSizes[] = {0, 1, 3, 100, 1023, 1024, 1025, 3000, 4096};
  uint64_t id = 1;
  for (uint32_t len : kSizes) {
    send_ab(len, id++);
    sent(len, false, 1);
  }

  // A lost ACK: B's switch drops it, A times out and sends the SEND again, B sees a duplicate.
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 8192, id)));
  nic::FaultConfig drop_all;
  drop_all.tx.drop = 1.0;
  b->dev.set_faults(&drop_all);
  const uint64_t b_sent = b->qp->counters().tx_packets;
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 200, id)));
  ASSERT_TRUE(step_until([&] { return b->qp->counters().tx_packets == b_sent + 1; }));
  b->dev.set_faults(nullptr);
  std::vector<Completion> sc, rc;
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(sc.back().status, WcStatus::kSuccess);
  sent(200, false, 2);
  id++;

  // An RNR NAK: no receive posted until B has NAKed once.
  ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 300, id)));
  ASSERT_TRUE(step_until([&] { return b->qp->counters().rnr_naks_sent == 1; }));
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 8192, id)));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 1, &rc));
  EXPECT_EQ(sc.back().status, WcStatus::kSuccess);
  sent(300, false, 2);
  id++;

  // A remote invalidation: B binds a window, A's SEND WITH INVALIDATE names it.
  const uint32_t mw = b->dev.alloc_mw(b->pd, kMwContext);
  ASSERT_NE(mw, 0u);
  nic::SendWr bind{};
  bind.wr_id = 900;
  bind.opcode = WrOpcode::kBindMw;
  bind.flags = nic::kWrSignaled;
  bind.bind = {mw, b->mr.lkey, reinterpret_cast<uint64_t>(b->buf.data() + 65536), 4096,
               nic::kAccessRemoteWrite, uint8_t(mw + 1)};
  ASSERT_TRUE(b->qp->post_send(bind));
  std::vector<Completion> bc;
  ASSERT_TRUE(wait_cq(b->scq, 1, &bc));
  ASSERT_EQ(bc[0].status, WcStatus::kSuccess);
  ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 8192, id)));
  nic::SendWr inv = send_wr(WrOpcode::kSendInv, *a, 0, 16, id);
  inv.invalidate_rkey = bc[0].imm_or_inv;
  ASSERT_TRUE(a->qp->post_send(inv));
  ASSERT_TRUE(wait_cq(a->scq, 1, &sc));
  ASSERT_TRUE(wait_cq(b->rcq, 2, &rc));
  EXPECT_EQ(rc[rc.size() - 2].opcode, nic::WcOpcode::kRemoteInvalidate);
  sent(16, true, 1);

  // Frames B drops, by four named reasons: two at the port, two in the engine.
  uint64_t raw_frames = 0, raw_bytes = 0;
  for (const std::vector<uint8_t>& f :
       {ipv6_frame(), roce_frame(qb, 1234), roce_frame(0xABCDE), [&] {
          auto bad = roce_frame(qb);
          bad.back() ^= 0xFF;  // the ICRC
          return bad;
        }()}) {
    raw_bytes += inject(f);
    raw_frames++;
  }
  ASSERT_TRUE(step_until([&] {
    const auto d = b->dev.counters();
    return b->port.counters().dropped() == 2 && d.rejected == 1 && d.unknown_qp == 1;
  }));

  // The traffic as the C++ API sees it...
  const glue::PortCounters pa = a->port.counters(), pb = b->port.counters();
  const nic::QpCounters ca = a->qp->counters(), cb = b->qp->counters();
  const nic::Device::Counters da = a->dev.counters(), db = b->dev.counters();
  EXPECT_EQ(ca.tx_packets, a_packets);
  EXPECT_EQ(ca.tx_bytes, a_bytes);  // whole frames, each way
  EXPECT_EQ(cb.rx_packets, a_packets);
  EXPECT_EQ(cb.rx_bytes, a_bytes);  // B got every frame A sent (faults only on B's TX)
  EXPECT_EQ(ca.rx_packets + 1, cb.tx_packets);  // the ACK B's switch dropped
  EXPECT_EQ(ca.retransmits, 2u);                 // after the timeout and after the RNR NAK
  EXPECT_EQ(ca.timeouts, 1u);
  EXPECT_EQ(cb.duplicates, 1u);
  EXPECT_EQ(cb.rnr_naks_sent, 1u);
  EXPECT_EQ(ca.rnr_naks_received, 1u);
  EXPECT_EQ(cb.invalidations, 1u);
  EXPECT_EQ(cb.out_of_sequence, 0u);
  for (size_t k = 0; k < 4; k++) EXPECT_EQ(ca.naks_received[k] + cb.naks_sent[k], 0u) << kNakKinds[k];
  const uint64_t arp_a = pa.tx_arp_requests + pa.tx_arp_replies, arp_b = pb.tx_arp_requests + pb.tx_arp_replies;
  EXPECT_GE(arp_a + arp_b, 2u);
  EXPECT_EQ(pa.tx_frames, ca.tx_packets + arp_a + raw_frames);
  EXPECT_EQ(pa.tx_bytes, ca.tx_bytes + arp_a * kArpFrame + raw_bytes);
  EXPECT_EQ(pb.rx_frames, pa.tx_frames);
  EXPECT_EQ(pb.rx_bytes, pa.tx_bytes);
  EXPECT_EQ(pb.rx_roce, ca.tx_packets + 2);  // the bad ICRC and the unknown QP pass the port
  EXPECT_EQ(pb.tx_frames, cb.tx_packets - 1 + arp_b);
  EXPECT_EQ(pb.tx_bytes, cb.tx_bytes - kAckFrame + arp_b * kArpFrame);
  EXPECT_EQ(pa.rx_frames, pb.tx_frames);
  EXPECT_EQ(pa.rx_bytes, pb.tx_bytes);
  EXPECT_EQ(pb[glue::Drop::kIpv6], 1u);
  EXPECT_EQ(pb[glue::Drop::kNotRocePort], 1u);
  EXPECT_EQ(db.rejects[wire::Reject::kIcrcMismatch], 1u);
  EXPECT_EQ(da.rejected + da.unknown_qp, 0u);

  // ... and as the telemetry socket answers it (the devices are quiet: exactly the same).
  const Json devices = query("/ndnic/devices");
  ASSERT_EQ(devices.kind, Json::Kind::kObject);
  EXPECT_EQ(devices.o.size(), 2u);
  expect_number(devices["a"], "port_id", a->port.port_id(), "devices.a");
  expect_number(devices["a"], "qps", 1, "devices.a");
  EXPECT_EQ(devices["a"]["ipv4"].s, "198.18.40.1");
  EXPECT_EQ(devices["b"]["driver"].s, b->port.driver());
  EXPECT_EQ(devices["b"]["mac"].s.size(), 17u);

  const Json ps_a = query("/ndnic/port_stats,a"), ps_b = query("/ndnic/port_stats,b");
  expect_port(ps_a, pa, "port_stats,a");
  expect_port(ps_b, pb, "port_stats,b");
  expect_number(ps_b["drops"], "ipv6", 1, "port_stats,b.drops");
  expect_number(ps_b["drops"], "not_roce_port", 1, "port_stats,b.drops");
  expect_number(ps_b, "rx_dropped", 2, "port_stats,b");
  expect_number(ps_a, "tx_bytes", ca.tx_bytes + arp_a * kArpFrame + raw_bytes, "port_stats,a");

  const Json ds_b = query("/ndnic/device_stats,b");
  expect_number(ds_b, "qps", 1, "device_stats,b");
  expect_number(ds_b, "rejected", 1, "device_stats,b");
  expect_number(ds_b, "unknown_qp", 1, "device_stats,b");
  expect_number(ds_b, "dispatched", 0, "device_stats,b");
  expect_number(ds_b, "dispatch_dropped", 0, "device_stats,b");
  expect_number(ds_b, "tx_dropped", 0, "device_stats,b");
  expect_number(ds_b["rejects"], "icrc_mismatch", 1, "device_stats,b.rejects");
  EXPECT_EQ(ds_b["rejects"].o.size(), size_t(wire::Reject::kCount) - 1);
  expect_qp_counters(ds_b, cb, "device_stats,b");  // one QP: its counters are the sum
  expect_qp_counters(query("/ndnic/device_stats,a"), ca, "device_stats,a");

  const Json qps = query("/ndnic/qps,a");
  ASSERT_EQ(qps.a.size(), 1u);
  EXPECT_EQ(qps.a[0].u, qa);

  const Json qs_a = query("/ndnic/qp_stats,a:" + std::to_string(qa));
  expect_number(qs_a, "qpn", qa, "qp_stats,a");
  EXPECT_EQ(qs_a["type"].s, "RC");
  EXPECT_EQ(qs_a["state"].s, "RTS");
  expect_qp_counters(qs_a, ca, "qp_stats,a");
  expect_number(qs_a, "retransmits", 2, "qp_stats,a");
  expect_number(qs_a, "timeouts", 1, "qp_stats,a");
  expect_number(qs_a, "rnr_naks_received", 1, "qp_stats,a");
  const Json qs_b = query("/ndnic/qp_stats,b:" + std::to_string(qb));
  expect_qp_counters(qs_b, cb, "qp_stats,b");
  expect_number(qs_b, "duplicates", 1, "qp_stats,b");
  expect_number(qs_b, "rnr_naks_sent", 1, "qp_stats,b");
  expect_number(qs_b, "invalidations", 1, "qp_stats,b");
  expect_number(qs_b, "rx_bytes", a_bytes, "qp_stats,b");
  // The QP number may be given in hex, and after a comma.
  std::ostringstream hex;
  hex << "/ndnic/qp_stats,b,0x" << std::hex << qb;
  EXPECT_EQ(query(hex.str()), qs_b);

  // A sample of the replies for the reader of the test log.
  for (const std::string& c : {std::string("/ndnic/devices"), std::string("/ndnic/port_stats,b"),
                               std::string("/ndnic/device_stats,b"), "/ndnic/qp_stats,b:" + std::to_string(qb)})
    std::printf("%s\n", client_.raw(c).c_str());
}

TEST_F(Telemetry, RegistryAndBadArguments) {
  connect_rc();
  EXPECT_FALSE(register_device("a", &a->dev, &a->port)) << "taken";
  EXPECT_FALSE(register_device("", &a->dev, &a->port));
  EXPECT_FALSE(register_device("has-dash", &a->dev, &a->port));
  EXPECT_FALSE(register_device(std::string(64, 'x'), &a->dev, &a->port));
  EXPECT_FALSE(register_device("c", nullptr, &a->port));
  ASSERT_TRUE(register_device("a_again_" + std::string(55, 'x'), &a->dev, &a->port));  // 63: fits
  EXPECT_EQ(query("/ndnic/devices").o.size(), 3u);
  EXPECT_FALSE(query("/ndnic/port_stats,a_again_" + std::string(55, 'x')).is_null());
  unregister_device("a_again_" + std::string(55, 'x'));
  unregister_device("never_registered");

  // Unknown devices and QPs, malformed parameters: null, as DPDK's own commands answer.
  for (const char* bad : {"/ndnic/port_stats", "/ndnic/port_stats,zz", "/ndnic/device_stats,",
                          "/ndnic/qps,zz", "/ndnic/qp_stats,a", "/ndnic/qp_stats,a:", "/ndnic/qp_stats,a:12x",
                          "/ndnic/qp_stats,zz:17", "/ndnic/qp_stats,a:99999"}) {
    const std::string reply = client_.raw(bad);
    EXPECT_NE(reply.find("null"), std::string::npos) << bad << " -> " << reply;
  }

  // Totals outlive the QPs; a destroyed QP is gone from the list.
  send_ab(100, 1);
  const uint32_t old_qpn = a->qp->qpn();
  const nic::QpCounters before = a->qp->counters();
  connect_rc();  // destroys both QPs, makes new ones
  const uint32_t new_qpn = a->qp->qpn();
  send_ab(50, 2);
  const Json qps = query("/ndnic/qps,a");
  ASSERT_EQ(qps.a.size(), 1u);
  EXPECT_EQ(qps.a[0].u, new_qpn);
  EXPECT_TRUE(query("/ndnic/qp_stats,a:" + std::to_string(old_qpn)).is_null());
  const Json ds = query("/ndnic/device_stats,a");
  expect_number(ds, "tx_packets", before.tx_packets + a->qp->counters().tx_packets, "device_stats,a");
  expect_number(ds, "tx_bytes", before.tx_bytes + a->qp->counters().tx_bytes, "device_stats,a");
  expect_qp_counters(query("/ndnic/qp_stats,a:" + std::to_string(new_qpn)), a->qp->counters(), "qp_stats,a");

  // Unregistered: gone from the list, and its commands answer null.
  unregister_device("b");
  EXPECT_FALSE(query("/ndnic/devices").has("b"));
  EXPECT_TRUE(query("/ndnic/port_stats,b").is_null());
  ASSERT_TRUE(register_device("b", &b->dev, &b->port));  // for TearDown's symmetry
}

TEST_F(Telemetry, DpdkTelemetryPyReadsTheSameReplies) {
  const std::string script = NDNIC_DPDK_TELEMETRY_PY;
  if (script.empty()) GTEST_SKIP() << "dpdk-telemetry.py not installed";
  connect_rc();
  send_ab(777, 1);
  // The script finds the socket from a file prefix and an instance number, as a user would
  // run it: <RUNTIME_DIRECTORY>/dpdk/<prefix>/dpdk_telemetry.v2[:instance].
  const std::filesystem::path dir = rte_eal_get_runtime_dir();
  const size_t colon = path_.rfind(':');
  const std::string instance = colon != std::string::npos && colon > path_.rfind('/') ? path_.substr(colon + 1) : "0";
  const std::vector<std::string> commands = {
      "/ndnic/devices", "/ndnic/port_stats,a", "/ndnic/device_stats,b", "/ndnic/qps,a",
      "/ndnic/qp_stats,b:" + std::to_string(b->qp->qpn())};
  std::string cmd = "printf '%s\\n'";
  for (const std::string& c : commands) cmd += " '" + c + "'";
  cmd += " | RUNTIME_DIRECTORY='" + dir.parent_path().parent_path().string() + "' python3 '" + script +
         "' -f '" + dir.filename().string() + "' -i " + instance + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << cmd << "\n" << out;
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(i, commands.size()) << "more replies than commands:\n" << out;
    Json from_script, ours = query(commands[i]);
    std::string why;
    ASSERT_TRUE(Json::parse(line, &from_script, &why)) << why << ": " << line;
    EXPECT_FALSE(ours.is_null()) << commands[i];
    EXPECT_EQ(from_script[commands[i].substr(0, commands[i].find(','))], ours) << commands[i] << ": " << line;
    i++;
  }
  EXPECT_EQ(i, commands.size()) << out;
}

TEST_F(Telemetry, StatsTextTable) {
  connect_rc();
  for (uint32_t len : {10u, 2000u}) send_ab(len, len);
  inject(ipv6_frame());
  ASSERT_TRUE(step_until([&] { return b->port.counters().dropped() == 1; }));
  // Polled by this thread without DeviceConfig::count_app_load: no loop is timed, and the table
  // has no load line.
  EXPECT_TRUE(b->dev.shard_loads().empty());
  const std::string text = stats_text(b->dev, b->port);
  std::printf("%s", text.c_str());
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 9u) << text;

  const glue::PortCounters pc = b->port.counters();
  const nic::QpCounters qc = b->qp->counters();
  auto words = [](const std::string& l) {
    std::vector<std::string> w;
    std::istringstream s(l);
    for (std::string x; s >> x;) w.push_back(x);
    return w;
  };
  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(mac, sizeof(mac), &b->port.mac());
  EXPECT_EQ(lines[0], std::string("port ") + std::to_string(b->port.port_id()) + " (" + b->port.driver() + "), 198.18.40.2, " + mac);
  EXPECT_EQ(words(lines[1]), (std::vector<std::string>{"packets", "bytes"}));
  EXPECT_EQ(words(lines[2]), (std::vector<std::string>{"rx", std::to_string(pc.rx_frames), std::to_string(pc.rx_bytes)}));
  EXPECT_EQ(words(lines[3]), (std::vector<std::string>{"tx", std::to_string(pc.tx_frames), std::to_string(pc.tx_bytes)}));
  EXPECT_NE(text.find("  drops 1 (ipv6 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("engine: rejects 0, unknown_qp 0,"), std::string::npos) << text;

  // The QP table: a header, one row per QP, the sum; every row as wide as the header.
  size_t head = 0;
  while (head < lines.size() && !lines[head].starts_with("  qp ")) head++;
  ASSERT_LT(head + 2, lines.size()) << text;
  EXPECT_EQ(words(lines[head]),
            (std::vector<std::string>{"qp", "type", "state", "tx_packets", "tx_bytes", "tx_zero_copy", "rx_packets", "rx_bytes",
                                      "retransmits", "timeouts", "rnr_naks_sent", "rnr_naks_received", "duplicates",
                                      "out_of_sequence", "invalidations", "naks_sent", "naks_received", "drops"}));
  const auto row = [](const std::string& qpn, std::vector<std::string> lead, const nic::QpCounters& c) {
    std::vector<std::string> w{qpn};
    w.insert(w.end(), lead.begin(), lead.end());
    for (uint64_t v : {c.tx_packets, c.tx_bytes, c.tx_zero_copy, c.rx_packets, c.rx_bytes, c.retransmits, c.timeouts,
                       c.rnr_naks_sent, c.rnr_naks_received, c.duplicates, c.out_of_sequence, c.invalidations})
      w.push_back(std::to_string(v));
    w.insert(w.end(), {"0/0/0/0", "0/0/0/0", "0/0"});
    return w;
  };
  EXPECT_EQ(words(lines[head + 1]), row(std::to_string(b->qp->qpn()), {"RC", "RTS"}, qc));
  EXPECT_EQ(words(lines[head + 2]), row("all", {}, qc));
  EXPECT_EQ(lines[head + 1].size(), lines[head].size());
  EXPECT_EQ(lines[head + 2].size(), lines[head].size());
  EXPECT_EQ(qc.rx_bytes, send_bytes(10, false) + send_bytes(2000, false));  // whole frames
}

TEST_F(Telemetry, ReadsWhileWorkerLcoresRun) {
  // The devices again, each on a worker lcore (1 and 2): the telemetry thread now reads
  // counters the lcores are writing, and QP lists the test thread is changing.
  unregister_device("a");
  unregister_device("b");
  unsigned lcore = 1;
  for (nic::testing::Node* n : {a.get(), b.get()}) {
    n->dev.close();
    n->qp = nullptr;
    n->mr = {};
    nic::DeviceConfig dc;
    dc.ports = {&n->port};
    dc.lcores = {lcore++};
    ASSERT_TRUE(n->dev.open(dc)) << n->dev.error();
    n->pd = n->dev.alloc_pd();
    n->scq = n->dev.create_cq(4096);
    n->rcq = n->dev.create_cq(4096);
  }
  ASSERT_TRUE(register_device("a", &a->dev, &a->port));
  ASSERT_TRUE(register_device("b", &b->dev, &b->port));
  connect_rc();

  std::atomic<bool> stop{false};
  std::atomic<unsigned> reads{0};
  std::string reader_error;
  std::thread reader;
  struct Join {  // also when an ASSERT leaves early
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop, reader};
  reader = std::thread([&] {
    Client c;
    if (!c.connect(path_)) {
      reader_error = c.error();
      return;
    }
    uint64_t last_tx = 0, last_rx = 0;
    while (!stop.load()) {
      const Json port = c.query("/ndnic/port_stats,b");
      const Json dev = c.query("/ndnic/device_stats,a");
      const Json qps = c.query("/ndnic/qps,a");
      if (port.is_null() || dev.is_null() || qps.kind != Json::Kind::kArray) {
        reader_error = "null reply: " + c.error();
        return;
      }
      for (const Json& q : qps.a) c.query("/ndnic/qp_stats,a:" + std::to_string(q.u));  // may be gone
      if (port["rx_packets"].u < last_rx || dev["tx_packets"].u < last_tx) {
        reader_error = "a counter went backwards";
        return;
      }
      last_rx = port["rx_packets"].u;
      last_tx = dev["tx_packets"].u;
      reads++;
    }
  });

  constexpr unsigned kMessages = 2000;
  constexpr unsigned kWindow = 32;
  std::vector<nic::Qp*> spare;
  unsigned posted = 0, done = 0, received = 0;
  for (unsigned i = 0; i < kWindow * 2; i++) ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, i)));
  unsigned recvs = kWindow * 2;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done < kMessages || received < kMessages) {
    ASSERT_LT(std::chrono::steady_clock::now(), end) << done << " sent, " << received << " received";
    while (posted < kMessages && posted - done < kWindow) ASSERT_TRUE(a->qp->post_send(send_wr(WrOpcode::kSend, *a, 0, 256, posted++)));
    Completion c[64];
    for (unsigned k = a->scq->poll(c, 64), j = 0; j < k; j++, done++) ASSERT_EQ(c[j].status, WcStatus::kSuccess);
    for (unsigned k = b->rcq->poll(c, 64), j = 0; j < k; j++, received++) {
      ASSERT_EQ(c[j].status, WcStatus::kSuccess);
      if (recvs < kMessages) {
        ASSERT_TRUE(b->qp->post_recv(recv_wr(*b, 0, 4096, recvs++)));
      }
    }
    // QPs come and go under the reader's feet.
    if (posted % 100 == 0 && spare.size() < 8) {
      nic::QpCaps caps;
      caps.send_cq = a->scq;
      caps.recv_cq = a->rcq;
      caps.pd = a->pd;
      spare.push_back(a->dev.create_qp(caps));
      ASSERT_NE(spare.back(), nullptr);
    } else if (posted % 100 == 50 && !spare.empty()) {
      a->dev.destroy_qp(spare.back());
      spare.pop_back();
    }
  }
  for (nic::Qp* q : spare) a->dev.destroy_qp(q);
  stop = true;
  reader.join();
  EXPECT_EQ(reader_error, "");
  EXPECT_GT(reads.load(), 0u);
  std::printf("telemetry reads while the lcores ran: %u\n", reads.load());

  // Every message has completed at both ends: nothing is in flight, the lcores poll on without
  // changing a counter, and the telemetry thread reads what the test thread reads. (A
  // retransmission on a CPU shared by three pollers is possible, hence no exact count.)
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const nic::QpCounters ca = a->qp->counters(), cb = b->qp->counters();
  EXPECT_GE(cb.rx_packets, kMessages);
  EXPECT_GE(cb.rx_bytes, uint64_t(kMessages) * 256);
  expect_qp_counters(query("/ndnic/qp_stats,b:" + std::to_string(b->qp->qpn())), cb, "qp_stats,b");
  expect_qp_counters(query("/ndnic/qp_stats,a:" + std::to_string(a->qp->qpn())), ca, "qp_stats,a");
  expect_qp_counters(query("/ndnic/device_stats,a"), a->dev.qp_totals(), "device_stats,a");
  expect_port(query("/ndnic/port_stats,b"), b->port.counters(), "port_stats,b");
  EXPECT_EQ(query("/ndnic/qps,a").a.size(), 1u);
}

}  // namespace
}  // namespace ndnic::telemetry::testing
