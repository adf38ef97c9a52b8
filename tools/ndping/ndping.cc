// ndping: the NetworkDirect SDK's ndping example (src/examples/ndping, "unidirectional
// send/recv ping test") on ndnic, written against the ND v1 SPI only (ndspi.h; the adapter
// opened with NdOpenV1Adapter). In the SDK, ndping is this pipelined one-way test and
// ndpingpong the ping-pong; the names here are the SDK's.
//
//   ndping [EAL args --] [options]                                   both nodes here
//   ndping [EAL args --] -S --dev=DEV --ip=A.B.C.D [options]          server
//   ndping [EAL args --] -c PEER[:PORT] --dev=DEV --ip=A.B.C.D [options]  client
//
// As the SDK's: the server posts its queue depth of receives and accepts, advertising that
// depth; it reposts every receive, sends a credit message after every half queue of them, and
// answers a zero-byte SYNC with a zero-byte send. The client keeps up to -q sends in flight
// while it has credits, then sends a SYNC and waits for its answer: that ends a size. One
// row per size after 1000 warm-up messages of 40 bytes: Latency is the time per message (the
// inverse of the message rate, not a round trip), Bytes/Sec the one-way rate. The connection
// is made over the wire with INDListen / INDConnector (IB CM on QP1), as between two hosts.
//
// Without -S or -c both nodes run in this process over a net_ring pair, each an ndnic device
// on a worker lcore of its own, the server on a thread, the client on the main one. Results
// are polled, as in the SDK, or waited for with INDCompletionQueue::Notify (-b), which is
// the default when the process has fewer processors than polling threads (launch.cc).
//
// Where it differs from the SDK, and why:
//  - ND v1, not v2: results are the caller's ND_RESULTs (no RequestType: a result's address
//    says whether it was a send or a receive), the connector owns the endpoint.
//  - Credits are exact: a credit message returns the half queue the server has reposted, the
//    client starts from the whole queue and keeps one credit for the SYNC. (The SDK advertises
//    one less and grants half its peer's advertised depth; its SYNC takes a credit without
//    checking for one, which can wrap its count.) The queue depth is 512, not the adapter's
//    maximum.
//  - The sweep travels in the Connect's private data, so the server knows what arrives and
//    checks it (pattern.h): every message's length, the bytes of the first and last message of
//    each size (--no-check turns the byte checks off); the SDK's server only counts.
//  - Fewer iterations per size by default (see sweep.cc), -s/-m/-n choose sizes and counts,
//    no 1 s pause after the warm-up; the SYNC goes right after the last send, not after the
//    next send completion.
//  - CPU is the process's CPU time (see report.h); -s is --size here, the server is -S.
//  - Errors end the run with a message and exit status 1, a peer that stops answering too
//    (--timeout); the SDK's tools exit with their source line number.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/ndping/handshake.h"
#include "tools/ndping/launch.h"
#include "tools/ndping/pattern.h"
#include "tools/ndping/report.h"
#include "tools/ndping/sweep.h"

namespace ndnic::ndping {
namespace {

constexpr uint32_t kServerQueueDepth = 512;  ///< receives the server keeps posted
constexpr uint32_t kServerSends = 16;        ///< credit messages and SYNC answers in flight
constexpr uint32_t kControlRecvs = 8;        ///< client receives for those
constexpr uint32_t kCreditLen = 1;           ///< the SDK's credit message is one byte
// Server buffer: receives land at 0, control messages go from kMaxXfer. Client buffer: data
// goes from 0, control messages land at kMaxXfer.
constexpr size_t kDataOffset = 0;
constexpr size_t kControlOffset = kMaxXfer;
constexpr uint32_t kControlLen = 64;
constexpr size_t kBufferBytes = size_t(kMaxXfer) + kControlLen;
constexpr size_t kResultBurst = 64;

/// Results in order of posting: an RC endpoint completes its sends in order, so a ring of
/// ND_RESULTs sized for the most in flight never hands out one still in use.
class SendRing {
 public:
  explicit SendRing(uint32_t n) : results_(n) {}
  bool full() const { return in_flight_ == results_.size(); }
  uint32_t in_flight() const { return in_flight_; }
  ND_RESULT* take() {
    in_flight_++;
    return &results_[next_++ % results_.size()];
  }
  bool owns(const ND_RESULT* r) const { return r >= results_.data() && r < results_.data() + results_.size(); }
  void done() { in_flight_--; }

