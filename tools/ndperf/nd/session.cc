#include "tools/ndperf/nd/session.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>

#include "nd_frontend/nd.h"
#include "nic/backoff.h"
#include "tools/nd_node/arguments.h"
#include "tools/nd_node/node.h"

namespace ndnic::ndperf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr SIZE_T kPrivateDataMax = 256;  ///< more than any REQ carries
constexpr SIZE_T kSge = 1;               ///< every request here has one SGE (or none)
constexpr SIZE_T kReadLimit = 16;        ///< ndnic's MaxInbound/OutboundReadLimit
constexpr auto kConnectPoll = std::chrono::milliseconds(1);
constexpr auto kCancelGrace = std::chrono::milliseconds(100);
constexpr auto kRetryPause = std::chrono::milliseconds(20);
// A blocked wait is woken this often to look at the CQ and the halt itself: a lost CQ
// notification costs this much, not the run, and Ctrl-C is seen this soon.
constexpr auto kNotifyRecheck = std::chrono::milliseconds(50);
constexpr auto kWatchdogTick = std::chrono::milliseconds(10);
constexpr unsigned kSpinsPerCheck = 1024;  ///< polling reads the clock and the halt this seldom

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

Session::Session(const Options& o, Node& node, const char* who, Halt& halt, bool patient)
    : o_(o), node_(node), who_(who), halt_(halt), patient_(patient) {}

Session::~Session() {
  if (o_.stats && looks_)
    std::printf("ndperf %s: %llu looks at the CQ, %.1f%% found nothing, %.2f results per look that found any\n",
                who_, (unsigned long long)looks_, 100.0 * double(looks_ - hit_looks_) / double(looks_),
                double(results_) / double(std::max<uint64_t>(1, hit_looks_)));
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  // Disconnect first, so the peer hears of it, then release (the SDK's Shutdown). Quietly:
  // a session that gets here connected has failed already and said why.
  for (Qp& q : qps_) {
    if (q.connected && !q.disconnected) {
      auto ov = std::make_unique<OVERLAPPED>();
      const HRESULT hr = q.conn->Disconnect(ov.get());
      await(q.conn, hr, std::move(ov), timeout(), patient_);
    }
  }
  for (Qp& q : qps_) release(q);
  release(pending_);
  if (listen_) listen_->Release();
  for (INDMemoryWindow* w : windows_) w->Release();  // before the registration they lie in
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  }
  if (cq_) cq_->Release();  // completes a pending Notify as canceled
  if (adapter_) adapter_->Release();
}

bool Session::fail(const std::string& what, HRESULT hr) const {
  if (hr == ND_SUCCESS)
    std::fprintf(stderr, "ndperf %s: %s\n", who_, what.c_str());
  else
    std::fprintf(stderr, "ndperf %s: %s: %s\n", who_, what.c_str(), nd_node::status_text(hr).c_str());
  return false;
}

bool Session::succeeded(const ND_RESULT* r, const std::string& what) const {
  if (r->Status == ND_SUCCESS) return true;
  if (r->Status == ND_CANCELED) return fail(what + ": canceled (the peer went away, or an earlier request failed)");
  return fail(what, r->Status);
}

bool Session::check(HRESULT hr, const std::string& what) {
  if (hr == ND_SUCCESS) return true;  // not SUCCEEDED(): ND_TIMEOUT has success severity
  if (hr == ND_CANCELED && halting(true)) {
    halted_ = true;
    return halt_.aborted() ? fail(what + ": stopped, the other side failed") : false;
  }
  if (hr == ND_IO_TIMEOUT) return fail(what + ": no answer in " + std::to_string(o_.timeout_s) + " s (--timeout)");
  return fail(what, hr);
}

bool Session::open() {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(node_.ipv4());
  HRESULT hr = NdOpenV1Adapter(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) return fail("NdOpenV1Adapter(" + nd_node::ipv4_text(node_.ipv4()) + ")", hr);
  OVERLAPPED ov{};
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
  if (worker_ >= 0) {
    INDAdapterExt* ext = nullptr;
    hr = adapter_->QueryInterface(IID_INDAdapterExt, reinterpret_cast<void**>(&ext));
    if (FAILED(hr)) return fail("QueryInterface(IID_INDAdapterExt)", hr);
    hr = ext->CreateCompletionQueueOnWorker(entries, ULONG(worker_), &cq_);
    ext->Release();
  } else {
    hr = adapter_->CreateCompletionQueue(entries, &cq_);
  }
  if (FAILED(hr)) return fail("CreateCompletionQueue(" + std::to_string(entries) + ")", hr);
  if (o_.events) watchdog_ = std::thread([this] { watchdog(); });
  return true;
}

