// rping's server over ND v1 (rping_run_server / rping_test_server): one connection, then exit.
#include <arpa/inet.h>
#include <endian.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"
#include "tools/nd_rping/rping.h"
#include "tools/nd_rping/session.h"

namespace ndnic::nd_rping {
namespace {

using nd_app::status_text;

// Backlog, as rping's rdma_listen(cm_id, 3).
constexpr SIZE_T kBacklog = 3;

bool accept(Session& s, const Options& o, INDListen** listen) {
  USHORT assigned = 0;
  HRESULT hr = s.adapter()->Listen(kBacklog, 0, htons(o.port), &assigned, listen);
  if (FAILED(hr)) {
    std::fprintf(stderr, "rdma_listen: %s\n", status_text(hr).c_str());
    return false;
  }
  if (!s.new_endpoint()) return false;
  OVERLAPPED ov{};
  hr = (*listen)->GetConnectionRequest(s.connector(), &ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(*listen, &ov, s.deadline());
  if (FAILED(hr) || hr == ND_TIMEOUT) {
    std::fprintf(stderr, "wait for CONNECT_REQUEST: %s\n", status_text(hr).c_str());
    return false;
  }
  if (o.debug) {
    SIZE_T in_rd = 0, out_rd = 0, len = 0;
    s.connector()->GetConnectionData(&in_rd, &out_rd, nullptr, &len);
    std::printf("connect request: read limits in %zu out %zu, %zu bytes of private data\n", size_t(in_rd),
                size_t(out_rd), size_t(len));
  }
  hr = s.connector()->Accept(s.endpoint(), nullptr, 0, &ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(s.connector(), &ov, s.deadline());
  if (FAILED(hr) || hr == ND_TIMEOUT) {
    std::fprintf(stderr, "accept error: %s\n", status_text(hr).c_str());
    return false;
  }
  return s.watch_disconnect();
}

}  // namespace

int run_server(INDAdapter* adapter, const Options& o) {
  Session s(adapter, o);
  // The sink takes whatever size the client advertises, as long as rping allows it.
  if (!s.open(kMaxSize + 1, 0)) return 1;
  INDListen* listen = nullptr;
  const bool up = accept(s, o, &listen);
  if (listen) listen->Release();
  if (!up) return 1;
  int rc = 0;
  for (;;) {
    RpingInfo src{}, dst{};
    // The client's source advertisement; its disconnect ends the loop, as in rping.
    if (!s.next_receive(&src)) {
      if (!s.disconnected()) rc = 1;
      break;
    }
    const uint32_t len = be32toh(src.size);
    if (o.debug)
      std::printf("Received rkey %x addr %" PRIx64 " len %u from peer\n", be32toh(src.rkey), be64toh(src.buf), len);
    if (len > kMaxSize) {
      std::fprintf(stderr, "nd_rping: the client advertises %u bytes, more than rping allows\n", len);
      rc = 1;
      break;
    }
    if (!s.rdma(true, src, len)) {
      rc = 1;
      break;
    }
    if (o.verbose) std::printf("server ping data: %s\n", s.sink());
    RpingInfo go{};
    if (!s.send_info(go) || !s.next_receive(&dst)) {
      rc = s.disconnected() ? 0 : 1;
      break;
    }
    if (o.debug)
      std::printf("Received rkey %x addr %" PRIx64 " len %u from peer\n", be32toh(dst.rkey), be64toh(dst.buf),
                  be32toh(dst.size));
    // rping writes back the string it read, with its terminating NUL.
    const uint32_t echo = std::min<uint32_t>(uint32_t(strnlen(s.sink(), len)) + 1, len);
    if (!s.rdma(false, dst, echo) || !s.send_info(go)) {
      rc = s.disconnected() ? 0 : 1;
      break;
    }
  }
  std::fflush(stdout);
  s.disconnect();
  return rc;
}

}  // namespace ndnic::nd_rping
