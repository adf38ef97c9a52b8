#include "tools/ndping/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "ndnic/nd.h"
#include "tools/nd_app/address.h"
#include "tools/nd_app/arguments.h"

namespace ndnic::ndping {
namespace {

constexpr auto kRetryPause = std::chrono::milliseconds(200);

}  // namespace

Connection::Connection(const Options& o, const char* who)
    : o_(o), actor_(tool_name(o.tool), who, o.timeout_s, halt_, false), reaper_(actor_, o.blocking, false),
      conn_(actor_) {}

Connection::~Connection() {
  if (reaper_.late_wakeups())
    fail(std::to_string(reaper_.late_wakeups()) + " time(s) the CQ held results that Notify had not reported after " +
         std::to_string(nd_app::kNotifyRecheck.count()) + " ms of waiting (a lost or late wake-up)");
  conn_.close();
  if (listen_) listen_->Release();
  listen_ = nullptr;
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  }
  reaper_.close();
  if (adapter_) adapter_->Release();
}

nd_app::EndpointShape Connection::shape() const {
  // Send/Receive only: no inbound or outbound RDMA Read.
  return nd_app::EndpointShape{lim_.inbound, lim_.outbound, o_.sge, 0};
}

bool Connection::open(uint32_t ipv4, const Limits& lim, size_t bytes) {
  lim_ = lim;
  sockaddr_in sa = nd_app::ipv4_sockaddr(ipv4);
  HRESULT hr = NdOpenV1Adapter(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) return fail("NdOpenV1Adapter(" + nd_app::ipv4_text(ipv4) + ")", hr);
  ND_ADAPTER_INFO info{};
  SIZE_T size = sizeof info;
  hr = adapter_->Query(ND_VERSION_1, &info, &size);
  if (FAILED(hr)) return fail("INDAdapter::Query", hr);
  if (lim.inbound > info.MaxInboundRequests || lim.outbound > info.MaxOutboundRequests || o_.sge > info.MaxInboundSge ||
      o_.sge > info.MaxOutboundSge || lim.inbound + lim.outbound > info.MaxCqEntries)
    return fail("the adapter's limits are below what the test needs");
  INDCompletionQueue* cq = nullptr;
  hr = adapter_->CreateCompletionQueue(lim.inbound + lim.outbound, &cq);
  if (FAILED(hr)) return fail("CreateCompletionQueue", hr);
  buf_.assign(bytes, 0);
  OVERLAPPED ov{};
  hr = adapter_->RegisterMemory(buf_.data(), buf_.size(), &ov, &mr_);
  if (hr == ND_PENDING) hr = adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  if (FAILED(hr)) {
    mr_ = nullptr;
    cq->Release();
    return fail("RegisterMemory", hr);
  }
  if (!conn_.create_endpoint(adapter_, cq, shape())) {
    cq->Release();
    return false;
  }
  reaper_.attach(cq);
  return true;
}

bool Connection::listen(uint16_t port) {
  const HRESULT hr = adapter_->Listen(0, 0, htons(port), nullptr, &listen_);
  if (FAILED(hr)) return fail("Listen on port " + std::to_string(port), hr);
  return true;
}

bool Connection::connect(uint32_t ip, uint16_t port, const std::vector<uint8_t>& data, std::vector<uint8_t>* reply) {
  nd_app::Dial dial;
  dial.ip = ip;
  dial.port = port;
  dial.private_data = data;
  dial.retry = std::chrono::seconds(o_.retry_s);
  dial.pause = kRetryPause;
  dial.refused_hint = " (nobody listens there, or the server runs the other test)";
  return conn_.connect(adapter_, reaper_.cq(), shape(), dial, reply);
}

SIZE_T Connection::split(size_t offset, uint32_t len, ND_SGE* sgl) {
  // The SDK's PrepareSge: the bytes split evenly over the entries, none of them empty.
  const SIZE_T n = std::min<SIZE_T>(o_.sge, len);
  SIZE_T at = offset;
  for (SIZE_T i = 0; i < n; i++) {
    const SIZE_T piece = i + 1 < n ? len / n : len - (len / n) * (n - 1);
    sgl[i] = ND_SGE{buf_.data() + at, piece, mr_};
    at += piece;
  }
  return n;
}

bool Connection::receive(ND_RESULT* r, size_t offset, uint32_t len) {
  ND_SGE sgl[kMaxSge];
  const SIZE_T n = split(offset, len, sgl);
  const HRESULT hr = conn_.endpoint()->Receive(r, sgl, n);
  return SUCCEEDED(hr) || fail("Receive", hr);
}

bool Connection::send(ND_RESULT* r, size_t offset, uint32_t len) {
  ND_SGE sgl[kMaxSge];
  const SIZE_T n = split(offset, len, sgl);
  const HRESULT hr = conn_.endpoint()->Send(r, n ? sgl : nullptr, n, 0);
  return SUCCEEDED(hr) || fail("Send", hr);
}

}  // namespace ndnic::ndping
