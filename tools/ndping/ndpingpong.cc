// ndpingpong: the NetworkDirect SDK's ndpingpong example (src/examples/ndpingpong) on ndnic,
// written against the ND v1 SPI only (ndspi.h; the adapter opened with NdOpenV1Adapter).
//
//   ndpingpong [EAL args --] [options]                                   both nodes here
//   ndpingpong [EAL args --] -S --dev=DEV --ip=A.B.C.D [options]          server
//   ndpingpong [EAL args --] -c PEER[:PORT] --dev=DEV --ip=A.B.C.D [options]  client
//
// As the SDK's: the server posts its receives, accepts, and for every message it receives
// reposts the receive and sends a message of the same size back, waiting for that send to
// complete; the client sends, waits for its send and for the answer, reposts, Iter times per
// size, after 1000 warm-up exchanges of 40 bytes. One row per size: Latency is half the round
// trip, Bytes/Sec counts both directions. The connection is made over the wire with
// INDListen / INDConnector (IB CM on QP1), as between two hosts.
//
// Without -S or -c both nodes run in this process over a net_ring pair, each an ndnic device
// on a worker lcore of its own, the server on a thread, the client on the main one. Results
// are polled, as in the SDK, or waited for with INDCompletionQueue::Notify (-b), which is
// the default when the process has fewer processors than polling threads (launch.cc).
//
// Where it differs from the SDK, and why:
//  - ND v1, not v2: results are the caller's ND_RESULTs (no RequestContext), the connector
//    owns the endpoint, registrations take no flags; inline sends are the provider's choice.
//  - The sweep travels in the Connect's private data, so the server needs no sweep options
//    and knows what arrives; the SDK's server computes the same fixed sweep itself.
//  - Fewer iterations per size by default (see sweep.cc), -s/-m/-n choose sizes and counts,
//    no 1 s pause after the warm-up, queue depth 64 (the SDK's main sets 64, its server then
//    takes the adapter's maximum).
//  - Payloads are checked (pattern.h): every message's length, and the bytes of the first and
//    last message of each size, on both sides (--no-check turns the byte checks off).
//  - CPU is the process's CPU time (see report.h); -s is --size here, the server is -S.
//  - Errors end the run with a message and exit status 1, a peer that stops answering too
//    (--timeout); the SDK's tools exit with their source line number.
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "tools/ndping/handshake.h"
#include "tools/ndping/launch.h"
#include "tools/ndping/pattern.h"
#include "tools/ndping/report.h"
#include "tools/ndping/sweep.h"

namespace ndnic::ndping {
namespace {

constexpr uint32_t kQueueDepth = 64;
// Each side's buffer: what it sends from, then where its receives land.
constexpr size_t kSendOffset = 0;
constexpr size_t kRecvOffset = kMaxXfer;
constexpr size_t kBufferBytes = 2 * size_t(kMaxXfer);
constexpr size_t kResultBurst = 16;

/// One side's flow of results: its one send in flight and the receives that came in, in order.
class Exchange {
 public:
  Exchange(Connection& c, const char* peer) : c_(c), peer_(peer) {}

  bool post_receives() {
    for (ND_RESULT& r : recvs_)
      if (!c_.receive(&r, kRecvOffset, kMaxXfer)) return false;
    return true;
  }

  /// Sends `size` bytes and waits for the send's completion.
  bool send(uint32_t size) {
    send_done_ = false;
    if (!c_.send(&send_, kSendOffset, size)) return false;
    while (!send_done_)
      if (!pump()) return false;
    return true;
  }

  /// Waits for the next message, checks it (length always, bytes when `check_bytes`) and
  /// posts its receive again.
  bool receive(uint32_t size, bool check_bytes, Direction d, const char* what, uint32_t i) {
    while (arrived_.empty())
      if (!pump()) return false;
    ND_RESULT* r = arrived_.front();
    arrived_.pop_front();
    const bool ok = r->Status == ND_SUCCESS && r->BytesTransferred == size &&
                    (!check_bytes || check_pattern(c_.buffer() + kRecvOffset, size, d) < 0);
    return ok ? c_.receive(r, kRecvOffset, kMaxXfer) : explain(r, size, check_bytes, d, which(what, i, size));
  }

 private:
  /// Says what was wrong with a message.
  bool explain(const ND_RESULT* r, uint32_t size, bool check_bytes, Direction d, const std::string& which) {
    if (r->Status == ND_CANCELED) return c_.fail(which + ": the " + peer_ + " went away (receive canceled)");
    if (r->Status != ND_SUCCESS) return c_.fail(which + ": receive failed", r->Status);
    if (r->BytesTransferred != size)
      return c_.fail(which + ": " + std::to_string(r->BytesTransferred) + " bytes, expected " + std::to_string(size));
    if (check_bytes) {
      const int64_t bad = check_pattern(c_.buffer() + kRecvOffset, size, d);
      if (bad >= 0) return c_.fail(which + ": wrong payload at byte " + std::to_string(bad));
    }
    return c_.fail(which + ": unexpected result");
  }