 private:
  std::vector<ND_RESULT> results_;
  uint64_t next_ = 0;
  uint32_t in_flight_ = 0;
};

std::string message_name(uint32_t i, uint32_t size) {
  std::string s("message ");
  s.append(std::to_string(i + 1)).append(" of size ").append(std::to_string(size));
  return s;
}

bool server(Connection& c, const Options& o, uint32_t ipv4, const Ready& ready) {
  const std::optional<Request> req = take_request(c, o, ipv4, {kServerQueueDepth, kServerSends}, kBufferBytes, ready);
  if (!req) return false;
  const Sweep sweep = make_sweep(req->tool, req->min_size, req->max_size, req->iters);
  const bool check = req->check && o.check;
  // What arrives, in order: the warm-up, a SYNC, then each size's messages and a SYNC.
  std::vector<Step> expected{{kWarmupSize, sweep.warmup_iters}};
  expected.insert(expected.end(), sweep.steps.begin(), sweep.steps.end());

  std::vector<ND_RESULT> recvs(kServerQueueDepth);
  for (ND_RESULT& r : recvs)
    if (!c.receive(&r, kDataOffset, kMaxXfer)) return false;
  if (!c.accept(encode(Reply{kServerQueueDepth}))) return false;

  SendRing sends(kServerSends);
  auto send = [&](uint32_t len) {
    if (sends.full()) return c.fail("too many credit and SYNC messages in flight");
    return c.send(sends.take(), kControlOffset, len);
  };
  const uint32_t grant = kServerQueueDepth / 2;
  uint32_t since_grant = 0;
  size_t phase = 0;     // index in `expected`
  uint32_t count = 0;   // messages of this phase so far
  while (phase < expected.size()) {
    ND_RESULT* out[kResultBurst];
    const size_t k = c.results(out, kResultBurst);
    if (k == 0) return false;
    for (size_t j = 0; j < k; j++) {
      ND_RESULT* r = out[j];
      if (sends.owns(r)) {
        if (r->Status != ND_SUCCESS) return c.fail("credit or SYNC send failed", r->Status);
        sends.done();
        continue;
      }
      if (phase == expected.size()) return c.fail("a message after the last SYNC");
      const Step& e = expected[phase];
      const bool sync = count == e.iters;
      const uint32_t want = sync ? 0 : e.size;
      // Named only when something is wrong: this runs once per message.
      auto which = [&] { return sync ? "SYNC after size " + std::to_string(e.size) : message_name(count, e.size); };
      if (r->Status == ND_CANCELED) return c.fail(which() + ": the client went away (receive canceled)");
      if (r->Status != ND_SUCCESS) return c.fail(which() + ": receive failed", r->Status);
      if (r->BytesTransferred != want)
        return c.fail(which() + ": " + std::to_string(r->BytesTransferred) + " bytes, expected " + std::to_string(want));
      // The warm-up (phase 0) is not checked, as in ndpingpong.
      if (!sync && check && phase > 0 && (count == 0 || count + 1 == e.iters)) {
        const int64_t bad = check_pattern(c.buffer() + kDataOffset, e.size, Direction::kToServer);
        if (bad >= 0) return c.fail(which() + ": wrong payload at byte " + std::to_string(bad));
      }
      if (!c.receive(r, kDataOffset, kMaxXfer)) return false;
      if (sync) {
        if (!send(0)) return false;
        phase++;
        count = 0;
      } else {
        count++;
      }
      if (++since_grant == grant) {
        if (!send(kCreditLen)) return false;
        since_grant = 0;
      }
    }
  }
  return c.wait_disconnect();
}

/// The client's side of one size: sends `iters` messages paced by credits and the pipeline,
/// then a SYNC, and returns when the server has answered it.
class Sender {
 public:
  Sender(Connection& c, const Options& o, uint32_t credits)
      : c_(c), credits_(credits), grant_(credits / 2), sends_(o.pipeline + 1), pipeline_(o.pipeline) {}

