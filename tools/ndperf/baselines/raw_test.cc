#include "tools/ndperf/baselines/raw_test.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <rte_mbuf.h>
#include <rte_pause.h>

#include "tools/nd_app/halt.h"
#include "tools/ndperf/baselines/raw_frames.h"
#include "tools/ndperf/pattern.h"
#include "tools/ndperf/progress.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {
namespace {

constexpr double kAskRetrySeconds = 0.1;   ///< a control request unanswered this long goes again
constexpr double kEndGraceSeconds = 0.2;   ///< the server waits this long for late frames
constexpr uint32_t kArpTimeoutMs = 3000;
constexpr unsigned kLoopsPerHaltCheck = 4096;

uint64_t ticks(double seconds) { return uint64_t(seconds * tsc_hz()); }

/// Receives from every queue of the port (whichever its RSS chose) into `pkts`.
uint16_t rx_all(glue::Port& port, uint16_t queues, rte_mbuf** pkts, uint16_t n) {
  uint16_t got = 0;
  for (uint16_t q = 0; q < queues && got < n; q++)
    got = uint16_t(got + port.rx_burst(pkts + got, uint16_t(n - got), q));
  return got;
}

bool is_ctl(const RawFrame& f, RawCtl* c) {
  if (f.sport != kRawCtlPort || f.len < sizeof(RawCtl)) return false;
  std::memcpy(c, f.payload, sizeof *c);
  return c->magic == kRawMagic;
}

bool send_ctl(glue::Port& port, const RawPath& path, const RawCtl& c) {
  rte_mbuf* m = build_frame(port, path, kRawCtlPort, reinterpret_cast<const uint8_t*>(&c), sizeof c);
  return m && send_all(port, 0, &m, 1);
}

/// Sends a message of `size` bytes from `data` as frames of `mtu` payload bytes.
bool send_message(glue::Port& port, const RawPath& path, const uint8_t* data, uint32_t size, uint32_t mtu) {
  rte_mbuf* burst[kRawBurst];
  for (uint32_t off = 0; off < size;) {
    uint16_t n = 0;
    for (; n < kRawBurst && off < size; n++) {
      const uint32_t len = std::min(mtu, size - off);
      if (!(burst[n] = build_frame(port, path, kRawDataPort, data + off, len))) break;
      off += len;
    }
    if (n == 0) {  // the mempool is empty until the peer frees what it received
      rte_pause();
      continue;
    }
    if (!send_all(port, 0, burst, n)) return false;
  }
  return true;
}

// ---- client -----------------------------------------------------------------------------

class RawClient {
 public:
  RawClient(Node& node, const Plan& p, const Options& o, uint32_t server, TestResult* result)
      : node_(node), port_(node.port()), p_(p), o_(o), server_(server), result_(result),
        queues_(uint16_t(node.queues())), mtu_(p.mtu) {}

  bool run() {
    rte_ether_addr mac;
    if (port_.resolve_wait(server_, &mac, kArpTimeoutMs) != glue::Resolve::kResolved)
      return fail("the server's address did not resolve (ARP)");
    path_ = {port_.mac(), mac, node_.ipv4(), server_};
    fill_pattern(node_.buffer() + node_.layout().send(), p_.last_size, pattern_seed(p_.test, Direction::kToServer));
    RawCtl reply;
    if (!ask(RawType::kHello, {}, RawType::kReady, &reply)) return false;
    bool ok = true;
    for (uint32_t size : sizes(p_)) {
      Row row;
      if (!(ok = p_.test == Test::kRawBw ? bw(size, &row) : lat(size, &row))) break;
      print_row(p_.test, row);
      result_->rows.push_back(row);
      if (nd_app::sigint_requested()) break;
    }
    // The server leaves its loop on goodbye; if its answer is lost it has left anyway.
    ask(RawType::kBye, {}, RawType::kByeAck, &reply);
    return ok;
  }

 private:
  bool fail(const std::string& what) const {
    std::fprintf(stderr, "ndperf client: %s: %s\n", name(p_.test), what.c_str());
    return false;
  }

  /// Sends a control request until its answer comes (or --timeout).
  bool ask(RawType type, RawCtl req, RawType want, RawCtl* reply) {
    req.magic = kRawMagic;
    req.type = type;
    req.seq = ++seq_;
    const uint64_t give_up = now_tsc() + ticks(o_.timeout_s);
    while (now_tsc() < give_up) {
      if (!send_ctl(port_, path_, req)) return fail("the port takes no frames");
      const uint64_t retry = now_tsc() + ticks(kAskRetrySeconds);
      while (now_tsc() < retry) {
        rte_mbuf* pkts[kRawBurst];
        const uint16_t n = rx_all(port_, queues_, pkts, kRawBurst);
        bool got = false;
        for (uint16_t i = 0; i < n; i++) {
          RawFrame f;
          RawCtl c;
          if (parse_frame(pkts[i], &f) && is_ctl(f, &c) && c.type == want && c.seq == req.seq) {
            *reply = c;
            got = true;
          }
        }
        rte_pktmbuf_free_bulk(pkts, n);
        if (got) return true;
      }
    }
    return fail("no answer from the server in " + std::to_string(o_.timeout_s) + " s (--timeout)");
  }

