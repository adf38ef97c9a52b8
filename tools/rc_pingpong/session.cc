#include "tools/rc_pingpong/session.h"

#include <algorithm>
#include <chrono>
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
// The original waits forever; a test must not. Long enough for a guest under emulation.
constexpr auto kStall = std::chrono::seconds(30);

}  // namespace

Session::~Session() {
  if (qp_) node_.dev().destroy_qp(qp_);
  if (cq_) node_.dev().destroy_cq(cq_);
  if (mr_.lkey) node_.dev().deregister_mr(mr_.lkey);
}

bool Session::open() {
  if (!engine_port::mtu_fits(opts_.mtu)) {
    std::fprintf(stderr, "rc_pingpong: path MTU %u does not fit the port's %u-byte Ethernet MTU\n",
                 opts_.mtu, engine_port::kEthMtu);
    return false;
  }
  if (!node_.open(opts_.device, opts_.ipv4, opts_.capture)) {
    std::fprintf(stderr, "rc_pingpong: %s\n", node_.error().c_str());
    return false;
  }
  const uint32_t pd = node_.dev().alloc_pd();
  buf_.assign(std::max<size_t>(size_t(opts_.size) * 2, 1), kFill);  // a region is never empty
  std::fill(buf_.begin() + opts_.size, buf_.end(), 0);
  if (!node_.dev().register_mr(pd, buf_.data(), buf_.size(), nic::kAccessLocalWrite, &mr_)) {
    std::fprintf(stderr, "Couldn't register MR\n");
    return false;
  }
  cq_ = node_.dev().create_cq(opts_.rx_depth + 1);
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
  qp_ = node_.dev().create_qp(caps);
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
  if (!node_.resolve(ip, a.dest_mac)) {
    std::fprintf(stderr, "rc_pingpong: no ARP reply from %u.%u.%u.%u\n", ip >> 24, (ip >> 16) & 255,
                 (ip >> 8) & 255, ip & 255);
    return false;
  }
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
    node_.poll();
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
  node_.linger();
}

std::string Session::counters() const {
  return engine_port::counters_text(*qp_);
}

}  // namespace ndnic::rc_pingpong