  bool post_receives() {
    for (ND_RESULT& r : recvs_)
      if (!c_.receive(&r, kControlOffset, kControlLen)) return false;
    return true;
  }

  bool run(uint32_t iters, uint32_t size) {
    uint32_t remaining = iters;
    bool sync_sent = false, sync_answered = false;
    const uint32_t max_out = std::min(pipeline_, iters);
    while (!sync_answered) {
      // One credit stays for the SYNC: the server counts it among its receives too.
      while (credits_ > 1 && remaining > 0 && sends_.in_flight() < max_out) {
        if (!c_.send(sends_.take(), kDataOffset, size)) return false;
        credits_--;
        remaining--;
      }
      if (remaining == 0 && !sync_sent && credits_ > 0) {
        if (!c_.send(sends_.take(), kDataOffset, 0)) return false;
        credits_--;
        sync_sent = true;
      }
      ND_RESULT* out[kResultBurst];
      const size_t k = c_.results(out, kResultBurst);
      if (k == 0) return false;
      for (size_t j = 0; j < k; j++) {
        ND_RESULT* r = out[j];
        if (sends_.owns(r)) {
          if (r->Status != ND_SUCCESS) return c_.fail("send of size " + std::to_string(size) + " failed", r->Status);
          sends_.done();
          continue;
        }
        if (r->Status == ND_CANCELED) return c_.fail("the server went away (receive canceled)");
        if (r->Status != ND_SUCCESS) return c_.fail("receive failed", r->Status);
        if (r->BytesTransferred == 0) {
          sync_answered = true;
        } else if (r->BytesTransferred == kCreditLen) {
          credits_ += grant_;
        } else {
          return c_.fail("a " + std::to_string(r->BytesTransferred) + "-byte message from the server");
        }
        if (!c_.receive(r, kControlOffset, kControlLen)) return false;
      }
    }
    return true;
  }

 private:
  Connection& c_;
  uint32_t credits_;
  const uint32_t grant_;
  SendRing sends_;
  const uint32_t pipeline_;
  std::vector<ND_RESULT> recvs_ = std::vector<ND_RESULT>(kControlRecvs);
};

bool client(Connection& c, const Options& o, uint32_t ipv4, uint32_t server_ipv4) {
  if (!c.open(ipv4, {kControlRecvs, o.pipeline + 1}, kBufferBytes)) return false;
  const Request req{Tool::kPing, o.check, o.min_size, o.max_size, o.iters};
  std::vector<uint8_t> data;
  if (!c.connect(server_ipv4, o.port, encode(req), &data)) return false;
  const std::optional<Reply> reply = decode_reply(data.data(), data.size());
  if (!reply) return c.fail("the server's answer is not ndping's");
  Sender sender(c, o, reply->queue_depth);
  // Receives go up before CompleteConnect: the server may send as soon as it is established.
  if (!sender.post_receives() || !c.complete_connect()) return false;
  print_header();
  const Sweep sweep = make_sweep(Tool::kPing, o.min_size, o.max_size, o.iters);
  if (!sender.run(sweep.warmup_iters, kWarmupSize)) return false;
  for (const Step& s : sweep.steps) {
    if (o.check) fill_pattern(c.buffer() + kDataOffset, s.size, Direction::kToServer);  // before the clock
    Meter m;
    m.start();
    if (!sender.run(s.iters, s.size)) return false;
    m.stop();
    print_row(s.size, s.iters, m.usec() / s.iters, m.cpu_percent(), double(s.size) * s.iters / (m.usec() / 1e6));
  }
  return c.disconnect();
}

}  // namespace
}  // namespace ndnic::ndping

int main(int argc, char** argv) {
  using namespace ndnic::ndping;
  return launch(Tool::kPing, argc, argv, Halves{server, client});
}