  bool start(uint32_t size, bool echo) {
    RawCtl req, reply;
    req.size = size;
    req.mtu = mtu_;
    req.echo = echo;
    return ask(RawType::kStart, req, RawType::kStarted, &reply);
  }

  /// The size's end: the server's count of frames, and its check of the last message.
  bool end(uint64_t sent) {
    RawCtl req, reply;
    req.count = sent;
    if (!ask(RawType::kEnd, req, RawType::kEndAck, &reply)) return false;
    if (reply.count != sent) {
      std::fprintf(stderr, "ndperf client: %s: %llu of %llu frames did not arrive (raw frames are not retransmitted)\n",
                   name(p_.test), static_cast<unsigned long long>(sent - std::min(sent, reply.count)),
                   static_cast<unsigned long long>(sent));
      return true;
    }
    return reply.aux == 1 || fail("the server found the last message's bytes wrong");
  }

  bool bw(uint32_t size, Row* row) {
    if (!start(size, false)) return false;
    const uint64_t iters = iterations(o_, p_.test, size);
    const uint32_t per_msg = frames_for(size, mtu_);
    const uint8_t* data = node_.buffer() + node_.layout().send();
    Progress progress(p_.test, size, o_.duration_s);
    BwMeter meter;
    meter.start();
    uint64_t done = 0;
    uint32_t frame = 0;  // of the message being sent
    rte_mbuf* burst[kRawBurst];
    for (;;) {
      // Whole messages only: a stop waits for the current message's last frame.
      if (frame == 0 && (iters ? done == iters || nd_app::sigint_requested() : run_over(o_, meter.started(), 0, 0))) break;
      uint16_t n = 0;
      uint64_t msgs = 0;
      while (n < kRawBurst && !(iters && frame == 0 && done + msgs == iters)) {
        const uint32_t off = frame * mtu_;
        const uint32_t len = std::min(mtu_, size - off);
        if (!(burst[n] = build_frame(port_, path_, kRawDataPort, data + off, len))) break;
        n++;
        if (++frame == per_msg) {
          frame = 0;
          msgs++;
        }
      }
      if (n == 0) {
        rte_pause();
        continue;
      }
      if (!send_all(port_, 0, burst, n)) return fail("the port stopped taking frames");
      done += msgs;
      meter.sample(done);
      progress.show_bw(meter, done);
    }
    *row = meter.finish(size, done, 2 * kRawBurst);
    return end(done * per_msg);
  }

  bool lat(uint32_t size, Row* row) {
    if (!start(size, true)) return false;
    const uint64_t iters = iterations(o_, p_.test, size);
    const uint32_t per_msg = frames_for(size, mtu_);
    uint8_t* recv = node_.buffer() + node_.layout().recv();
    const uint8_t* data = node_.buffer() + node_.layout().send();
    std::memset(recv, 0, size);
    LatencyRecorder samples;
    Progress progress(p_.test, size, o_.duration_s);
    const uint64_t t0 = now_tsc();
    for (uint64_t i = 0; !run_over(o_, t0, i, iters); i++) {
      const uint64_t start = now_tsc();
      if (!send_message(port_, path_, data, size, mtu_)) return fail("the port stopped taking frames");
      const uint64_t give_up = start + ticks(o_.timeout_s);
      for (uint32_t got = 0; got < per_msg;) {
        rte_mbuf* pkts[kRawBurst];
        const uint16_t n = rx_all(port_, queues_, pkts, kRawBurst);
        for (uint16_t k = 0; k < n; k++) {
          RawFrame f;
          if (parse_frame(pkts[k], &f) && f.sport == kRawDataPort && got < per_msg && f.len <= mtu_) {
            std::memcpy(recv + size_t(got) * mtu_, f.payload, f.len);
            got++;
          }
        }
        rte_pktmbuf_free_bulk(pkts, n);
        if (n == 0 && now_tsc() > give_up) return fail("a frame of the answer did not come back (lost)");
      }
      const uint64_t stop = now_tsc();
      samples.add(stop - start);
      progress.show_lat(stop, i + 1, samples.sum(), 2);
    }
    const uint64_t done = samples.count();
    if (done) {
      const int64_t bad = check_pattern(recv, size, pattern_seed(p_.test, Direction::kToClient));
      if (bad >= 0) return fail("the last answer differs at byte " + std::to_string(bad));
    }
    *row = samples.row(size, 2.0);
    return end(done * per_msg);
  }

