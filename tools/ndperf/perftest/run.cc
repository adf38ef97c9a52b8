#include "tools/ndperf/perftest/run.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>

namespace ndnic::ndperf::perftest {
namespace {

constexpr uint32_t kCqEntries = 2048;
constexpr uint32_t kSqDepth = 256;
constexpr uint32_t kPollBatch = 16;  ///< CTX_POLL_BATCH

using raw_qp::now_ns;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// perftest's INC: a message's stride in the cycle buffer.
uint64_t stride_of(uint32_t size, uint32_t cache_line) { return round_up(size, cache_line); }

}  // namespace

Rdma::Rdma(const PerftestOptions& o)
    : opts_(o),
      qp_(raw_qp::Voice{"ndperf", " (the peer's GID; run perftest with -x on its RoCE v2 IPv4 GID)",
                        std::chrono::seconds(o.timeout_s), [this](const raw_qp::Failure& f) { say(f); }}) {}

void Rdma::say(const raw_qp::Failure& f) const {
  switch (f.step) {
    case raw_qp::Step::kNoMemory:
      std::fprintf(stderr, "ndperf: no memory for a %" PRIu64 "-byte buffer\n", buf_size_);
      break;
    case raw_qp::Step::kRegister:
      std::fprintf(stderr, "ndperf: couldn't register the %" PRIu64 "-byte buffer\n", buf_size_);
      break;
    case raw_qp::Step::kCq: std::fprintf(stderr, "ndperf: couldn't create the CQs\n"); break;
    case raw_qp::Step::kQp: std::fprintf(stderr, "ndperf: couldn't create the QP\n"); break;
    case raw_qp::Step::kRtr:
    case raw_qp::Step::kRts: std::fprintf(stderr, "ndperf: couldn't move the QP to RTR/RTS\n"); break;
    case raw_qp::Step::kPostRecv: std::fprintf(stderr, "ndperf: couldn't post receive %u\n", recvs_posted_); break;
    case raw_qp::Step::kPostSend: std::fprintf(stderr, "ndperf: couldn't post request %" PRIu64 "\n", f.wr_id); break;
    case raw_qp::Step::kStatus:
      std::fprintf(stderr, "ndperf: %s completed with %s (wr_id %" PRIu64 ")\n", f.what,
                   nic::wc_status_name(f.wc->status), f.wc->wr_id);
      break;
    case raw_qp::Step::kStall:
      std::fprintf(stderr, "ndperf: %s: nothing for %u s (the peer stopped, or is not running the same test)\n",
                   f.what, opts_.timeout_s);
      break;
  }
}

bool Rdma::open_port() {
  return qp_.open_port(opts_.device, opts_.ipv4, opts_.capture, opts_.mtu);
}

bool Rdma::create(const Channel::Agreed& agreed) {
  cache_line_ = agreed.cache_line;
  cycle_buffer_ = agreed.cycle_buffer;
  half_ = round_up(std::max<uint64_t>(opts_.size, cycle_buffer_), cache_line_);
  buf_size_ = half_ * 2;
  raw_qp::Shape shape;
  shape.bytes = buf_size_;
  shape.access = nic::kAccessLocalWrite | nic::kAccessRemoteWrite | nic::kAccessRemoteRead;
  shape.send_cq = shape.recv_cq = kCqEntries;
  shape.max_send_wr = kSqDepth;
  shape.max_recv_wr = kDefaultRxDepth;
  if (!qp_.create(shape)) return false;
  // perftest zeroes write_lat's buffer (its poll byte must start at 0) and fills the others
  // with rand(); ours get a fixed pattern instead, the same on every run.
  uint8_t* buf = qp_.buf();
  if (opts_.test.verb == Verb::kWrite && opts_.test.kind == Kind::kLat) {
    std::memset(buf, 0, buf_size_);
  } else {
    std::mt19937 gen(0x6e646e69);  // "ndni"
    for (uint64_t i = 0; i < buf_size_; i++) buf[i] = uint8_t(gen());
  }
  local_.lid = 0;  // RoCE: no LIDs, as rxe reports
  local_.out_reads = opts_.test.verb == Verb::kRead ? kOutReads : 1;  // perftest: 1 unless READ
  local_.qpn = qp_.qpn();
  local_.psn = qp_.psn();
  local_.rkey = qp_.rkey();
  local_.vaddr = reinterpret_cast<uint64_t>(peer_area());
  local_.gid = raw_qp::ipv4_mapped_gid(opts_.ipv4);
  local_.srqn = 0;
  stale_.assign(kMaxSweepExp + 2, 0);
  stale_set_.assign(kMaxSweepExp + 2, false);
  return true;
}

bool Rdma::connect(const Dest& peer, uint32_t tcp_ipv4) {
  peer_ = peer;
  // perftest uses the peer's out_reads; a peer that allows more than we keep gets our most.
  const auto rd_atomic = uint8_t(std::clamp<uint16_t>(peer.out_reads, 1, kOutReads));
  return qp_.connect({peer.qpn, peer.psn, peer.gid, tcp_ipv4},
                     raw_qp::rdma_core_attr(opts_.mtu, rd_atomic, uint8_t(local_.out_reads)));
}

bool Rdma::post_recv(uint32_t size) {
  if (!qp_.post_recv(recvs_posted_, reinterpret_cast<uint64_t>(peer_area()), size)) return false;
  recvs_posted_++;
  return true;
}

bool Rdma::post(nic::WrOpcode op, uint32_t size, uint64_t local_addr, uint64_t wr_id) {
  raw_qp::Request r;
  r.op = op;
  r.wr_id = wr_id;
  r.addr = local_addr;
  r.len = size;
  if (op != nic::WrOpcode::kSend) {
    r.remote_addr = peer_.vaddr;
    r.rkey = peer_.rkey;
  }
  return qp_.post(r);
}

bool Rdma::wait_send_completion(nic::Completion* c) {
  const uint64_t t0 = now_ns();
  for (;;) {
    qp_.poll();
    if (qp_.send_cq().poll(c, 1) == 1) return qp_.check(*c, "a request");
    if (qp_.stalled(t0, "waiting for a request's completion")) return false;
  }
}

bool Rdma::post_first_receives(uint32_t size) {
  recvs_posted_ = 0;
  const uint32_t depth = std::min<uint64_t>(kDefaultRxDepth, opts_.iters);  // force_dependecies
  for (uint32_t i = 0; i < depth; i++)
    if (!post_recv(size)) return false;
  return true;
}

// The READ slots: perftest walks its buffer in cache-line-rounded steps while a message fits
// half the cycle buffer; each slot keeps the last READ that landed in it.
bool Rdma::bw_requester(uint32_t size, BwSamples* out) {
  const uint64_t n = opts_.iters;
  const uint32_t depth = uint32_t(std::min<uint64_t>(kDefaultTxDepth, n));
  out->size = size;
  out->iters = n;
  out->cq_mod = std::min(kDefaultCqMod, depth);
  // force_dependecies: large messages are not moderated (except under -a).
  if (size > 8192 && !opts_.all) out->cq_mod = 1;
  out->posted.assign(n, 0);
  out->completed.assign(n, 0);
  const bool read = opts_.test.verb == Verb::kRead;
  const nic::WrOpcode op = opts_.test.verb == Verb::kSend ? nic::WrOpcode::kSend
                           : read                          ? nic::WrOpcode::kRead
                                                           : nic::WrOpcode::kWrite;
  const uint64_t stride = stride_of(size, cache_line_);
  const uint32_t slots = size <= cycle_buffer_ / 2 ? uint32_t(std::min<uint64_t>(half_ / stride, n)) : 1;
  if (read) std::memset(send_area(), 0, std::min<uint64_t>(half_, uint64_t(slots) * stride));
  uint64_t posted = 0, done = 0, last = now_ns();
  nic::Completion wc[kPollBatch];
  while (done < n) {
    while (posted < n && posted - done < depth) {
      const uint64_t addr = reinterpret_cast<uint64_t>(send_area()) + (posted % slots) * stride;
      out->posted[posted] = now_ns();
      if (!post(op, size, addr, posted)) return false;
      posted++;
    }
    qp_.poll();
    const unsigned k = qp_.send_cq().poll(wc, kPollBatch);
    if (k) last = now_ns();
    for (unsigned i = 0; i < k; i++) {
      if (!qp_.check(wc[i], "a request")) return false;
      out->completed[done++] = last;
    }
    if (!k && qp_.stalled(last, "bandwidth test")) return false;
  }
  return read ? check_reads(size, slots, uint32_t(stride)) : true;
}

// Every slot must hold the same bytes: the peer's buffer at its vaddr, which nobody writes.
// The first READ of the run becomes the reference; a larger size must extend it.
bool Rdma::check_reads(uint32_t size, uint32_t slots, uint32_t stride) {
  const uint8_t* first = send_area();
  const size_t known = std::min<size_t>(reference_.size(), size);
  if (known && std::memcmp(first, reference_.data(), known) != 0) {
    std::fprintf(stderr, "ndperf: READ of %u bytes: not the bytes the earlier READs returned\n", size);
    return false;
  }
  if (reference_.size() < size) reference_.assign(first, first + size);
  for (uint32_t s = 1; s < slots; s++) {
    if (std::memcmp(first + uint64_t(s) * stride, reference_.data(), size) != 0) {
      std::fprintf(stderr, "ndperf: READ of %u bytes into slot %u differs from slot 0\n", size, s);
      return false;
    }
  }
  return true;
}

bool Rdma::send_bw_receiver(uint32_t size, BwSamples* out) {
  const uint64_t n = opts_.iters;
  const uint32_t depth = recvs_posted_;
  out->size = size;
  out->iters = n;
  out->no_peak = true;  // perftest's send_bw server: first receive to last, no peak
  uint64_t got = 0, last = now_ns(), first_rx = 0;
  nic::Completion wc[kPollBatch];
  while (got < n) {
    qp_.poll();
    const unsigned k = qp_.recv_cq().poll(wc, kPollBatch);
    if (k) {
      last = now_ns();
      if (!first_rx) first_rx = last;
    }
    for (unsigned i = 0; i < k; i++) {
      if (!qp_.check(wc[i], "a receive")) return false;
      if (wc[i].byte_len != size) {
        std::fprintf(stderr, "ndperf: message %" PRIu64 " has %u bytes, the size is %u (same -s on both sides?)\n",
                     got, wc[i].byte_len, size);
        return false;
      }
      got++;
      // run_iter_bw_server posts again only while the total stays within the iterations.
      if (got + depth <= n && !post_recv(size)) return false;
    }
    if (!k && qp_.stalled(last, "send_bw receiver")) return false;
  }
  out->posted = {first_rx};
  out->completed = {last};
  return true;
}

bool Rdma::send_lat(uint32_t size, bool client, LatSamples* out) {
  const uint64_t n = opts_.iters;
  const uint32_t depth = recvs_posted_;
  out->size = size;
  out->posted.assign(n, 0);
  uint64_t scnt = 0, rcnt = 0, sends_done = 0;
  nic::Completion c;
  reference_.clear();
  while (scnt < n || rcnt < n) {
    if (rcnt < n && !(scnt < 1 && client)) {
      const uint64_t t0 = now_ns();
      for (;;) {
        qp_.poll();
        if (qp_.recv_cq().poll(&c, 1) == 1) break;
        nic::Completion sc;
        if (qp_.send_cq().poll(&sc, 1) == 1) {
          if (!qp_.check(sc, "a SEND")) return false;
          sends_done++;
        }
        if (qp_.stalled(t0, "send_lat, waiting for the peer's message")) return false;
      }
      if (!qp_.check(c, "a receive")) return false;
      if (c.byte_len != size) {
        std::fprintf(stderr, "ndperf: message %" PRIu64 " has %u bytes, the size is %u (same -s on both sides?)\n",
                     rcnt, c.byte_len, size);
        return false;
      }
      const uint8_t* got = peer_area();
      if (reference_.empty()) {
        reference_.assign(got, got + size);
      } else if (std::memcmp(got, reference_.data(), size) != 0) {
        std::fprintf(stderr, "ndperf: message %" PRIu64 " of %u bytes differs from the first (the peer sends one buffer)\n",
                     rcnt, size);
        return false;
      }
      rcnt++;
      if (rcnt + depth <= n && !post_recv(size)) return false;
    }
    if (scnt < n) {
      out->posted[scnt] = now_ns();
      if (!post(nic::WrOpcode::kSend, size, reinterpret_cast<uint64_t>(send_area()), scnt)) return false;
      scnt++;
    }
  }
  while (sends_done < n) {
    if (!wait_send_completion(&c)) return false;
    sends_done++;
  }
  return true;
}

bool Rdma::write_lat(uint32_t size, bool client, LatSamples* out) {
  const uint64_t n = opts_.iters;
  out->size = size;
  out->posted.assign(n, 0);
  volatile uint8_t* poll_byte = peer_area() + size - 1;
  uint8_t* post_byte = send_area() + size - 1;
  uint64_t scnt = 0, rcnt = 0;
  nic::Completion c;
  while (scnt < n || rcnt < n) {
    if (rcnt < n && !(scnt < 1 && !client)) {
      rcnt++;
      const uint64_t t0 = now_ns();
      while (*poll_byte != uint8_t(rcnt)) {
        qp_.poll();
        if (qp_.stalled(t0, "write_lat, waiting for the peer's write")) return false;
      }
      // The size's last message is checked whole before anything else is posted: the
      // peer writes again (the next size) only after our next write.
      if (rcnt == n) {
        const uint8_t* got = peer_area();
        for (uint32_t pos = 0; pos < size; pos++) {
          uint8_t want = 0;
          if (pos == size - 1) {
            want = uint8_t(rcnt);
          } else if (((pos + 1) & pos) == 0) {  // pos + 1 a power of two: an earlier size's last byte
            const int exp = __builtin_ctz(pos + 1);
            if (stale_set_[size_t(exp)]) want = stale_[size_t(exp)];
          }
          if (got[pos] != want) {
            std::fprintf(stderr, "ndperf: write_lat %u B, message %" PRIu64 ": byte %u is 0x%02x, expected 0x%02x\n",
                         size, rcnt, pos, got[pos], want);
            return false;
          }
        }
      }
    }
    if (scnt < n) {
      out->posted[scnt] = now_ns();
      *post_byte = uint8_t(++scnt);
      if (!post(nic::WrOpcode::kWrite, size, reinterpret_cast<uint64_t>(send_area()), scnt)) return false;
      if (!wait_send_completion(&c)) return false;  // as run_iter_lat_write: one at a time
    }
  }
  // The peer's send buffer keeps this size's last counter at its last byte: under -a it comes
  // along with every larger size.
  if (size >= 2 && (size & (size - 1)) == 0) {
    const int exp = __builtin_ctz(size);
    stale_[size_t(exp)] = uint8_t(n);
    stale_set_[size_t(exp)] = true;
  }
  return true;
}

bool Rdma::read_lat(uint32_t size, LatSamples* out) {
  const uint64_t n = opts_.iters;
  out->size = size;
  out->posted.assign(n, 0);
  nic::Completion c;
  std::memset(send_area(), 0, size);
  for (uint64_t i = 0; i < n; i++) {
    out->posted[i] = now_ns();
    if (!post(nic::WrOpcode::kRead, size, reinterpret_cast<uint64_t>(send_area()), i)) return false;
    if (!wait_send_completion(&c)) return false;
  }
  return check_reads(size, 1, 0);
}

}  // namespace ndnic::ndperf::perftest
