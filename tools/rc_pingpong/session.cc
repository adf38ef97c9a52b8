#include "tools/rc_pingpong/session.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>

namespace ndnic::rc_pingpong {
namespace {

using Clock = std::chrono::steady_clock;

// ibv_rc_pingpong's work request ids, used as bits of its "pending" mask.
constexpr uint64_t kRecvWrid = 1;
constexpr uint64_t kSendWrid = 2;
// Both sides send from and receive into buffers holding this byte (the original fills its
// buffer with it and never changes it), so every byte received can be checked.
constexpr uint8_t kFill = 0x7b;
// ibv_rc_pingpong's QP attributes (pp_connect_ctx): what rxe will see from its peer.
constexpr uint8_t kTimeout = 14;
constexpr uint8_t kRetryCnt = 7;
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;
constexpr uint8_t kMaxRdAtomic = 1;
// The largest RoCEv2 header stack around a payload on IPv4: IP, UDP, BTH, RETH, pad, ICRC.
constexpr uint32_t kRoceOverhead = 20 + 8 + 12 + 16 + 3 + 4;
constexpr uint16_t kEthMtu = 1500;
constexpr uint32_t kArpWaitMs = 3000;
// The original waits forever; a test must not. Long enough for a guest under emulation.
constexpr auto kStall = std::chrono::seconds(30);
// After the last completion the peer may still need our ACK of its last message (ours could
// be lost or still queued) or retransmit a request: a NIC keeps answering after the program's
// loop ends, so we poll a little longer than rxe's first retransmission (~67 ms at timeout 14).
constexpr auto kLinger = std::chrono::milliseconds(300);

bool mtu_fits(uint32_t path_mtu) { return path_mtu + kRoceOverhead <= kEthMtu; }

}  // namespace

Session::~Session() {
  if (qp_) dev_.destroy_qp(qp_);
  if (cq_) dev_.destroy_cq(cq_);
  if (mr_.lkey) dev_.deregister_mr(mr_.lkey);
  if (dev_open_) dev_.close();
  port_.close();
}

bool Session::open() {
  if (!mtu_fits(opts_.mtu)) {
    std::fprintf(stderr, "rc_pingpong: path MTU %u does not fit the port's %u-byte Ethernet MTU\n",
                 opts_.mtu, kEthMtu);
    return false;
  }
  glue::PortConfig pc;
  pc.device = opts_.device;
  pc.ipv4 = opts_.ipv4;
  pc.mtu = kEthMtu;
  pc.capture_path = opts_.capture;
  if (!port_.open(pc)) {
    std::fprintf(stderr, "rc_pingpong: port %s: %s\n", opts_.device.c_str(), port_.error().c_str());
    return false;
  }
  nic::DeviceConfig dc;
  dc.ports = {&port_};
  if (!dev_.open(dc)) {
    std::fprintf(stderr, "rc_pingpong: device: %s\n", dev_.error().c_str());
    return false;
  }
  dev_open_ = true;
  const uint32_t pd = dev_.alloc_pd();
  buf_.assign(std::max<size_t>(size_t(opts_.size) * 2, 1), kFill);  // a region is never empty
  std::fill(buf_.begin() + opts_.size, buf_.end(), 0);
  if (!dev_.register_mr(pd, buf_.data(), buf_.size(), nic::kAccessLocalWrite, &mr_)) {
    std::fprintf(stderr, "Couldn't register MR\n");
    return false;
  }
  cq_ = dev_.create_cq(opts_.rx_depth + 1);
  if (!cq_) {
    std::fprintf(stderr, "Couldn't create CQ\n");
    return false;
  }
  nic::QpCaps caps;
  caps.send_cq = caps.recv_cq = cq_;
  caps.pd = pd;
  caps.max_send_wr = 1;
  caps.max_recv_wr = opts_.rx_depth;
  caps.max_send_sge = caps.max_recv_sge = 1;
  qp_ = dev_.create_qp(caps);
  if (!qp_ || !qp_->modify(nic::QpState::kInit, {})) {
    std::fprintf(stderr, "Couldn't create QP\n");
    return false;
  }
  if (!post_recvs(opts_.rx_depth)) return false;

  std::random_device rd;
  local_.lid = 0;  // RoCE has no LIDs
  local_.qpn = qp_->qpn();
  local_.psn = rd() & 0xffffff;
  if (opts_.gid_index >= 0) local_.gid = ipv4_mapped_gid(opts_.ipv4);
  return true;
}

bool Session::connect(const Peer& peer) {
  const uint32_t ip = gid_ipv4(peer.dest.gid).value_or(peer.tcp_ipv4);
  nic::QpAttr a;
  a.remote_qpn = peer.dest.qpn;
  a.rq_psn = peer.dest.psn;
  a.sq_psn = local_.psn;
  a.path_mtu = opts_.mtu;
  a.dest_ipv4 = ip;
  a.timeout = kTimeout;
  a.retry_cnt = kRetryCnt;
  a.rnr_retry = kRnrRetry;
  a.min_rnr_timer = kMinRnrTimer;
  a.max_rd_atomic = a.max_dest_rd_atomic = kMaxRdAtomic;
  // Resolved before connecting (the engine could learn it later): a peer that does not
  // answer ARP fails here with a clear message instead of as a retry-exceeded completion.
  rte_ether_addr mac;
  if (port_.resolve_wait(ip, &mac, kArpWaitMs) != glue::Resolve::kResolved) {
    std::fprintf(stderr, "rc_pingpong: no ARP reply from %u.%u.%u.%u\n", ip >> 24, (ip >> 16) & 255,
                 (ip >> 8) & 255, ip & 255);
    return false;
  }
  std::memcpy(a.dest_mac, mac.addr_bytes, 6);
  if (!qp_->modify(nic::QpState::kRtr, a)) {
    std::fprintf(stderr, "Failed to modify QP to RTR\n");
    return false;
  }
  if (!qp_->modify(nic::QpState::kRts, a)) {
    std::fprintf(stderr, "Failed to modify QP to RTS\n");
    return false;
  }
  return true;
}

bool Session::post_recvs(uint32_t n) {
  nic::RecvWr wr{};
  wr.wr_id = kRecvWrid;
  wr.num_sge = opts_.size ? 1 : 0;
  wr.sge[0] = {reinterpret_cast<uint64_t>(buf_.data() + opts_.size), opts_.size, mr_.lkey};
  for (uint32_t i = 0; i < n; i++, routs_++) {
    if (!qp_->post_recv(wr)) {
      std::fprintf(stderr, "Couldn't post receive (%u)\n", routs_);
      return false;
    }
  }
  return true;
}

bool Session::post_send() {
  nic::SendWr wr{};
  wr.wr_id = kSendWrid;
  wr.opcode = nic::WrOpcode::kSend;
  wr.flags = nic::kWrSignaled;
  // As the original: inline when the message fits, so both send paths get exercised by size.
  if (opts_.size <= nic::kMaxInline) {
    wr.flags |= nic::kWrInline;
    wr.inline_len = opts_.size;
    std::memcpy(wr.inline_data, buf_.data(), opts_.size);
  } else {
    wr.num_sge = 1;
    wr.sge[0] = {reinterpret_cast<uint64_t>(buf_.data()), opts_.size, mr_.lkey};
  }
  if (!qp_->post_send(wr)) {
    std::fprintf(stderr, "Couldn't post send\n");
    return false;
  }
  return true;
}

// ibv_rc_pingpong only counts completions; we also check each message's length and bytes.
// The next message cannot arrive before our next send, so clearing the buffer here is safe.
bool Session::check_message(const nic::Completion& c) {
  messages_++;
  if (c.byte_len != opts_.size) {
    std::fprintf(stderr, "rc_pingpong: message %u has %u bytes, expected %u\n", messages_, c.byte_len,
                 opts_.size);
    return false;
  }
  uint8_t* r = buf_.data() + opts_.size;
  const uint8_t* bad = std::find_if(r, r + opts_.size, [](uint8_t b) { return b != kFill; });
  if (bad != r + opts_.size) {
    std::fprintf(stderr, "rc_pingpong: message %u: byte %td is 0x%02x, expected 0x%02x\n", messages_,
                 bad - r, *bad, kFill);
    return false;
  }
  std::memset(r, 0, opts_.size);
  return true;
}

bool Session::run(bool client, Figures* out) {
  uint64_t pending = kRecvWrid;
  uint32_t scnt = 0, rcnt = 0;
  if (client) {
    if (!post_send()) return false;
    pending |= kSendWrid;
  }
  const auto start = Clock::now();
  auto last_progress = start;
  while (rcnt < opts_.iters || scnt < opts_.iters) {
    dev_.poll();
    nic::Completion wc[2];
    const unsigned n = cq_->poll(wc, 2);
    if (n > 0) last_progress = Clock::now();
    else if (Clock::now() - last_progress > kStall) {
      std::fprintf(stderr, "rc_pingpong: no completion for %lld s (sent %u, received %u)\n",
                   static_cast<long long>(kStall.count()), scnt, rcnt);
      return false;
    }
    for (unsigned i = 0; i < n; i++) {
      const nic::Completion& c = wc[i];
      if (c.status != nic::WcStatus::kSuccess) {
        std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", nic::wc_status_name(c.status),
                     int(c.status), int(c.wr_id));
        return false;
      }
      if (c.wr_id == kSendWrid) {
        scnt++;
      } else if (c.wr_id == kRecvWrid) {
        if (!check_message(c)) return false;
        // Top the receive queue up when it runs low, as the original does.
        if (--routs_ <= 1 && !post_recvs(opts_.rx_depth - routs_)) return false;
        rcnt++;
      } else {
        std::fprintf(stderr, "Completion for unknown wr_id %d\n", int(c.wr_id));
        return false;
      }
      pending &= ~c.wr_id;
      if (scnt < opts_.iters && pending == 0) {
        if (!post_send()) return false;
        pending = kRecvWrid | kSendWrid;
      }
    }
  }
  out->sent = scnt;
  out->received = rcnt;
  out->usec = double(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
  return true;
}

void Session::linger() {
  const auto end = Clock::now() + kLinger;
  while (Clock::now() < end) dev_.poll();
}

std::string Session::counters() const {
  const nic::Qp::Counters c = qp_->counters();
  char b[256];
  std::snprintf(b, sizeof b,
                "tx %" PRIu64 " rx %" PRIu64 " packets, retransmits %" PRIu64 ", timeouts %" PRIu64
                ", duplicates %" PRIu64 ", out of sequence %" PRIu64 ", rnr naks sent %" PRIu64,
                c.tx_packets, c.rx_packets, c.retransmits, c.timeouts, c.duplicates, c.out_of_sequence,
                c.rnr_naks_sent);
  return b;
}

}  // namespace ndnic::rc_pingpong
