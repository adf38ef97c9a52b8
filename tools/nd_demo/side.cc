#include "tools/nd_demo/side.h"

#include <endian.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace ndnic::nd_demo {

using nd_app::status_text;

int g_failures = 0;

void say(const char* who, const std::string& what) {
  std::printf("  %-6s %s\n", who, what.c_str());
  std::fflush(stdout);
}

bool check(bool ok, const char* who, const std::string& what) {
  std::printf("  %-6s %s %s\n", who, ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) g_failures++;
  std::fflush(stdout);
  return ok;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

int finish_line() {
  std::printf("\n%s\n", g_failures ? "nd_demo: SOME STEPS FAILED" : "nd_demo: every step did what it should");
  return g_failures ? 1 : 0;
}

Side::~Side() {
  drop_connection();
  if (mr) {
    OVERLAPPED ov{};
    adapter()->DeregisterMemory(mr, &ov);
  }
  if (cq) cq->Release();
}

HRESULT finish_or_cancel(Side& s, INDOverlapped* o, OVERLAPPED* ov, HRESULT hr, Clock::duration timeout) {
  hr = s.finish(o, ov, hr, timeout);
  if (hr != ND_TIMEOUT) return hr;
  o->CancelOverlappedRequests();
  s.finish(o, ov, ND_PENDING);
  return ND_TIMEOUT;
}

bool open_side(Side& s, const nd_app::NodeConfig& nc) {
  if (!s.node.open(nc)) {
    std::fprintf(stderr, "nd_demo: %s: %s\n", s.name, s.node.error().c_str());
    return false;
  }
  return prepare_side(s);
}

bool prepare_side(Side& s) {
  if (FAILED(s.adapter()->CreateCompletionQueue(64, &s.cq))) return false;
  OVERLAPPED ov{};
  const HRESULT hr = s.finish(s.adapter(), &ov, s.adapter()->RegisterMemory(s.buf.data(), s.buf.size(), &ov, &s.mr));
  return check(hr == ND_SUCCESS, s.name, "registered " + std::to_string(kBuffer >> 10) + " KiB: " + status_text(hr));
}

bool create_endpoint(Side& s) { return s.link.create_endpoint(s.adapter(), s.cq, nd_app::EndpointShape{8, 8, 2, 2}); }

bool new_endpoint(Side& s) {
  s.drop_connection();
  return create_endpoint(s);
}

bool bind(Side& owner, INDMemoryWindow* mw, ND_MW_DESCRIPTOR* desc) {
  ND_RESULT r{};
  HRESULT hr = owner.ep()->Bind(&r, owner.mr, mw, owner.buf.data() + kWindowOffset, kWindowLength,
                              ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, desc);
  const bool ok = SUCCEEDED(hr) && owner.wait(&r) && r.Status == ND_SUCCESS;
  return check(ok, owner.name,
               "window bound over " + std::to_string(kWindowLength >> 10) + " KiB (read+write): token " +
                   hex(be32toh(desc->Token)) + ", base " + hex(be64toh(desc->Base)));
}

HRESULT write(Side& peer, const ND_MW_DESCRIPTOR& desc, size_t off, uint8_t fill) {
  std::memset(peer.buf.data() + 4096, fill, kPayload);
  ND_SGE s = peer.sge(4096, kPayload);
  ND_RESULT r{};
  if (FAILED(peer.ep()->Write(&r, &s, 1, &desc, off, 0))) return ND_FAILURE;
  return peer.wait(&r) ? r.Status : ND_TIMEOUT;
}

bool post_receive(Side& s, ND_RESULT* r, size_t off, size_t len) {
  ND_SGE in = s.sge(off, len);
  const HRESULT hr = s.ep()->Receive(r, &in, 1);
  return SUCCEEDED(hr) || check(false, s.name, "posting a receive: " + status_text(hr));
}

bool send(Side& s, const void* what, size_t len) {
  std::memcpy(s.buf.data(), what, len);
  ND_SGE out = s.sge(0, len);
  ND_RESULT r{};
  return SUCCEEDED(s.ep()->Send(&r, &out, 1, 0)) && s.wait(&r) && r.Status == ND_SUCCESS;
}

void check_invalidate_then_receive(Side& owner, const ND_RESULT* invalidated, const ND_RESULT* rr,
                                   Clock::duration timeout) {
  std::vector<ND_RESULT*> order;
  order.swap(owner.reaped);  // arrived while the owner waited for its own Send
  const auto end = Clock::now() + timeout;
  while (order.size() < 2 && Clock::now() < end) {
    ND_RESULT* r[4];
    const SIZE_T n = owner.cq->GetResults(r, 4);
    order.insert(order.end(), r, r + n);
    // The other side may take a while (another process): leave the processor to the workers.
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  check(order.size() == 2 && order[0] == invalidated && invalidated->Status == ND_SUCCESS, owner.name,
        "result 1: the window's invalidate result, " + status_text(invalidated->Status));
  const char* text = reinterpret_cast<const char*>(owner.buf.data() + kMessageOffset);
  check(order.size() == 2 && order[1] == rr && rr->Status == ND_SUCCESS && rr->BytesTransferred == sizeof kThanks &&
            std::memcmp(text, kThanks, sizeof kThanks) == 0,
        owner.name,
        "result 2: the receive, " + std::to_string(rr->BytesTransferred) + " bytes: \"" +
            std::string(text, strnlen(text, 64)) + "\"");
}

}  // namespace ndnic::nd_demo
