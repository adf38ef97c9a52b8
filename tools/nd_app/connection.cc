#include "tools/nd_app/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <thread>

#include "tools/nd_app/address.h"
#include "tools/nd_app/arguments.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_app {
namespace {

constexpr SIZE_T kPrivateDataMax = 256;  ///< more than any REQ or REP carries

}  // namespace

bool Connection::create_endpoint(INDAdapter* adapter, INDCompletionQueue* cq, const EndpointShape& s) {
  HRESULT hr = conn_ ? ND_SUCCESS : adapter->CreateConnector(&conn_);
  if (FAILED(hr)) return actor_.fail("CreateConnector", hr);
  hr = conn_->CreateEndpoint(cq, cq, s.inbound, s.outbound, s.sge, s.sge, s.read_limit, s.read_limit, nullptr, &ep_);
  if (FAILED(hr)) return actor_.fail("CreateEndpoint", hr);
  return true;
}

void Connection::release() {
  if (ext_) ext_->Release();
  if (ep_) ep_->Release();
  if (conn_) conn_->Release();
  ext_ = nullptr;
  ep_ = nullptr;
  conn_ = nullptr;
  connected_ = disconnected_ = false;
}

void Connection::adopt(INDConnector* conn) {
  release();
  conn_ = conn;
}

void Connection::close() {
  if (connected_ && !disconnected_) {
    auto ov = std::make_unique<OVERLAPPED>();
    const HRESULT hr = conn_->Disconnect(ov.get());
    const bool on_sigint = actor_.patient();
    await(conn_, hr, std::move(ov), actor_.timeout(), [&] { return actor_.halting(on_sigint); });
  }
  release();
}

bool Connection::finish(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov,
                        std::chrono::steady_clock::duration limit, bool on_sigint, const std::string& what) {
  return actor_.check(await(obj, hr, std::move(ov), limit, [&] { return actor_.halting(on_sigint); }), what);
}

INDEndpointExt* Connection::ext() {
  if (!ext_ && FAILED(ep_->QueryInterface(IID_INDEndpointExt, reinterpret_cast<void**>(&ext_)))) {
    actor_.fail("QueryInterface(IID_INDEndpointExt): the adapter has no ndnic extension");
    ext_ = nullptr;
  }
  return ext_;
}

bool Connection::get_request(INDAdapter* adapter, INDListen* listen, std::vector<uint8_t>* data) {
  HRESULT hr = conn_ ? ND_SUCCESS : adapter->CreateConnector(&conn_);
  if (FAILED(hr)) return actor_.fail("CreateConnector", hr);
  auto ov = std::make_unique<OVERLAPPED>();
  hr = listen->GetConnectionRequest(conn_, ov.get());
  // A server waits for its client as long as it takes (or until halted).
  if (!finish(listen, hr, std::move(ov), std::chrono::steady_clock::duration::max(), true, "GetConnectionRequest"))
    return false;
  data->assign(kPrivateDataMax, 0);
  SIZE_T len = data->size();
  hr = conn_->GetConnectionData(nullptr, nullptr, data->data(), &len);
  if (FAILED(hr)) return actor_.fail("GetConnectionData", hr);
  data->resize(len);
  return true;
}

bool Connection::accept(const std::vector<uint8_t>& data) {
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->Accept(ep_, data.empty() ? nullptr : data.data(), data.size(), ov.get());
  if (!finish(conn_, hr, std::move(ov), actor_.timeout(), true, "Accept")) return false;
  connected_ = true;
  return true;
}

void Connection::reject() {
  if (conn_) conn_->Reject(nullptr, 0);
}

bool Connection::wait_disconnect() {
  if (!connected_ || disconnected_) return true;
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->NotifyDisconnect(ov.get());
  if (!finish(conn_, hr, std::move(ov), actor_.timeout(), actor_.patient(), "waiting for the client to disconnect"))
    return false;
  disconnected_ = true;
  return true;
}

bool Connection::connect(INDAdapter* adapter, INDCompletionQueue* cq, const EndpointShape& shape, const Dial& dial,
                         std::vector<uint8_t>* reply) {
  sockaddr_in to = nd_app::ipv4_sockaddr(dial.ip, dial.port);
  const auto give_up = std::chrono::steady_clock::now() + dial.retry;
  std::string where = "Connect to " + ipv4_text(dial.ip) + ":" + std::to_string(dial.port);
  const std::vector<uint8_t>& data = dial.private_data;
  for (;;) {
    if (!ep_ && !create_endpoint(adapter, cq, shape)) {
      release();
      return false;
    }
    // The CM gives up on an unanswered request only after rdma_cm's retries (about a minute):
    // an attempt gets --timeout seconds.
    auto ov = std::make_unique<OVERLAPPED>();
    HRESULT hr = conn_->Connect(ep_, reinterpret_cast<const sockaddr*>(&to), sizeof to, 0, 0,
                                data.empty() ? nullptr : data.data(), data.size(), ov.get());
    hr = await(conn_, hr, std::move(ov), actor_.timeout(), [&] { return actor_.halting(true); });
    if (hr == ND_SUCCESS) break;
    // Nobody listening yet, or the host not up yet: what the retry waits out. A failed
    // connector and endpoint are not reused.
    const bool retryable = hr == ND_CONNECTION_REFUSED || hr == ND_TIMEOUT || hr == ND_IO_TIMEOUT ||
                           hr == ND_HOST_UNREACHABLE;
    release();
    if (!retryable || std::chrono::steady_clock::now() + dial.pause > give_up || actor_.halt().now()) {
      if (hr == ND_CONNECTION_REFUSED) where.append(dial.refused_hint);
      return actor_.check(hr, where);
    }
    std::this_thread::sleep_for(dial.pause);
  }
  connected_ = true;
  if (!reply) return true;
  reply->assign(kPrivateDataMax, 0);
  SIZE_T len = reply->size();
  const HRESULT hr = conn_->GetConnectionData(nullptr, nullptr, reply->data(), &len);
  if (FAILED(hr)) return actor_.fail("GetConnectionData", hr);
  reply->resize(len);
  return true;
}

bool Connection::complete_connect() {
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->CompleteConnect(ov.get());
  return finish(conn_, hr, std::move(ov), actor_.timeout(), true, "CompleteConnect");
}

bool Connection::disconnect() {
  if (!connected_ || disconnected_) return true;
  disconnected_ = true;
  auto ov = std::make_unique<OVERLAPPED>();
  const HRESULT hr = conn_->Disconnect(ov.get());
  return finish(conn_, hr, std::move(ov), actor_.timeout(), actor_.patient(), "Disconnect");
}

}  // namespace ndnic::nd_app
