#include "tests/interop/nd_peer/peer.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tests/interop/nd_peer/checks.h"
#include "tools/nd_app/address.h"
#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_peer {
namespace {

using Clock = std::chrono::steady_clock;
using nd_app::status_text;

constexpr auto kIdleSleep = std::chrono::microseconds(20);
constexpr auto kConnectWait = std::chrono::seconds(30);
constexpr auto kRetryPause = std::chrono::milliseconds(250);
constexpr SIZE_T kCqDepth = 2 * kQueueDepth;

Clock::time_point after(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

bool setup_ok(const char* what, HRESULT hr) {
  if (FAILED(hr) || hr == ND_TIMEOUT) {
    std::printf("setup error: %s: %s\n", what, status_text(hr).c_str());
    return false;
  }
  return true;
}

}  // namespace

Peer::~Peer() {
  if (ext_) ext_->Release();
  if (ep_) ep_->Release();
  if (conn_) conn_->Release();
  if (listen_) listen_->Release();
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) nd_app::wait_overlapped(adapter_, &ov, after(5000));
  }
  if (in_cq_) in_cq_->Release();
  if (out_cq_) out_cq_->Release();
  std::free(buf_);
}

bool Peer::open(const ConnectOptions& o) {
  if (!setup_ok("CreateCompletionQueue", adapter_->CreateCompletionQueue(kCqDepth, &in_cq_)) ||
      !setup_ok("CreateCompletionQueue", adapter_->CreateCompletionQueue(kCqDepth, &out_cq_)))
    return false;
  buf_size_ = kPoolSlots * kSlotSize + kSendAreaSize + kAreaSize;
  buf_ = static_cast<uint8_t*>(std::aligned_alloc(4096, buf_size_));
  std::memset(buf_, 0, buf_size_);
  OVERLAPPED ov{};
  HRESULT hr = adapter_->RegisterMemory(buf_, buf_size_, &ov, &mr_);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(adapter_, &ov, after(5000));
  if (!setup_ok("RegisterMemory", hr)) {
    mr_ = nullptr;
    return false;
  }
  return o.server ? accept(o) : connect(o);
}

// A fresh connector and endpoint (a refused Connect spends its connector), the pool posted.
static bool new_endpoint(INDAdapter* ad, INDCompletionQueue* in, INDCompletionQueue* out, INDConnector** conn,
                         INDEndpoint** ep, INDEndpointExt** ext) {
  if (*ext) (*ext)->Release();
  if (*ep) (*ep)->Release();
  if (*conn) (*conn)->Release();
  *ext = nullptr;
  *ep = nullptr;
  *conn = nullptr;
  if (!setup_ok("CreateConnector", ad->CreateConnector(conn))) return false;
  SIZE_T max_inline = 0;
  if (!setup_ok("CreateEndpoint", (*conn)->CreateEndpoint(in, out, kQueueDepth, kQueueDepth, 1, 1, kReadDepth,
                                                          kReadDepth, &max_inline, ep)))
    return false;
  return setup_ok("QueryInterface(IID_INDEndpointExt)",
                  (*ep)->QueryInterface(IID_INDEndpointExt, reinterpret_cast<void**>(ext)));
}