bool Session::create_endpoint(Qp& q, const Depths& d) {
  HRESULT hr = q.conn ? ND_SUCCESS : adapter_->CreateConnector(&q.conn);
  if (FAILED(hr)) return fail("CreateConnector", hr);
  hr = q.conn->CreateEndpoint(cq_, cq_, d.inbound, d.outbound, kSge, kSge, kReadLimit, kReadLimit, nullptr, &q.ep);
  if (FAILED(hr)) return fail("CreateEndpoint", hr);
  return true;
}

void Session::release(Qp& q) {
  if (q.ext) q.ext->Release();
  if (q.ep) q.ep->Release();
  if (q.conn) q.conn->Release();
  q = Qp{};
}

INDEndpointExt* Session::ext(uint32_t qp) {
  Qp& q = qps_[qp];
  if (!q.ext && FAILED(q.ep->QueryInterface(IID_INDEndpointExt, reinterpret_cast<void**>(&q.ext)))) {
    fail("QueryInterface(IID_INDEndpointExt): the adapter has no ndnic extension");
    q.ext = nullptr;
  }
  return q.ext;
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

HRESULT Session::await(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, Clock::duration limit,
                       bool on_sigint) {
  // Polled, not GetOverlappedResult(bWait): a wait must end on a halt and on its limit, and
  // connection steps are rare enough for a millisecond's sleep.
  const auto end = limit == Clock::duration::max() ? Clock::time_point::max() : Clock::now() + limit;
  while (hr == ND_PENDING && !halting(on_sigint) && Clock::now() < end) {
    hr = obj->GetOverlappedResult(ov.get(), nullptr, FALSE);
    if (hr == ND_PENDING) std::this_thread::sleep_for(kConnectPoll);
  }
  if (hr != ND_PENDING) return hr;
  // Given up: cancel, and give the object a moment to complete the request as canceled. If it
  // does not, the OVERLAPPED stays allocated, since the request may still complete into it.
  obj->CancelOverlappedRequests();
  const auto grace = Clock::now() + kCancelGrace;
  while (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING && Clock::now() < grace)
    std::this_thread::sleep_for(kConnectPoll);
  if (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING) ov.release();
  return halting(on_sigint) ? ND_CANCELED : ND_IO_TIMEOUT;
}

bool Session::listen(uint16_t port) {
  const HRESULT hr = adapter_->Listen(0, 0, htons(port), nullptr, &listen_);
  if (FAILED(hr)) return fail("Listen on port " + std::to_string(port), hr);
  return true;
}

bool Session::get_request(Plan* plan) {
  release(pending_);
  HRESULT hr = adapter_->CreateConnector(&pending_.conn);
  if (FAILED(hr)) return fail("CreateConnector", hr);
  auto ov = std::make_unique<OVERLAPPED>();
  hr = listen_->GetConnectionRequest(pending_.conn, ov.get());
  // A server waits for its client as long as it takes (or until halted).
  if (!check(await(listen_, hr, std::move(ov), Clock::duration::max()), "GetConnectionRequest")) return false;
  std::vector<uint8_t> data(kPrivateDataMax, 0);
  SIZE_T len = data.size();
  hr = pending_.conn->GetConnectionData(nullptr, nullptr, data.data(), &len);
  if (FAILED(hr)) return fail("GetConnectionData", hr);
  const std::optional<Plan> p = decode_plan(data.data(), len);
  if (!p) {
    reject();
    return fail("refused a connection that is not from an ndperf client of this version");
  }
  *plan = *p;
  return true;
}

bool Session::accept(const Depths& d, const std::function<bool(uint32_t qp)>& post) {
  if (!create_endpoint(pending_, d)) return false;
  qps_.push_back(pending_);
  pending_ = Qp{};
  Qp& q = qps_.back();
  if (!post(qps() - 1)) return false;
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = q.conn->Accept(q.ep, nullptr, 0, ov.get());
  if (!check(await(q.conn, hr, std::move(ov), timeout()), "Accept")) return false;
  q.connected = true;
  return true;
}

void Session::reject() {
  if (pending_.conn) pending_.conn->Reject(nullptr, 0);
}

bool Session::wait_disconnect() {
  for (Qp& q : qps_) {
    if (!q.connected || q.disconnected) continue;
    auto ov = std::make_unique<OVERLAPPED>();
    const HRESULT hr = q.conn->NotifyDisconnect(ov.get());
    if (!check(await(q.conn, hr, std::move(ov), timeout(), patient_), "waiting for the client to disconnect"))
      return false;
    q.disconnected = true;
  }
  return true;
}

bool Session::connect(uint32_t ip, uint16_t port, const Plan& plan, const Depths& d,
                      const std::function<bool(uint32_t qp)>& post, Clock::duration retry) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(ip);
  const std::vector<uint8_t> data = encode(plan);
  const auto give_up = Clock::now() + retry;
  std::string where = "Connect to " + nd_node::ipv4_text(ip) + ":" + std::to_string(port);
  Qp q;
  for (;;) {
    if (!create_endpoint(q, d)) {
      release(q);
      return false;
    }
    auto ov = std::make_unique<OVERLAPPED>();
    HRESULT hr = q.conn->Connect(q.ep, reinterpret_cast<const sockaddr*>(&to), sizeof to, 0, 0, data.data(),
                                 data.size(), ov.get());
    hr = await(q.conn, hr, std::move(ov), timeout());
    if (hr == ND_SUCCESS) break;
    // Nobody listening yet (a server starting, or between two tests), or the host not up
    // yet: what the retry waits out. A failed connector and endpoint are not reused.
    const bool retryable = hr == ND_CONNECTION_REFUSED || hr == ND_TIMEOUT || hr == ND_IO_TIMEOUT ||
                           hr == ND_HOST_UNREACHABLE;
    release(q);
    if (!retryable || Clock::now() + kRetryPause > give_up || halt_.now()) {
      if (hr == ND_CONNECTION_REFUSED)
        where.append(" (nobody listens there, or the server refused the test and said why: start the server "
                     "first, or --retry)");
      return check(hr, where);
    }
    std::this_thread::sleep_for(kRetryPause);
  }
  qps_.push_back(q);
  qps_.back().connected = true;
  // Receives go up before CompleteConnect: the server may send as soon as it is established
  // (and not before Connect succeeded: a failed attempt's endpoint would flush them).
  if (!post(qps() - 1)) return false;
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = qps_.back().conn->CompleteConnect(ov.get());
  return check(await(qps_.back().conn, hr, std::move(ov), timeout()), "CompleteConnect");
}

