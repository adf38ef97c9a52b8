// rping's client over ND v1 (rping_run_client / rping_test_client).
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tools/nd_app/address.h"
#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"
#include "tools/nd_rping/rping.h"
#include "tools/nd_rping/session.h"

namespace ndnic::nd_rping {
namespace {

using nd_app::status_text;

// Between failed attempts while the server starts (--retry).
constexpr auto kRetryPause = std::chrono::milliseconds(250);

bool connect(Session& s, const Options& o) {
  sockaddr_in to = nd_app::ipv4_sockaddr(o.peer_ipv4, o.port);
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(o.retry_s);
  for (;;) {
    if (!s.new_endpoint()) return false;
    OVERLAPPED ov{};
    HRESULT hr = s.connector()->Connect(s.endpoint(), reinterpret_cast<sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0,
                                        &ov);
    if (hr == ND_PENDING) hr = nd_app::wait_overlapped(s.connector(), &ov, s.deadline());
    // Refused: nobody listens yet; unreachable or timed out: the host is not up yet.
    const bool not_yet = hr == ND_CONNECTION_REFUSED || hr == ND_HOST_UNREACHABLE || hr == ND_TIMEOUT;
    if (not_yet && Clock::now() < give_up) {
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    if (FAILED(hr) || hr == ND_TIMEOUT) {
      std::fprintf(stderr, "connect error: %s\n", status_text(hr).c_str());
      return false;
    }
    break;
  }
  OVERLAPPED ov{};
  HRESULT hr = s.connector()->CompleteConnect(&ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(s.connector(), &ov, s.deadline());
  if (FAILED(hr) || hr == ND_TIMEOUT) {
    std::fprintf(stderr, "connect error (CompleteConnect): %s\n", status_text(hr).c_str());
    return false;
  }
  return s.watch_disconnect();
}

struct Windows {
  INDMemoryWindow* start = nullptr;
  INDMemoryWindow* sink = nullptr;
  ~Windows() {
    if (start) start->Release();
    if (sink) sink->Release();
  }
};

}  // namespace

int run_client(INDAdapter* adapter, const Options& o) {
  Session s(adapter, o);
  if (!s.open(o.size, o.size) || !connect(s, o)) return 1;
  // Invalidations never happen here (rping has no SendAndInvalidate): the results stay unused.
  ND_RESULT inv_start{}, inv_sink{};
  Windows w;
  if (FAILED(adapter->CreateMemoryWindow(&inv_start, &w.start)) ||
      FAILED(adapter->CreateMemoryWindow(&inv_sink, &w.sink))) {
    std::fprintf(stderr, "nd_rping: CreateMemoryWindow failed\n");
    return 1;
  }
  RpingInfo start_adv{}, sink_adv{};
  if (!s.bind(w.start, s.source(), o.size, ND_OP_FLAG_ALLOW_READ, &start_adv) ||
      !s.bind(w.sink, s.sink(), o.size, ND_OP_FLAG_ALLOW_WRITE, &sink_adv))
    return 1;
  if (o.debug)
    std::printf("start window addr %" PRIx64 " rkey %x, sink window addr %" PRIx64 " rkey %x, len %u\n",
                be64toh(start_adv.buf), be32toh(start_adv.rkey), be64toh(sink_adv.buf), be32toh(sink_adv.rkey),
                o.size);
  int start = 65;
  int rc = 0;
  RpingInfo go{};
  for (uint32_t ping = 0; !o.count || ping < o.count; ping++) {
    fill_ping(s.source(), o.size, int(ping), &start);
    // Source advertised, then the server's go-ahead once it has read it.
    if (!s.send_info(start_adv) || !s.next_receive(&go)) {
      if (!s.disconnected()) std::fprintf(stderr, "wait for RDMA_WRITE_ADV failed at ping %u\n", ping);
      rc = s.disconnected() ? 0 : 1;
      break;
    }
    // Sink advertised, then the go-ahead once the server has written into it.
    if (!s.send_info(sink_adv) || !s.next_receive(&go)) {
      if (!s.disconnected()) std::fprintf(stderr, "wait for RDMA_WRITE_COMPLETE failed at ping %u\n", ping);
      rc = s.disconnected() ? 0 : 1;
      break;
    }
    if (o.validate && std::memcmp(s.source(), s.sink(), o.size)) {
      std::fprintf(stderr, "data mismatch!\n");
      rc = 1;
      break;
    }
    if (o.verbose) std::printf("ping data: %s\n", s.sink());
  }
  std::fflush(stdout);
  s.disconnect();
  return rc;
}

}  // namespace ndnic::nd_rping