bool Peer::connect(const ConnectOptions& o) {
  sockaddr_in to = nd_app::ipv4_sockaddr(o.peer_ipv4, o.port);
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(o.retry_s);
  for (;;) {
    if (!new_endpoint(adapter_, in_cq_, out_cq_, &conn_, &ep_, &ext_)) return false;
    // The old endpoint's receives were flushed with it: reap them, post the pool again.
    while (reap()) {
    }
    posted_.clear();
    if (o.post_pool)
      for (unsigned i = 0; i < kPoolSlots; i++)
        if (!post_slot(i)) return false;
    OVERLAPPED ov{};
    HRESULT hr = conn_->Connect(ep_, reinterpret_cast<sockaddr*>(&to), sizeof to, 0, 0, nullptr, 0, &ov);
    if (hr == ND_PENDING) hr = nd_app::wait_overlapped(conn_, &ov, Clock::now() + kConnectWait);
    // Refused: nobody listens yet; unreachable or timed out: the guest is not up yet.
    const bool not_yet = hr == ND_CONNECTION_REFUSED || hr == ND_HOST_UNREACHABLE || hr == ND_TIMEOUT;
    if (not_yet && Clock::now() < give_up) {
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    if (!setup_ok("Connect", hr)) return false;
    break;
  }
  OVERLAPPED ov{};
  HRESULT hr = conn_->CompleteConnect(&ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(conn_, &ov, Clock::now() + kConnectWait);
  return setup_ok("CompleteConnect", hr);
}

bool Peer::accept(const ConnectOptions& o) {
  if (!setup_ok("Listen", adapter_->Listen(1, 0, htons(o.port), nullptr, &listen_))) return false;
  if (!new_endpoint(adapter_, in_cq_, out_cq_, &conn_, &ep_, &ext_)) return false;
  if (o.post_pool)
    for (unsigned i = 0; i < kPoolSlots; i++)
      if (!post_slot(i)) return false;
  OVERLAPPED ov{};
  HRESULT hr = listen_->GetConnectionRequest(conn_, &ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(listen_, &ov, Clock::now() + std::chrono::seconds(90));
  if (!setup_ok("GetConnectionRequest", hr)) return false;
  hr = conn_->Accept(ep_, nullptr, 0, &ov);
  if (hr == ND_PENDING) hr = nd_app::wait_overlapped(conn_, &ov, Clock::now() + kConnectWait);
  return setup_ok("Accept", hr);
}

void Peer::disconnect() {
  if (!conn_) return;
  OVERLAPPED ov{};
  if (conn_->Disconnect(&ov) == ND_PENDING) nd_app::wait_overlapped(conn_, &ov, after(3000));
}

bool Peer::post_slot(unsigned slot) {
  ND_SGE sge{buf_ + slot * kSlotSize, kSlotSize, mr_};
  const HRESULT hr = ext_->ReceiveExt(&slots_[slot], &sge, 1);
  if (FAILED(hr)) {
    fail("ReceiveExt", status_text(hr), "ND_SUCCESS");
    return false;
  }
  posted_.push_back(slot);
  return true;
}

bool Peer::reap() {
  ND_RESULT* got[16];
  const SIZE_T n = in_cq_->GetResults(got, 16);
  for (SIZE_T i = 0; i < n; i++) inbound_order_.push_back(got[i]);
  return out_cq_->GetResults(got, 16) + n > 0;
}

bool Peer::wait(const ND_RESULT* r, int ms) {
  const Clock::time_point end = after(ms);
  while (r->Status == ND_PENDING) {
    if (reap()) continue;
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(kIdleSleep);
  }
  return true;
}

NDNIC_RESULT* Peer::next_recv(const std::string& what, int ms) {
  if (posted_.empty()) {
    fail(what, "no receive posted", "one");
    return nullptr;
  }
  NDNIC_RESULT* r = &slots_[posted_.front()];
  if (!wait(r, ms)) {
    fail(what, "no receive result in " + std::to_string(ms) + " ms", "one");
    return nullptr;
  }
  posted_.pop_front();
  return r;
}

bool Peer::posted(const std::string& what, HRESULT hr) {
  if (hr == ND_SUCCESS || hr == ND_PENDING) return true;
  fail(what, "the call returned " + status_text(hr), "ND_SUCCESS");
  return false;
}

bool Peer::send_ctl(Ctl kind, const ND_MW_DESCRIPTOR* d) {
  uint8_t* m = send_area();
  const uint32_t k = htonl(uint32_t(kind)), v = 0;
  std::memcpy(m, &k, 4);
  std::memcpy(m + 4, &v, 4);
  if (d)
    std::memcpy(m + 8, d, sizeof *d);  // already in network order
  else
    std::memset(m + 8, 0, sizeof(ND_MW_DESCRIPTOR));
  ND_SGE sge{m, kCtlSize, mr_};
  ND_RESULT r{};
  if (!posted("control send", ep_->Send(&r, &sge, 1, 0))) return false;
  if (!wait(&r)) {
    fail("control send", "no result in " + std::to_string(kWaitMs) + " ms", "ND_SUCCESS");
    return false;
  }
  if (r.Status != ND_SUCCESS) {
    fail("control send", status_text(r.Status), "ND_SUCCESS");
    return false;
  }
  return true;
}

bool Peer::recv_ctl(Ctl kind, ND_MW_DESCRIPTOR* d) {
  const std::string what = "control message " + std::to_string(uint32_t(kind));
  NDNIC_RESULT* r = next_recv(what);
  if (!r) return false;
  if (r->Status != ND_SUCCESS || r->BytesTransferred != kCtlSize) {
    fail(what, status_text(r->Status) + ", " + std::to_string(r->BytesTransferred) + " bytes",
         "ND_SUCCESS, " + std::to_string(kCtlSize) + " bytes");
    return false;
  }
  const uint8_t* m = data_of(r);
  uint32_t k;
  std::memcpy(&k, m, 4);
  if (ntohl(k) != uint32_t(kind)) {
    fail(what, "kind " + std::to_string(ntohl(k)), "kind " + std::to_string(uint32_t(kind)));
    return false;
  }
  if (d) std::memcpy(d, m + 8, sizeof *d);
  return post_slot(slot_of(r));
}

void Peer::expect_flushed(const std::string& side) {
  const size_t n = posted_.size();
  size_t flushed = 0, other = 0;
  HRESULT seen = ND_SUCCESS;
  while (!posted_.empty()) {
    const NDNIC_RESULT* r = &slots_[posted_.front()];
    if (!wait(r)) break;
    posted_.pop_front();
    if (r->Status == ND_CANCELED) {
      flushed++;
    } else {
      other++;
      seen = r->Status;
    }
  }
  const std::string what = side + ": the " + std::to_string(n) + " posted receives come back flushed";
  if (n > 0 && flushed == n)
    ok(what + " (ND_CANCELED)");
  else
    fail(what,
         std::to_string(flushed) + " ND_CANCELED, " + std::to_string(other) + " other (" + status_text(seen) + "), " +
             std::to_string(n - flushed - other) + " missing",
         std::to_string(n) + " ND_CANCELED");
}

}  // namespace ndnic::nd_peer
