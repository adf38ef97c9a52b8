#include "tools/rc_pingpong/session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ndnic::rc_pingpong {
namespace {

// ibv_rc_pingpong's work request ids, used as bits of its "pending" mask.
constexpr uint64_t kRecvWrid = 1;
constexpr uint64_t kSendWrid = 2;
// Both sides send from and receive into buffers holding this byte (the original fills its
// buffer with it and never changes it), so every byte received can be checked.
constexpr uint8_t kFill = 0x7b;
// ibv_rc_pingpong's READ limits (pp_connect_ctx), both ways; its other attributes are
// raw_qp::rdma_core_attr's.
constexpr uint8_t kMaxRdAtomic = 1;
// The original waits forever; a test must not. Long enough for a guest under emulation.
constexpr auto kStall = std::chrono::seconds(30);

}  // namespace

Session::Session(const Options& o)
    : opts_(o), qp_(raw_qp::Voice{"rc_pingpong", "", kStall, [this](const raw_qp::Failure& f) { say(f); }}) {}

// ibv_rc_pingpong's messages, and ours where it has none.
void Session::say(const raw_qp::Failure& f) const {
  switch (f.step) {
    case raw_qp::Step::kNoMemory: std::fprintf(stderr, "Couldn't allocate work buf.\n"); break;
    case raw_qp::Step::kRegister: std::fprintf(stderr, "Couldn't register MR\n"); break;
    case raw_qp::Step::kCq: std::fprintf(stderr, "Couldn't create CQ\n"); break;
    case raw_qp::Step::kQp: std::fprintf(stderr, "Couldn't create QP\n"); break;
    case raw_qp::Step::kRtr: std::fprintf(stderr, "Failed to modify QP to RTR\n"); break;
    case raw_qp::Step::kRts: std::fprintf(stderr, "Failed to modify QP to RTS\n"); break;
    case raw_qp::Step::kPostRecv: std::fprintf(stderr, "Couldn't post receive (%u)\n", routs_); break;
    case raw_qp::Step::kPostSend: std::fprintf(stderr, "Couldn't post send\n"); break;
    case raw_qp::Step::kStatus:
      std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", nic::wc_status_name(f.wc->status),
                   int(f.wc->status), int(f.wc->wr_id));
      break;
    case raw_qp::Step::kStall:
      std::fprintf(stderr, "rc_pingpong: no completion for %lld s (sent %u, received %u)\n",
                   static_cast<long long>(kStall.count()), scnt_, rcnt_);
      break;
  }
}

bool Session::open() {
  if (!qp_.open_port(opts_.device, opts_.ipv4, opts_.capture, opts_.mtu)) return false;
  raw_qp::Shape shape;
  shape.bytes = std::max<uint64_t>(uint64_t(opts_.size) * 2, 1);  // a region is never empty
  shape.access = nic::kAccessLocalWrite;
  shape.send_cq = opts_.rx_depth + 1;
  shape.max_send_wr = 1;
  shape.max_recv_wr = opts_.rx_depth;
  if (!qp_.create(shape)) return false;
  std::memset(qp_.buf(), kFill, opts_.size);
  std::memset(qp_.buf() + opts_.size, 0, shape.bytes - opts_.size);
  if (!post_recvs(opts_.rx_depth)) return false;

  local_.lid = 0;  // RoCE has no LIDs
  local_.qpn = qp_.qpn();
  local_.psn = qp_.psn();
  if (opts_.gid_index >= 0) local_.gid = raw_qp::ipv4_mapped_gid(opts_.ipv4);
  return true;
}

bool Session::connect(const Peer& peer) {
  return qp_.connect({peer.dest.qpn, peer.dest.psn, peer.dest.gid, peer.tcp_ipv4},
                     raw_qp::rdma_core_attr(opts_.mtu, kMaxRdAtomic, kMaxRdAtomic));
}

bool Session::post_recvs(uint32_t n) {
  const uint64_t at = reinterpret_cast<uint64_t>(qp_.buf() + opts_.size);
  for (uint32_t i = 0; i < n; i++, routs_++)
    if (!qp_.post_recv(kRecvWrid, at, opts_.size)) return false;
  return true;
}

bool Session::post_send() {
  raw_qp::Request r;
  r.wr_id = kSendWrid;
  r.addr = reinterpret_cast<uint64_t>(qp_.buf());
  r.len = opts_.size;
  r.inline_small = true;  // as the original, so both send paths get exercised by size
  return qp_.post(r);
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
  uint8_t* r = qp_.buf() + opts_.size;
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
  scnt_ = rcnt_ = 0;
  if (client) {
    if (!post_send()) return false;
    pending |= kSendWrid;
  }
  const uint64_t start = raw_qp::now_ns();
  uint64_t last_progress = start;
  while (rcnt_ < opts_.iters || scnt_ < opts_.iters) {
    qp_.poll();
    nic::Completion wc[2];
    const unsigned n = qp_.send_cq().poll(wc, 2);  // the one CQ
    if (n > 0) last_progress = raw_qp::now_ns();
    else if (qp_.stalled(last_progress, "the ping-pong")) return false;
    for (unsigned i = 0; i < n; i++) {
      const nic::Completion& c = wc[i];
      if (!qp_.check(c, "the ping-pong")) return false;
      if (c.wr_id == kSendWrid) {
        scnt_++;
      } else if (c.wr_id == kRecvWrid) {
        if (!check_message(c)) return false;
        // Top the receive queue up when it runs low, as the original does.
        if (--routs_ <= 1 && !post_recvs(opts_.rx_depth - routs_)) return false;
        rcnt_++;
      } else {
        std::fprintf(stderr, "Completion for unknown wr_id %d\n", int(c.wr_id));
        return false;
      }
      pending &= ~c.wr_id;
      if (scnt_ < opts_.iters && pending == 0) {
        if (!post_send()) return false;
        pending = kRecvWrid | kSendWrid;
      }
    }
  }
  out->sent = scnt_;
  out->received = rcnt_;
  out->usec = double((raw_qp::now_ns() - start) / 1000);
  return true;
}

}  // namespace ndnic::rc_pingpong
