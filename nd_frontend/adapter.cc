// INDAdapter over a nic::Device: the adapter is a protection domain; its notifier thread turns
// CQ event fds into completed Notify requests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "cm/agent.h"
#include "ndnic/nd.h"
#include "nd_frontend/objects.h"
#include "nd_frontend/overlapped.h"
#include "ndnic/port.h"

namespace ndnic::nd {
namespace {

constexpr SIZE_T kMaxQueueEntries = 4096;
constexpr SIZE_T kMaxReadLimit = 16;
constexpr SIZE_T kMaxLength = nic::kMaxMessage;
constexpr SIZE_T kMaxRegistration = SIZE_T(1) << 40;
constexpr SIZE_T kLargeRequestThreshold = 4096;  ///< above this, Read/Write beats Send here
constexpr SIZE_T kMaxCallerData = 56;   ///< REQ private data (92) less rdma_cm's header (36)
constexpr SIZE_T kMaxCalleeData = 196;  ///< REP private data
constexpr UINT32 kVendorId = 0x4E44;    ///< "ND": ndnic has no PCI vendor
/// NDNIC_NOTIFY_WATCH_AUTO's watch for a thread apart from the workers: a ping-pong's turn
/// and a stream's next batch come well within it on cores of their own.
constexpr std::chrono::microseconds kNotifyWatchApart{50};
std::atomic<uint64_t> g_adapter_serial{0};

struct Registered {
  nic::Device* dev;
  glue::Port* port;
  /// One per device (QP1 is unique), shared by its adapters. Owned here, not by the adapters:
  /// an adapter's last reference may go on the agent's own thread (a connector's callback),
  /// and the agent must never be destroyed there (it would join itself).
  std::unique_ptr<cm::Agent> cm;
};
std::mutex g_registry_mu;
std::map<uint32_t, Registered> g_registry;  ///< by IPv4, host order

}  // namespace

bool register_adapter(nic::Device* dev, glue::Port* port, const cm::Config* cm) {
  auto agent = std::make_unique<cm::Agent>(*dev, *port, cm ? *cm : cm::Config{});
  if (!agent->start()) return false;
  std::lock_guard<std::mutex> g(g_registry_mu);
  g_registry[port->ipv4()] = {dev, port, std::move(agent)};
  return true;
}

void unregister_adapter(glue::Port* port) {
  std::unique_ptr<cm::Agent> agent;
  {
    std::lock_guard<std::mutex> g(g_registry_mu);
    auto it = g_registry.find(port->ipv4());
    if (it == g_registry.end()) return;
    agent = std::move(it->second.cm);
    g_registry.erase(it);
  }
  agent.reset();  // waits for a callback in flight; outside the registry lock
}

NdAdapter::NdAdapter(nic::Device* dev, glue::Port* port, cm::Agent* cm)
    : dev_(dev), port_(port), pd_(dev->alloc_pd()), cm_(cm), app_driven_(dev->app_driven()),
      worker_cpus_(dev->worker_cpus()), serial_(g_adapter_serial.fetch_add(1) + 1) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the stop signal
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  notifier_ = std::thread([this] { notifier(); });
}

NdAdapter::~NdAdapter() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof one);
  notifier_.join();
  close(epoll_fd_);
  close(stop_fd_);
}

void NdAdapter::notifier() {
  for (;;) {
    epoll_event evs[16];
    const int n = epoll_wait(epoll_fd_, evs, 16, -1);
    for (int i = 0; i < n; i++) {
      if (!evs[i].data.ptr) return;
      static_cast<NdCq*>(evs[i].data.ptr)->notified(true);
    }
  }
}

void NdAdapter::watch(NdCq* cq) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = cq;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, cq->cq()->event_fd(), &ev);
}

void NdAdapter::unwatch(NdCq* cq) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, cq->cq()->event_fd(), nullptr); }

HRESULT NdAdapter::GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) {
  return ov ? overlapped_wait(ov, bytes, wait) : ND_INVALID_PARAMETER;
}

HRESULT NdAdapter::overlapped_wait(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) {
  if (!wait || !app_driven_) return overlapped_result(ov, bytes, wait);
  return overlapped_result_driving(ov, bytes, [this] { return progress(); });
}

HRESULT NdAdapter::Query(DWORD version, ND_ADAPTER_INFO* info, SIZE_T* size) {
  if (version != ND_VERSION_1) return ND_NOT_SUPPORTED;
  if (!size) return ND_INVALID_PARAMETER;
  if (!info || *size < sizeof(ND_ADAPTER_INFO1)) {
    *size = sizeof(ND_ADAPTER_INFO1);
    return ND_BUFFER_OVERFLOW;
  }
  *size = sizeof(ND_ADAPTER_INFO1);
  *info = ND_ADAPTER_INFO1{kVendorId, 1,
                           nic::kMaxSge, kMaxQueueEntries, kMaxLength,
                           nic::kMaxSge, kMaxQueueEntries, kMaxLength,
                           nic::kMaxInline, kMaxReadLimit, kMaxReadLimit, kMaxCqEntries,
                           kMaxRegistration, kMaxRegistration, kLargeRequestThreshold,
                           kMaxCallerData, kMaxCalleeData};
  return ND_SUCCESS;
}

HRESULT NdAdapter::CreateCompletionQueue(SIZE_T entries, INDCompletionQueue** out) {
  return create_cq(entries, nic::QpCaps::kAnyShard, out);
}

