#include "tests/nic/xproc/peer.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include <rte_mempool.h>

namespace ndnic::nic::xproc {
namespace {

constexpr uint32_t kAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
// The client's first PSNs sit just below the 24-bit wrap, so phase 1 crosses it.
constexpr uint32_t kServerPsn = 0x123400, kClientPsn = 0x345600;
constexpr uint32_t kMbufs = 8191;  ///< a 1 MiB READ's responses at MTU 1024 plus the rings

}  // namespace

std::string Endpoint::line() const {
  std::ostringstream s;
  s << "endpoint " << addr << ' ' << rkey;
  for (uint32_t q = 0; q < kQps; q++) s << ' ' << qpn[q] << ' ' << psn[q];
  return s.str();
}

bool Endpoint::parse(const std::string& line) {
  std::istringstream s(line);
  std::string word;
  s >> word >> addr >> rkey;
  for (uint32_t q = 0; q < kQps; q++) s >> qpn[q] >> psn[q];
  return word == "endpoint" && !s.fail();
}

bool Peer::open(const Options& o) {
  glue::PortConfig pc;
  pc.device = o.device;
  pc.ipv4 = o.ip;
  pc.capture_path = o.capture;
  pc.mbuf_data_room = 4096 + 256 + RTE_PKTMBUF_HEADROOM;  // one 4096-byte payload frame per mbuf
  pc.mbufs = kMbufs;
  // The peer process may come up a few seconds later: keep asking for its MAC meanwhile.
  pc.arp_retry_ms = 100;
  pc.arp_retries = 100;
  if (!port_.open(pc)) return fail("cannot open " + o.device + ": " + port_.error());
  DeviceConfig dc;
  dc.ports = {&port_};
  if (!dev_.open(dc)) return fail("cannot open the device: " + dev_.error());
  const uint32_t pd = dev_.alloc_pd();
  buf_.assign(kBufSize, 0);
  if (!dev_.register_mr(pd, buf_.data(), buf_.size(), kAccess, &mr_)) return fail("register_mr failed");
  peer_ip_ = o.peer_ip;
  psn_base_ = o.role == "server" ? kServerPsn : kClientPsn;
  for (uint32_t q = 0; q < kQps; q++) {
    scq_[q] = dev_.create_cq(4096);
    rcq_[q] = dev_.create_cq(4096);
    if (!scq_[q] || !rcq_[q]) return fail("create_cq failed");
    QpCaps caps;
    caps.send_cq = scq_[q];
    caps.recv_cq = rcq_[q];
    caps.pd = pd;
    caps.max_send_wr = 1024;
    caps.max_recv_wr = 1024;
    qp_[q] = dev_.create_qp(caps);
    if (!qp_[q] || !qp_[q]->modify(QpState::kInit, {})) return fail("create_qp / INIT failed");
  }
  if (o.faults > 0) {
    // Each side faults its own TX only: both directions see the rate once, not twice.
    faults_.seed = o.role == "server" ? 20261121 : 20261122;
    faults_.tx = {o.faults, o.faults, o.faults, o.faults};
    dev_.set_faults(&faults_);
  }
  std::printf("%s: %s %s, mac %02x:%02x:%02x:%02x:%02x:%02x, QPNs %u %u %u\n", o.role.c_str(),
              port_.driver().c_str(), o.device.c_str(), port_.mac().addr_bytes[0], port_.mac().addr_bytes[1],
              port_.mac().addr_bytes[2], port_.mac().addr_bytes[3], port_.mac().addr_bytes[4],
              port_.mac().addr_bytes[5], qp_[0]->qpn(), qp_[1]->qpn(), qp_[2]->qpn());
  return true;
}

void Peer::close() {
  dev_.close();
  port_.close();
}

Endpoint Peer::local() const {
  Endpoint e;
  e.addr = reinterpret_cast<uint64_t>(buf_.data());
  e.rkey = mr_.rkey;
  for (uint32_t q = 0; q < kQps; q++) {
    e.qpn[q] = qp_[q]->qpn();
    e.psn[q] = psn_base_ + q * 0x10;
  }
  return e;
}

bool Peer::connect(const Endpoint& remote) {
  remote_ = remote;
  const Endpoint me = local();
  for (uint32_t q = 0; q < kQps; q++) {
    QpAttr at;
    at.remote_qpn = remote.qpn[q];
    at.sq_psn = me.psn[q];
    at.rq_psn = remote.psn[q];
    at.path_mtu = kMtu[q];
    at.dest_ipv4 = peer_ip_;  // dest_mac stays zero: the requester resolves it by ARP
    // With faults 16.7 ms, so that losses recover quickly; without, the default 67 ms. Two
    // processes on a loaded machine can each miss the other for tens of milliseconds: 4.2 ms
    // ran the 7 retries out with nothing lost, and with 1% lost in 1 to 3 runs of 12 at load
    // 7 on 2 CPUs (a 1 MiB READ: 8 timeouts in a row without progress).
    at.timeout = faults_.tx.any() ? 12 : 14;
    at.min_rnr_timer = 1;  // 0.01 ms
    if (!qp_[q]->modify(QpState::kRtr, at) || !qp_[q]->modify(QpState::kRts, at))
      return fail("QP " + std::to_string(q) + ": RTR/RTS refused");
  }
  return true;
}

bool Peer::wait(Cq* cq, size_t n, std::vector<Completion>* out, int ms) {
  const size_t want = out->size() + n;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (out->size() < want) {
    if (std::chrono::steady_clock::now() > end) return false;
    dev_.poll();
    Completion c[64];
    const unsigned k = cq->poll(c, unsigned(std::min<size_t>(64, want - out->size())));
    out->insert(out->end(), c, c + k);
  }
  return true;
}

RecvWr Peer::recv_wr(uint32_t q, uint64_t off, uint32_t len, uint64_t wr_id) {
  RecvWr wr{};
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sge[0] = sge(q, off, len);
  return wr;
}

void Peer::print_counters(const char* who) {
  for (uint32_t q = 0; q < kQps; q++) {
    if (!qp_[q]) return;  // open() failed part way
    const Qp::Counters c = qp_[q]->counters();
    std::printf("%s: QP %u (MTU %u): tx %" PRIu64 " rx %" PRIu64 " packets, retransmits %" PRIu64
                ", timeouts %" PRIu64 ", PSN NAKs sent/received %" PRIu64 "/%" PRIu64
                ", RNR NAKs sent/received %" PRIu64 "/%" PRIu64 ", duplicates %" PRIu64
                ", out-of-sequence %" PRIu64 "\n",
                who, q, kMtu[q], c.tx_packets, c.rx_packets, c.retransmits, c.timeouts, c.naks_sent[0],
                c.naks_received[0], c.rnr_naks_sent, c.rnr_naks_received, c.duplicates, c.out_of_sequence);
  }
  const Device::Counters dc = dev_.counters();
  std::printf("%s: engine: %" PRIu64 " frames the port did not take (lost), %" PRIu64 " rejected, %" PRIu64
              " for no QP\n", who, dc.tx_dropped, dc.rejected, dc.unknown_qp);
  const glue::PortCounters pc = port_.counters();
  std::printf("%s: port: rx %" PRIu64 " frames (%" PRIu64 " RoCE, %" PRIu64 " ARP, %" PRIu64
              " dropped), tx %" PRIu64 " frames; mbufs free %u of %u\n",
              who, pc.rx_frames, pc.rx_roce, pc.rx_arp, pc.dropped(), pc.tx_frames,
              rte_mempool_avail_count(port_.mempool()), port_.mempool()->size);
}

}  // namespace ndnic::nic::xproc
