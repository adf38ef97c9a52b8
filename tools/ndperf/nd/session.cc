#include "tools/ndperf/nd/session.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>

#include "ndnic/nd.h"
#include "ndnic/ndnic_ext.h"
#include "tools/nd_app/address.h"
#include "tools/nd_app/arguments.h"

namespace ndnic::ndperf {
namespace {

constexpr SIZE_T kSge = 1;               ///< every request here has one SGE (or none)
constexpr SIZE_T kReadLimit = 16;        ///< ndnic's MaxInbound/OutboundReadLimit
constexpr auto kRetryPause = std::chrono::milliseconds(20);

}  // namespace

Session::Session(const Options& o, Node& node, const char* who, nd_app::Halt& halt, bool patient)
    : o_(o), node_(node), who_(who), halt_(halt), actor_("ndperf", who, o.timeout_s, halt, patient),
      reaper_(actor_, o.events, true) {}

Session::~Session() {
  if (o_.stats && reaper_.looks())
    std::printf("ndperf %s: %llu looks at the CQ, %.1f%% found nothing, %.2f results per look that found any\n",
                who_, (unsigned long long)reaper_.looks(),
                100.0 * double(reaper_.looks() - reaper_.hit_looks()) / double(reaper_.looks()),
                double(reaper_.results()) / double(std::max<uint64_t>(1, reaper_.hit_looks())));
  // Disconnect first, so the peer hears of it, then release (the SDK's Shutdown).
  for (auto& q : qps_) q->close();
  qps_.clear();
  pending_.reset();
  if (listen_) listen_->Release();
  for (INDMemoryWindow* w : windows_) w->Release();  // before the registration they lie in
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  }
  reaper_.close();
  if (adapter_) adapter_->Release();
}

bool Session::failed(const ND_RESULT* r, std::string_view what) const {
  if (r->Status == ND_CANCELED)
    return fail(std::string(what) + ": canceled (the peer went away, or an earlier request failed)");
  return fail(std::string(what), r->Status);
}

std::span<Op*> Session::reap_ops(std::span<Op*> room) {
  ND_RESULT* got[kMaxReap];
  const size_t k = reap(got, std::min(room.size(), kMaxReap));
  for (size_t j = 0; j < k; j++) room[j] = op_of(got[j]);
  return room.first(k);
}

bool Session::open() {
  sockaddr_in sa = nd_app::ipv4_sockaddr(node_.ipv4());
  HRESULT hr = NdOpenV1Adapter(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) return fail("NdOpenV1Adapter(" + nd_app::ipv4_text(node_.ipv4()) + ")", hr);
  OVERLAPPED ov{};
  if (o_.notify_watch_us >= 0) {
    ULONG us = ULONG(o_.notify_watch_us);
    hr = adapter_->Control(NDNIC_CONTROL_NOTIFY_WATCH_US, &us, sizeof us, nullptr, 0, nullptr, &ov);
    if (FAILED(hr)) return fail("Control(NDNIC_CONTROL_NOTIFY_WATCH_US)", hr);
  }
  hr = adapter_->RegisterMemory(buf(), layout().total(), &ov, &mr_);
  if (hr == ND_PENDING) hr = adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  if (FAILED(hr)) {
    mr_ = nullptr;
    return fail("RegisterMemory", hr);
  }
  return true;
}

bool Session::set_group(const Plan& p) {
  worker_ = p.groups > 1 ? int(p.group) : -1;
  first_qp_ = p.first_qp;
  data_off_ = p.group * group_slice(p);
  if (data_off_ + p.last_size <= layout().area) return true;
  return fail("the buffer holds " + std::to_string(layout().area / group_slice(p)) + " groups of " +
              std::to_string(p.last_size) + " B, this test has " + std::to_string(p.groups) +
              " (give the server --threads " + std::to_string(p.groups) + ")");
}

bool Session::create_cq(size_t entries) {
  HRESULT hr;
  INDCompletionQueue* cq = nullptr;
  if (worker_ >= 0) {
    INDAdapterExt* ext = nullptr;
    hr = adapter_->QueryInterface(IID_INDAdapterExt, reinterpret_cast<void**>(&ext));
    if (FAILED(hr)) return fail("QueryInterface(IID_INDAdapterExt)", hr);
    hr = ext->CreateCompletionQueueOnWorker(entries, ULONG(worker_), &cq);
    ext->Release();
  } else {
    hr = adapter_->CreateCompletionQueue(entries, &cq);
  }
  if (FAILED(hr)) return fail("CreateCompletionQueue(" + std::to_string(entries) + ")", hr);
  reaper_.attach(cq);
  return true;
}

nd_app::EndpointShape Session::shape(const Depths& d) const {
  return nd_app::EndpointShape{d.inbound, d.outbound, kSge, kReadLimit};
}

INDMemoryWindow* Session::create_window(Op* invalidated) {
  INDMemoryWindow* mw = nullptr;
  const HRESULT hr = adapter_->CreateMemoryWindow(invalidated, &mw);
  if (FAILED(hr)) {
    fail("CreateMemoryWindow", hr);
    return nullptr;
  }
  windows_.push_back(mw);
  return mw;
}

bool Session::listen(uint16_t port) {
  const HRESULT hr = adapter_->Listen(0, 0, htons(port), nullptr, &listen_);
  if (FAILED(hr)) return fail("Listen on port " + std::to_string(port), hr);
  return true;
}

bool Session::get_request(Plan* plan) {
  pending_ = std::make_unique<nd_app::Connection>(actor_);
  std::vector<uint8_t> data;
  if (!pending_->get_request(adapter_, listen_, &data)) return false;
  const std::optional<Plan> p = decode_plan(data.data(), data.size());
  if (!p) {
    reject();
    return fail("refused a connection that is not from an ndperf client of this version");
  }
  *plan = *p;
  return true;
}

bool Session::accept(const Depths& d, const std::function<bool(uint32_t qp)>& post) {
  if (!pending_->create_endpoint(adapter_, reaper_.cq(), shape(d))) return false;
  qps_.push_back(std::move(pending_));
  return post(qps() - 1) && qps_.back()->accept({});
}

void Session::reject() {
  if (pending_) pending_->reject();
}

bool Session::wait_disconnect() {
  for (auto& q : qps_)
    if (!q->wait_disconnect()) return false;
  return true;
}

bool Session::connect(uint32_t ip, uint16_t port, const Plan& plan, const Depths& d,
                      const std::function<bool(uint32_t qp)>& post, Clock::duration retry) {
  nd_app::Dial dial;
  dial.ip = ip;
  dial.port = port;
  dial.private_data = encode(plan);
  dial.retry = retry;
  dial.pause = kRetryPause;
  dial.refused_hint =
      " (nobody listens there, or the server refused the test and said why: start the server first, or --retry)";
  auto q = std::make_unique<nd_app::Connection>(actor_);
  if (!q->connect(adapter_, reaper_.cq(), shape(d), dial, nullptr)) return false;
  qps_.push_back(std::move(q));
  // Receives go up before CompleteConnect: the server may send as soon as it is established.
  return post(qps() - 1) && qps_.back()->complete_connect();
}

bool Session::disconnect() {
  bool ok = true;
  for (auto& q : qps_) ok = q->disconnect() && ok;
  return ok;
}

}  // namespace ndnic::ndperf
