#include "tools/ndping/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>

#include "nd_frontend/nd.h"
#include "tools/nd_node/arguments.h"
#include "tools/nd_node/node.h"

namespace ndnic::ndping {
namespace {

using Clock = std::chrono::steady_clock;

constexpr SIZE_T kPrivateDataMax = 256;  ///< more than any REQ or REP carries
constexpr auto kRetryPause = std::chrono::milliseconds(200);
constexpr auto kConnectPoll = std::chrono::milliseconds(1);
constexpr auto kCancelGrace = std::chrono::milliseconds(100);
// A blocked wait is woken this often to look at the CQ itself: ndnic can lose a CQ
// notification (see late_wakeups_), and a lost one must cost milliseconds, not the run.
constexpr auto kNotifyRecheck = std::chrono::milliseconds(50);
constexpr auto kWatchdogTick = std::chrono::milliseconds(10);
constexpr unsigned kSpinsPerClockRead = 1024;  ///< polling reads the clock this seldom

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

}  // namespace

Connection::Connection(const Options& o, const char* who) : o_(o), who_(who) {}

Clock::duration Connection::timeout() const { return std::chrono::seconds(o_.timeout_s); }

Connection::~Connection() {
  if (late_wakeups_)
    fail(std::to_string(late_wakeups_) + " time(s) the CQ held results that Notify had not reported after " +
         std::to_string(kNotifyRecheck.count()) + " ms of waiting (a lost or late wake-up)");
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  // The SDK's Shutdown: disconnect first, so the peer hears of it, then release. Quietly: a
  // run that gets here connected has failed already and said why.
  if (connected_ && !disconnected_) {
    auto ov = std::make_unique<OVERLAPPED>();
    const HRESULT hr = conn_->Disconnect(ov.get());
    await(conn_, hr, std::move(ov), timeout());
  }
  std::lock_guard<std::mutex> g(mu_);
  release_endpoint();
  if (listen_) listen_->Release();
  listen_ = nullptr;
  if (mr_) {
    OVERLAPPED ov{};
    if (adapter_->DeregisterMemory(mr_, &ov) == ND_PENDING) adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  }
  if (cq_) cq_->Release();  // completes a pending Notify as canceled
  cq_ = nullptr;
  if (adapter_) adapter_->Release();
}

bool Connection::fail(const std::string& what, HRESULT hr) const {
  if (hr == ND_SUCCESS)
    std::fprintf(stderr, "%s %s: %s\n", tool_name(o_.tool), who_, what.c_str());
  else
    std::fprintf(stderr, "%s %s: %s: %s\n", tool_name(o_.tool), who_, what.c_str(),
                 nd_node::status_text(hr).c_str());
  return false;
}

bool Connection::open(uint32_t ipv4, const Limits& lim, size_t bytes) {
  lim_ = lim;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ipv4);
  HRESULT hr = NdOpenV1Adapter(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) return fail("NdOpenV1Adapter(" + nd_node::ipv4_text(ipv4) + ")", hr);
  ND_ADAPTER_INFO info{};
  SIZE_T size = sizeof info;
  hr = adapter_->Query(ND_VERSION_1, &info, &size);
  if (FAILED(hr)) return fail("INDAdapter::Query", hr);
  if (lim.inbound > info.MaxInboundRequests || lim.outbound > info.MaxOutboundRequests || o_.sge > info.MaxInboundSge ||
      o_.sge > info.MaxOutboundSge || lim.inbound + lim.outbound > info.MaxCqEntries)
    return fail("the adapter's limits are below what the test needs");
  hr = adapter_->CreateCompletionQueue(lim.inbound + lim.outbound, &cq_);
  if (FAILED(hr)) return fail("CreateCompletionQueue", hr);
  buf_.assign(bytes, 0);
  OVERLAPPED ov{};
  hr = adapter_->RegisterMemory(buf_.data(), buf_.size(), &ov, &mr_);
  if (hr == ND_PENDING) hr = adapter_->GetOverlappedResult(&ov, nullptr, TRUE);
  if (FAILED(hr)) {
    mr_ = nullptr;
    return fail("RegisterMemory", hr);
  }
  if (!create_endpoint()) return false;
  if (o_.blocking) watchdog_ = std::thread([this] { watchdog(); });
  return true;
}