  static std::string which(const char* what, uint32_t i, uint32_t size) {
    std::string s(what);
    s.append(" ").append(std::to_string(i + 1)).append(" of size ").append(std::to_string(size));
    return s;
  }

  bool pump() {
    ND_RESULT* out[kResultBurst];
    const size_t k = c_.results(out, kResultBurst);
    if (k == 0) return false;
    for (size_t i = 0; i < k; i++) {
      if (out[i] != &send_) {
        arrived_.push_back(out[i]);
        continue;
      }
      if (send_.Status != ND_SUCCESS) return c_.fail("send failed", send_.Status);
      send_done_ = true;
    }
    return true;
  }

  Connection& c_;
  const char* peer_;
  ND_RESULT send_{};
  bool send_done_ = false;
  std::vector<ND_RESULT> recvs_ = std::vector<ND_RESULT>(kQueueDepth);
  std::deque<ND_RESULT*> arrived_;
};

bool server(Connection& c, const Options& o, uint32_t ipv4, const Ready& ready) {
  const std::optional<Request> req = take_request(c, o, ipv4, {kQueueDepth, kQueueDepth}, kBufferBytes, ready);
  if (!req) return false;
  const Sweep sweep = make_sweep(req->tool, req->min_size, req->max_size, req->iters);
  // The client checks pongs when it asked for checks; we check pings unless told not to as well.
  const bool client_checks = req->check;
  const bool check = req->check && o.check;
  Exchange x(c, "client");
  if (!x.post_receives() || !c.accept(encode(Reply{kQueueDepth}))) return false;
  auto pong = [&](uint32_t iters, uint32_t size, bool check_bytes) {
    for (uint32_t i = 0; i < iters; i++) {
      const bool first_or_last = i == 0 || i + 1 == iters;
      if (!x.receive(size, check_bytes && first_or_last, Direction::kToServer, "ping", i) ||
          !x.send(size))
        return false;
    }
    return true;
  };
  // Each size's payload is written while the client is still between sizes (printing its row,
  // writing its own payload), not after its first ping came in, where the clock runs.
  auto fill = [&](size_t step) {
    if (client_checks && step < sweep.steps.size())
      fill_pattern(c.buffer() + kSendOffset, sweep.steps[step].size, Direction::kToClient);
  };
  fill(0);
  if (!pong(sweep.warmup_iters, kWarmupSize, false)) return false;
  for (size_t i = 0; i < sweep.steps.size(); i++) {
    if (!pong(sweep.steps[i].iters, sweep.steps[i].size, check)) return false;
    fill(i + 1);
  }
  return c.wait_disconnect();
}

bool client(Connection& c, const Options& o, uint32_t ipv4, uint32_t server_ipv4) {
  if (!c.open(ipv4, {kQueueDepth, kQueueDepth}, kBufferBytes)) return false;
  const Request req{Tool::kPingPong, o.check, o.min_size, o.max_size, o.iters};
  std::vector<uint8_t> data;
  if (!c.connect(server_ipv4, o.port, encode(req), &data)) return false;
  if (!decode_reply(data.data(), data.size())) return c.fail("the server's answer is not ndpingpong's");
  Exchange x(c, "server");
  // Receives go up before CompleteConnect: the server may send as soon as it is established.
  if (!x.post_receives() || !c.complete_connect()) return false;
  auto ping = [&](uint32_t iters, uint32_t size, bool check_bytes) {
    for (uint32_t i = 0; i < iters; i++) {
      const bool first_or_last = i == 0 || i + 1 == iters;
      if (!x.send(size) ||
          !x.receive(size, check_bytes && first_or_last, Direction::kToClient, "pong", i))
        return false;
    }
    return true;
  };
  print_header();
  const Sweep sweep = make_sweep(Tool::kPingPong, o.min_size, o.max_size, o.iters);
  if (!ping(sweep.warmup_iters, kWarmupSize, false)) return false;
  for (const Step& s : sweep.steps) {
    if (o.check) fill_pattern(c.buffer() + kSendOffset, s.size, Direction::kToServer);  // before the clock
    Meter m;
    m.start();
    if (!ping(s.iters, s.size, o.check)) return false;
    m.stop();
    // As the SDK: half a round trip per message, bytes counted both ways.
    print_row(s.size, s.iters, m.usec() / s.iters / 2, m.cpu_percent(), 2.0 * s.size * s.iters / (m.usec() / 1e6));
  }
  return c.disconnect();
}

}  // namespace
}  // namespace ndnic::ndping

int main(int argc, char** argv) {
  using namespace ndnic::ndping;
  return launch(Tool::kPingPong, argc, argv, Halves{server, client});
}