HRESULT NdAdapter::CreateCompletionQueueOnWorker(SIZE_T entries, ULONG worker, INDCompletionQueue** out) {
  return create_cq(entries, int(worker % std::max(1u, dev_->shards())), out);
}

HRESULT NdAdapter::create_cq(SIZE_T entries, int shard, INDCompletionQueue** out) {
  if (!out) return ND_INVALID_PARAMETER;
  if (entries == 0 || entries > kMaxCqEntries) return ND_INVALID_BUFFER_SIZE;
  nic::Cq* cq = dev_->create_cq(uint32_t(entries));
  if (!cq) return ND_INSUFFICIENT_RESOURCES;
  *out = new NdCq(this, cq, shard);
  return ND_SUCCESS;
}

std::chrono::microseconds NdAdapter::notify_watch() const {
  const uint32_t us = notify_watch_us_.load(std::memory_order_relaxed);
  if (us != NDNIC_NOTIFY_WATCH_AUTO) return std::chrono::microseconds(us);
  // Whether the calling thread runs apart from the workers, found once per thread and adapter
  // (a system call).
  thread_local uint64_t checked_for = 0;
  thread_local bool apart = false;
  if (checked_for != serial_) {
    checked_for = serial_;
    cpu_set_t mine, both;
    apart = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
    CPU_AND(&both, &mine, &worker_cpus_);
    apart = apart && CPU_COUNT(&both) == 0;
  }
  return apart ? kNotifyWatchApart : std::chrono::microseconds(0);
}

HRESULT NdAdapter::Control(DWORD code, const void* in, SIZE_T in_size, void* out, SIZE_T out_size,
                           SIZE_T* out_bytes, OVERLAPPED* ov) {
  if (code != NDNIC_CONTROL_NOTIFY_WATCH_US) return ND_NOT_SUPPORTED;
  if (!in || !ov) return ND_INVALID_PARAMETER;
  if (in_size != sizeof(ULONG) || (out && out_size < sizeof(ULONG))) return ND_INVALID_BUFFER_SIZE;
  ULONG us;
  std::memcpy(&us, in, sizeof us);
  if (us > NDNIC_NOTIFY_WATCH_MAX_US && us != NDNIC_NOTIFY_WATCH_AUTO) return ND_INVALID_PARAMETER;
  const ULONG was = notify_watch_us_.exchange(uint32_t(us), std::memory_order_relaxed);
  if (out) std::memcpy(out, &was, sizeof was);
  if (out_bytes) *out_bytes = out ? sizeof(ULONG) : 0;
  overlapped_complete(ov, ND_SUCCESS, out ? sizeof(ULONG) : 0);
  return ND_SUCCESS;
}

HRESULT NdAdapter::RegisterMemory(const void* buf, SIZE_T size, OVERLAPPED* ov, ND_MR_HANDLE* mr) {
  if (!buf || !mr || !ov) return ND_INVALID_PARAMETER;
  if (size == 0 || size > kMaxRegistration) return ND_INVALID_BUFFER_SIZE;
  // v1 registrations take no rights: remote access goes through windows bound to them.
  nic::MrKeys keys;
  if (!dev_->register_mr(pd_, buf, size, nic::kAccessLocalWrite | nic::kAccessMwBind, &keys))
    return ND_INSUFFICIENT_RESOURCES;
  *mr = reinterpret_cast<ND_MR_HANDLE>(new MrRecord{keys.lkey, static_cast<const uint8_t*>(buf), size});
  overlapped_complete(ov, ND_SUCCESS);  // done at once: the caller may still wait on ov
  return ND_SUCCESS;
}

HRESULT NdAdapter::DeregisterMemory(ND_MR_HANDLE mr, OVERLAPPED* ov) {
  if (!mr || !ov) return ND_INVALID_PARAMETER;
  auto* rec = reinterpret_cast<MrRecord*>(mr);
  // Refused while a window is bound to it, as on hardware.
  if (!dev_->deregister_mr(rec->lkey)) return ND_DEVICE_BUSY;
  delete rec;
  overlapped_complete(ov, ND_SUCCESS);
  return ND_SUCCESS;
}

HRESULT NdAdapter::CreateMemoryWindow(ND_RESULT* invalidate_result, INDMemoryWindow** out) {
  if (!invalidate_result || !out) return ND_INVALID_PARAMETER;
  const uint32_t key = dev_->alloc_mw(pd_, reinterpret_cast<uint64_t>(invalidate_result));
  if (key == 0) return ND_INSUFFICIENT_RESOURCES;
  *out = new NdMemoryWindow(this, key, invalidate_result);
  return ND_SUCCESS;
}

}  // namespace ndnic::nd

HRESULT NdOpenV1Adapter(const sockaddr* addr, SIZE_T len, INDAdapter** out) {
  using namespace ndnic::nd;
  if (!addr || !out || addr->sa_family != AF_INET || len < sizeof(sockaddr_in)) return ND_INVALID_ADDRESS;
  const uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr);
  std::lock_guard<std::mutex> g(g_registry_mu);
  auto it = g_registry.find(ip);
  if (it == g_registry.end()) return ND_INVALID_ADDRESS;
  *out = new NdAdapter(it->second.dev, it->second.port, it->second.cm.get());
  return ND_SUCCESS;
}