bool Connection::create_endpoint() {
  HRESULT hr = adapter_->CreateConnector(&conn_);
  if (FAILED(hr)) return fail("CreateConnector", hr);
  // Send/Receive only: no inbound or outbound RDMA Read.
  hr = conn_->CreateEndpoint(cq_, cq_, lim_.inbound, lim_.outbound, o_.sge, o_.sge, 0, 0, nullptr, &ep_);
  if (FAILED(hr)) return fail("CreateEndpoint", hr);
  return true;
}

void Connection::release_endpoint() {
  if (ep_) ep_->Release();
  if (conn_) conn_->Release();
  ep_ = nullptr;
  conn_ = nullptr;
}

HRESULT Connection::await(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, Clock::duration limit) {
  // Polled, not GetOverlappedResult(bWait): a wait must end on abort() and on its limit, and
  // connection steps are rare enough for a millisecond's sleep.
  const auto end = limit == Clock::duration::max() ? Clock::time_point::max() : Clock::now() + limit;
  while (hr == ND_PENDING && !aborted_ && Clock::now() < end) {
    hr = obj->GetOverlappedResult(ov.get(), nullptr, FALSE);
    if (hr == ND_PENDING) std::this_thread::sleep_for(kConnectPoll);
  }
  if (hr != ND_PENDING) return hr;
  // Given up: cancel the request and give the object a moment to complete it as canceled.
  // If it does not (a provider may not cancel a connection step), the OVERLAPPED is left
  // allocated, since the request may still complete into it; only a failing run gets here.
  obj->CancelOverlappedRequests();
  const auto grace = Clock::now() + kCancelGrace;
  while (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING && Clock::now() < grace)
    std::this_thread::sleep_for(kConnectPoll);
  if (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING) ov.release();
  return aborted_ ? ND_CANCELED : ND_IO_TIMEOUT;
}

bool Connection::check(HRESULT hr, const std::string& what) const {
  if (hr == ND_SUCCESS) return true;  // not SUCCEEDED(): ND_TIMEOUT has success severity
  if (hr == ND_CANCELED && aborted_) return fail(what + ": stopped, the other side failed");
  if (hr == ND_IO_TIMEOUT) return fail(what + ": no answer in " + std::to_string(o_.timeout_s) + " s (--timeout)");
  return fail(what, hr);
}

bool Connection::listen(uint16_t port) {
  std::lock_guard<std::mutex> g(mu_);
  const HRESULT hr = adapter_->Listen(0, 0, htons(port), nullptr, &listen_);
  if (FAILED(hr)) return fail("Listen on port " + std::to_string(port), hr);
  return true;
}

bool Connection::get_request(std::vector<uint8_t>* data) {
  auto ov = std::make_unique<OVERLAPPED>();
  HRESULT hr = listen_->GetConnectionRequest(conn_, ov.get());
  // A server waits for its client as long as it takes (or until abort()).
  if (!check(await(listen_, hr, std::move(ov), Clock::duration::max()), "GetConnectionRequest")) return false;
  data->assign(kPrivateDataMax, 0);
  SIZE_T len = data->size();
  hr = conn_->GetConnectionData(nullptr, nullptr, data->data(), &len);
  if (FAILED(hr)) return fail("GetConnectionData", hr);
  data->resize(len);
  return true;
}

bool Connection::accept(const std::vector<uint8_t>& data) {
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->Accept(ep_, data.data(), data.size(), ov.get());
  if (!check(await(conn_, hr, std::move(ov), timeout()), "Accept")) return false;
  connected_ = true;
  return true;
}

void Connection::reject() { conn_->Reject(nullptr, 0); }

bool Connection::wait_disconnect() {
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->NotifyDisconnect(ov.get());
  if (!check(await(conn_, hr, std::move(ov), timeout()), "waiting for the client to disconnect")) return false;
  disconnected_ = true;
  return true;
}