bool Session::disconnect() {
  bool ok = true;
  for (Qp& q : qps_) {
    if (!q.connected || q.disconnected) continue;
    q.disconnected = true;
    auto ov = std::make_unique<OVERLAPPED>();
    const HRESULT hr = q.conn->Disconnect(ov.get());
    ok = check(await(q.conn, hr, std::move(ov), timeout(), patient_), "Disconnect") && ok;
  }
  return ok;
}

size_t Session::reap(ND_RESULT** out, size_t n) {
  const auto deadline = patient_ ? Clock::time_point::max() : Clock::now() + timeout();
  nic::Backoff backoff;  // a peer on this CPU gets it after a few us of empty looks, not a tick
  for (unsigned spins = 0;; spins++) {
    const SIZE_T k = cq_->GetResults(out, n);
    looks_++;
    if (k) {
      results_ += k;
      hit_looks_++;
      return k;
    }
    if ((o_.events || spins % kSpinsPerCheck == 0)) {
      // A client finishes its size after Ctrl-C (it drains what it posted); a server of its
      // own stops at once.
      if (halt_.aborted() || (patient_ && halt_.now())) {
        halted_ = true;
        if (halt_.aborted()) fail("stopped, the other side failed");
        return 0;
      }
      if (Clock::now() > deadline) {
        fail("no completion for " + std::to_string(o_.timeout_s) + " s (--timeout)");
        return 0;
      }
    }
    if (!o_.events) {
      backoff.idle();
      continue;
    }
    // Arm, look once more (a result may have come before the arming), then sleep.
    if (!armed_) {
      const HRESULT hr = cq_->Notify(ND_CQ_NOTIFY_ANY, &notify_ov_);
      if (hr != ND_PENDING) {
        fail("Notify", hr);
        return 0;
      }
      armed_ = true;
      continue;
    }
    waiting_since_ns_ = now_ns();
    const HRESULT hr = cq_->GetOverlappedResult(&notify_ov_, nullptr, TRUE);
    waiting_since_ns_ = 0;
    armed_ = false;
    if (hr != ND_SUCCESS && hr != ND_CANCELED) {
      fail("waiting on Notify", hr);
      return 0;
    }
  }
}

void Session::watchdog() {
  const int64_t recheck = std::chrono::duration_cast<std::chrono::nanoseconds>(kNotifyRecheck).count();
  std::unique_lock<std::mutex> g(mu_);
  while (!cv_.wait_for(g, kWatchdogTick, [this] { return stop_; })) {
    const int64_t since = waiting_since_ns_;
    if (since && (now_ns() - since > recheck || halt_.now())) cq_->CancelOverlappedRequests();
  }
}

}  // namespace ndnic::ndperf