  Node& node_;
  glue::Port& port_;
  const Plan& p_;
  const Options& o_;
  const uint32_t server_;
  TestResult* result_;
  const uint16_t queues_;
  const uint32_t mtu_;
  RawPath path_;
  uint32_t seq_ = 0;
};

// ---- server -----------------------------------------------------------------------------

class RawServer {
 public:
  RawServer(Node& node, nd_app::Halt& halt)
      : node_(node), port_(node.port()), halt_(halt), queues_(uint16_t(node.queues())) {}

  bool run() {
    for (unsigned loops = 0;; loops++) {
      rte_mbuf* pkts[kRawBurst];
      const uint16_t n = rx_all(port_, queues_, pkts, kRawBurst);
      for (uint16_t i = 0; i < n; i++) {
        RawFrame f;
        RawCtl c;
        if (!parse_frame(pkts[i], &f)) continue;
        if (is_ctl(f, &c)) {
          path_ = {port_.mac(), f.src_mac, node_.ipv4(), f.src_ip};
          if (!control(c)) return false;
        } else if (f.sport == kRawDataPort && size_) {
          if (!data(f)) return false;
        }
      }
      rte_pktmbuf_free_bulk(pkts, n);
      if (end_pending_ && (frames_ >= end_.count || now_tsc() > end_deadline_)) {
        end_pending_ = false;
        RawCtl a = end_;
        a.type = RawType::kEndAck;
        a.count = frames_;
        a.aux = frames_ == end_.count && check() ? 1 : 0;
        if (!reply(a)) return false;
      }
      if (bye_) return true;
      if (n == 0 && loops % kLoopsPerHaltCheck == 0 && halt_.now()) return false;
    }
  }

 private:
  bool reply(const RawCtl& a) {
    last_ = a;
    return send_ctl(port_, path_, a);
  }

  bool control(const RawCtl& c) {
    // A request seen before lost its answer: answer again (once there is one), do not act again.
    if (last_.magic == kRawMagic && c.seq == last_.seq) return end_pending_ || reply(last_);
    RawCtl a = c;
    switch (c.type) {
      case RawType::kHello: a.type = RawType::kReady; break;
      case RawType::kStart:
        size_ = c.size;
        mtu_ = c.mtu ? c.mtu : 1;
        echo_ = c.echo != 0;
        per_msg_ = frames_for(size_, mtu_);
        frames_ = 0;
        frame_ = 0;
        if (size_ > node_.layout().area) {
          std::fprintf(stderr, "ndperf server: a raw message of %u bytes is larger than the buffer\n", size_);
          return false;
        }
        std::memset(node_.buffer() + node_.layout().recv(), 0, size_);
        fill_pattern(node_.buffer() + node_.layout().send(), size_, seed(Direction::kToClient));
        a.type = RawType::kStarted;
        break;
      case RawType::kEnd:
        // Frames may still be on their way on another queue: answer when all are in, or soon.
        end_pending_ = true;
        end_ = c;
        end_deadline_ = now_tsc() + ticks(kEndGraceSeconds);
        last_ = c;
        return true;
      case RawType::kBye:
        a.type = RawType::kByeAck;
        bye_ = true;
        break;
      default: return true;
    }
    return reply(a);
  }

  bool data(const RawFrame& f) {
    if (f.len <= mtu_ && size_t(frame_) * mtu_ + f.len <= size_)
      std::memcpy(node_.buffer() + node_.layout().recv() + size_t(frame_) * mtu_, f.payload, f.len);
    frames_++;
    if (++frame_ < per_msg_) return true;
    frame_ = 0;
    return !echo_ || send_message(port_, path_, node_.buffer() + node_.layout().send(), size_, mtu_);
  }

  uint8_t seed(Direction d) const { return pattern_seed(echo_ ? Test::kRawLat : Test::kRawBw, d); }

  bool check() const {
    const int64_t bad = check_pattern(node_.buffer() + node_.layout().recv(), size_, seed(Direction::kToServer));
    if (bad >= 0) std::fprintf(stderr, "ndperf server: raw message of %u bytes differs at byte %lld\n", size_,
                               static_cast<long long>(bad));
    return bad < 0;
  }

  Node& node_;
  glue::Port& port_;
  nd_app::Halt& halt_;
  const uint16_t queues_;
  RawPath path_;
  RawCtl last_{}, end_{};
  bool end_pending_ = false, bye_ = false, echo_ = false;
  uint64_t end_deadline_ = 0;
  uint32_t size_ = 0, mtu_ = 1, per_msg_ = 1, frame_ = 0;
  uint64_t frames_ = 0;
};

}  // namespace

bool raw_client(Node& node, const Plan& p, const Options& o, uint32_t server_ipv4, TestResult* result) {
  return RawClient(node, p, o, server_ipv4, result).run();
}

bool raw_server(Node& node, nd_app::Halt& halt) { return RawServer(node, halt).run(); }

}  // namespace ndnic::ndperf