bool Connection::connect(uint32_t ip, uint16_t port, const std::vector<uint8_t>& data, std::vector<uint8_t>* reply) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(ip);
  const auto give_up = Clock::now() + std::chrono::seconds(o_.retry_s);
  std::string where = "Connect to " + nd_node::ipv4_text(ip) + ":" + std::to_string(port);
  for (;;) {
    // The CM gives up on an unanswered request only after rdma_cm's retries (about a
    // minute): an attempt gets --timeout seconds.
    auto ov = std::make_unique<OVERLAPPED>();
    HRESULT hr = conn_->Connect(ep_, reinterpret_cast<const sockaddr*>(&to), sizeof to, 0, 0, data.data(),
                                data.size(), ov.get());
    hr = await(conn_, hr, std::move(ov), timeout());
    if (hr == ND_SUCCESS) break;
    // Nobody listening yet, or the host not up yet: what --retry waits out. A failed
    // connector and endpoint are not reused; the retry starts from new ones.
    const bool retryable = hr == ND_CONNECTION_REFUSED || hr == ND_TIMEOUT || hr == ND_IO_TIMEOUT ||
                           hr == ND_HOST_UNREACHABLE;
    if (!retryable || Clock::now() + kRetryPause > give_up) {
      if (hr == ND_CONNECTION_REFUSED) where.append(" (nobody listens there, or the server runs the other test)");
      return check(hr, where);
    }
    std::this_thread::sleep_for(kRetryPause);
    release_endpoint();
    if (!create_endpoint()) return false;
  }
  connected_ = true;
  reply->assign(kPrivateDataMax, 0);
  SIZE_T len = reply->size();
  const HRESULT hr = conn_->GetConnectionData(nullptr, nullptr, reply->data(), &len);
  if (FAILED(hr)) return fail("GetConnectionData", hr);
  reply->resize(len);
  return true;
}

bool Connection::complete_connect() {
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->CompleteConnect(ov.get());
  return check(await(conn_, hr, std::move(ov), timeout()), "CompleteConnect");
}

bool Connection::disconnect() {
  disconnected_ = true;
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->Disconnect(ov.get());
  return check(await(conn_, hr, std::move(ov), timeout()), "Disconnect");
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
  const HRESULT hr = ep_->Receive(r, sgl, n);
  return SUCCEEDED(hr) || fail("Receive", hr);
}

bool Connection::send(ND_RESULT* r, size_t offset, uint32_t len) {
  ND_SGE sgl[kMaxSge];
  const SIZE_T n = split(offset, len, sgl);
  const HRESULT hr = ep_->Send(r, n ? sgl : nullptr, n, 0);
  return SUCCEEDED(hr) || fail("Send", hr);
}

size_t Connection::results(ND_RESULT** out, size_t n) {
  const auto deadline = Clock::now() + timeout();
  for (unsigned spins = 0;; spins++) {
    const SIZE_T k = cq_->GetResults(out, n);
    if (k) return k;
    if (aborted_) {
      fail("stopped, the other side failed");
      return 0;
    }
    // Polling reads the clock only now and then; a blocking wait comes here once per wake-up.
    if ((o_.blocking || spins % kSpinsPerClockRead == 0) && Clock::now() > deadline) {
      fail("no completion for " + std::to_string(o_.timeout_s) + " s (--timeout)");
      return 0;
    }
    if (!o_.blocking) continue;
    // Blocking: arm, look once more (a result may have come before the arming), then sleep.
    if (!armed_) {
      const HRESULT hr = cq_->Notify(ND_CQ_NOTIFY_ANY, &notify_ov_);
      if (hr != ND_PENDING) {
        fail("Notify", hr);
        return 0;
      }
      armed_ = true;
      continue;
    }
    recheck_ = false;
    waiting_since_ns_ = now_ns();
    const HRESULT hr = cq_->GetOverlappedResult(&notify_ov_, nullptr, TRUE);
    waiting_since_ns_ = 0;
    armed_ = false;
    if (hr == ND_SUCCESS) continue;
    if (hr == ND_CANCELED && aborted_) {
      fail("stopped, the other side failed");
      return 0;
    }
    if (hr == ND_CANCELED && recheck_) {
      // The watchdog woke us to look: results here mean their notification never came.
      const SIZE_T late = cq_->GetResults(out, n);
      if (late) late_wakeups_++;
      if (late) return late;
      continue;
    }
    fail("waiting on Notify", hr);
    return 0;
  }
}

void Connection::abort() {
  std::lock_guard<std::mutex> g(mu_);
  aborted_ = true;
  if (cq_) cq_->CancelOverlappedRequests();  // a blocking wait for results; the others poll
}

void Connection::watchdog() {
  const int64_t recheck = std::chrono::duration_cast<std::chrono::nanoseconds>(kNotifyRecheck).count();
  std::unique_lock<std::mutex> g(mu_);
  while (!cv_.wait_for(g, kWatchdogTick, [this] { return stop_; })) {
    const int64_t since = waiting_since_ns_;
    if (since && now_ns() - since > recheck) {
      recheck_ = true;
      cq_->CancelOverlappedRequests();
    }
  }
}

}  // namespace ndnic::ndping
