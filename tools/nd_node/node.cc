#include "tools/nd_node/node.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_lcore.h>

#include <cstdio>
#include <thread>

#include "cm/cm.h"
#include "nd_frontend/nd.h"
#include "nd_frontend/status.h"

namespace ndnic::nd_node {
namespace {

// A waiter that sleeps this long between empty polls leaves the CPU to the worker lcore when
// both share one core, and still answers within a few microseconds.
constexpr auto kIdleSleep = std::chrono::microseconds(20);

}  // namespace

bool Node::open(const NodeConfig& c) {
  unsigned lcore = c.lcore ? c.lcore : rte_get_next_lcore(-1, 1, 0);
  if (lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore) || lcore == rte_get_main_lcore()) {
    error_ = "no worker lcore: give EAL two lcores (e.g. -l 0,1 or --lcores 0@0,1@0)";
    return false;
  }
  glue::PortConfig pc;
  pc.device = c.device;
  pc.ipv4 = c.ipv4;
  pc.capture_path = c.capture;
  if (!port_.open(pc)) {
    error_ = "port " + c.device;
    error_.append(": ").append(port_.error());
    return false;
  }
  nic::DeviceConfig dc;
  dc.ports = {&port_};
  dc.lcores = {lcore};
  if (!dev_.open(dc)) {
    error_ = "device: " + dev_.error();
    return false;
  }
  dev_open_ = true;
  cm::Config cm;
  cm.rnr_retry_count = c.rnr_retry_count;
  if (!nd::register_adapter(&dev_, &port_, &cm)) {
    error_ = "registering the ND provider failed";
    return false;
  }
  registered_ = true;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(c.ipv4);
  const HRESULT hr = NdOpenV1Adapter(reinterpret_cast<sockaddr*>(&sa), sizeof sa, &adapter_);
  if (FAILED(hr)) {
    error_ = "NdOpenV1Adapter: " + status_text(hr);
    return false;
  }
  return true;
}

void Node::close() {
  if (adapter_) adapter_->Release();
  adapter_ = nullptr;
  if (registered_) nd::unregister_adapter(&port_);
  registered_ = false;
  if (dev_open_) dev_.close();
  dev_open_ = false;
  port_.close();
}

bool wait_result(INDCompletionQueue* cq, const ND_RESULT* r, std::chrono::steady_clock::time_point deadline) {
  ND_RESULT* got[16];
  while (r->Status == ND_PENDING) {
    if (cq->GetResults(got, 16) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(kIdleSleep);
    }
  }
  return true;
}

HRESULT wait_overlapped(INDOverlapped* o, OVERLAPPED* ov, std::chrono::steady_clock::time_point deadline) {
  SIZE_T bytes;
  for (;;) {
    const HRESULT hr = o->GetOverlappedResult(ov, &bytes, FALSE);
    if (hr != ND_PENDING) return hr;
    if (std::chrono::steady_clock::now() > deadline) return ND_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string status_text(HRESULT hr) {
  struct Name {
    HRESULT hr;
    const char* name;
  };
  static constexpr Name kNames[] = {
      {ND_SUCCESS, "ND_SUCCESS"},
      {ND_TIMEOUT, "ND_TIMEOUT"},
      {ND_PENDING, "ND_PENDING"},
      {ND_BUFFER_OVERFLOW, "ND_BUFFER_OVERFLOW"},
      {ND_NO_MORE_ENTRIES, "ND_NO_MORE_ENTRIES"},
      {ND_UNSUCCESSFUL, "ND_UNSUCCESSFUL"},
      {ND_ACCESS_VIOLATION, "ND_ACCESS_VIOLATION"},
      {ND_INVALID_PARAMETER, "ND_INVALID_PARAMETER"},
      {ND_INVALID_DEVICE_REQUEST, "ND_INVALIDATION_ERROR"},
      {ND_DATA_OVERRUN, "ND_LOCAL_LENGTH"},
      {ND_INSUFFICIENT_RESOURCES, "ND_INSUFFICIENT_RESOURCES"},
      {ND_IO_TIMEOUT, "ND_IO_TIMEOUT"},
      {ND_INVALID_BUFFER_SIZE, "ND_INVALID_BUFFER_SIZE"},
      {ND_NOT_SUPPORTED, "ND_NOT_SUPPORTED"},
      {ND_CANCELED, "ND_CANCELED"},
      {ND_REMOTE_ERROR, "ND_REMOTE_ERROR"},
      {ND_INVALID_ADDRESS, "ND_INVALID_ADDRESS"},
      {nd::STATUS_BAD_NETWORK_NAME, "STATUS_BAD_NETWORK_NAME"},
      {ND_ADDRESS_ALREADY_EXISTS, "ND_ADDRESS_ALREADY_EXISTS"},
      {ND_CONNECTION_REFUSED, "ND_CONNECTION_REFUSED"},
      {ND_CONNECTION_INVALID, "ND_CONNECTION_INVALID"},
      {ND_CONNECTION_ACTIVE, "ND_CONNECTION_ACTIVE"},
      {ND_CONNECTION_ABORTED, "ND_CONNECTION_ABORTED"},
      {ND_HOST_UNREACHABLE, "ND_HOST_UNREACHABLE"},
      {ND_FAILURE, "ND_FAILURE"},
      {ND_INVALID_REQUEST, "ND_INVALID_REQUEST"},
  };
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08X", uint32_t(hr));
  std::string s;
  for (const Name& n : kNames)
    if (n.hr == hr) s.append(n.name).append(" (");
  s.append(hex);
  if (s.size() > 10) s.append(")");
  return s;
}

}  // namespace ndnic::nd_node
