// ndnic's ND v1 objects (private): each implements one SPI interface over the NIC.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ndnic/ndnic_ext.h"
#include "ndnic/ndspi.h"
#include "nd_frontend/unknown.h"
#include "ndnic/nic.h"

namespace ndnic::glue {
class Port;
}
namespace ndnic::cm {
class Agent;
}

namespace ndnic::nd {

class NdCq;

/// Largest CQ (Query's MaxCqEntries): CreateCompletionQueue and Resize check against it.
constexpr SIZE_T kMaxCqEntries = 65535;

/// A receive posted through ReceiveExt carries this bit in its work request id (ND_RESULTs
/// are 8-byte aligned): GetResults then fills the NDNIC_RESULT's extra fields.
constexpr uint64_t kExtResultTag = 1;

/// What ND_MR_HANDLE points at.
struct MrRecord {
  uint32_t lkey;
  const uint8_t* base;
  SIZE_T length;
};

class NdAdapter final : public Unknown<INDAdapterExt> {
 public:
  NdAdapter(nic::Device* dev, glue::Port* port, cm::Agent* cm);
  HANDLE GetFileHandle() override { return nullptr; }
  HRESULT CancelOverlappedRequests() override { return ND_SUCCESS; }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) override;
  HRESULT Query(DWORD version, ND_ADAPTER_INFO* info, SIZE_T* size) override;
  HRESULT Control(DWORD code, const void* in, SIZE_T in_size, void* out, SIZE_T out_size, SIZE_T* out_bytes,
                  OVERLAPPED* ov) override;
  HRESULT CreateCompletionQueue(SIZE_T entries, INDCompletionQueue** cq) override;
  HRESULT RegisterMemory(const void* buf, SIZE_T size, OVERLAPPED* ov, ND_MR_HANDLE* mr) override;
  HRESULT DeregisterMemory(ND_MR_HANDLE mr, OVERLAPPED* ov) override;
  HRESULT CreateMemoryWindow(ND_RESULT* invalidate_result, INDMemoryWindow** mw) override;
  HRESULT CreateConnector(INDConnector** connector) override;
  HRESULT Listen(SIZE_T backlog, INT protocol, USHORT port, USHORT* assigned, INDListen** listen) override;
  ULONG GetWorkerCount() override { return dev_->shards(); }
  HRESULT CreateCompletionQueueOnWorker(SIZE_T entries, ULONG worker, INDCompletionQueue** cq) override;

  nic::Device* dev() const { return dev_; }
  glue::Port* port() const { return port_; }
  uint32_t pd() const { return pd_; }
  cm::Agent* cm() const { return cm_; }
  /// Run-to-completion: no worker lcore runs this adapter's device, its callers do.
  bool app_driven() const { return app_driven_; }
  /// Moves the engine when the application drives it (a no-op on worker lcores); true when it
  /// did some work.
  bool progress() { return app_driven_ && dev_->progress() != 0; }
  /// GetOverlappedResult of every object of this adapter.
  HRESULT overlapped_wait(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait);
  /// How long a Notify wait on worker lcores spins on its CQ before it sleeps, for the calling
  /// thread (NDNIC_CONTROL_NOTIFY_WATCH_US).
  std::chrono::microseconds notify_watch() const;
  /// Registers the CQ's event fd with the notifier thread.
  void watch(NdCq* cq);
  void unwatch(NdCq* cq);

 protected:
  ~NdAdapter() override;
  bool implements(REFIID riid) const override {
    return riid == IID_INDAdapter || riid == IID_INDAdapterExt || riid == IID_INDOverlapped;
  }

 private:
  HRESULT create_cq(SIZE_T entries, int shard, INDCompletionQueue** out);
  void notifier();

  nic::Device* dev_;
  glue::Port* port_;
  uint32_t pd_;
  cm::Agent* cm_;  ///< owned by the adapter registry (nd.h): adapters go before unregister_adapter
  bool app_driven_;
  std::atomic<uint32_t> notify_watch_us_{NDNIC_NOTIFY_WATCH_AUTO};
  cpu_set_t worker_cpus_;  ///< the device's worker lcores' processors
  uint64_t serial_;        ///< tells adapters apart in a thread's cached choice (notify_watch)
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread notifier_;
};

class NdCq final : public Unknown<INDCompletionQueue> {
 public:
  /// `shard`: the worker its endpoints run on (nic::QpCaps::shard), or kAnyShard.
  NdCq(NdAdapter* adapter, nic::Cq* cq, int shard = nic::QpCaps::kAnyShard);
  HRESULT CancelOverlappedRequests() override;
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) override;
  HRESULT Resize(SIZE_T entries) override;
  HRESULT Notify(DWORD type, OVERLAPPED* ov) override;
  SIZE_T GetResults(ND_RESULT* results[], SIZE_T n) override;

  nic::Cq* cq() const { return cq_; }
  int shard() const { return shard_; }
  /// Completes pending Notify calls: for the adapter's notifier when the event fd fires
  /// (drain_fd: it reads the fd), or for a waiter that saw the CQ's signal itself.
  void notified(bool drain_fd);

 protected:
  ~NdCq() override;
  bool implements(REFIID riid) const override {
    return riid == IID_INDCompletionQueue || riid == IID_INDOverlapped;
  }

 private:
  NdAdapter* adapter_;
  nic::Cq* cq_;
  const int shard_;
  /// Up to n results from the CQ, without moving the engine.
  SIZE_T take_results(ND_RESULT* results[], SIZE_T n);
  /// Completes every pending Notify: ND_CANCELED when `cancel`, else as notified() says.
  void complete_waiters(bool cancel);
  /// Takes `ov` back if no one completed it yet.
  bool take_waiter(OVERLAPPED* ov);
  /// GetOverlappedResult's wait (a Notify's), as the CQ's watcher: run to completion, this
  /// thread drives the engine until the CQ signals; on worker lcores it spins on the signal,
  /// then sleeps on the CQ.
  HRESULT wait_driving(OVERLAPPED* ov, SIZE_T* bytes);
  HRESULT wait_watching(OVERLAPPED* ov, SIZE_T* bytes);
  /// wait_watching's two phases: ND_PENDING from the first when its time is up.
  HRESULT watch_spinning(OVERLAPPED* ov, SIZE_T* bytes);
  HRESULT watch_sleeping(OVERLAPPED* ov, SIZE_T* bytes);
  /// The CQ's arm is gone, so its signal came: completes the pending Notify requests (a waiter
  /// that watches the CQ does this, since the signal skipped the fd). False while still armed.
  bool took_signal();
  /// Looks at the CQ between two reads of the clock while watching (a read is ~20 ns).
  static constexpr unsigned kLooksPerClock = 64;

  /// A Notify wait this thread drove ended with the CQ's signal, and no look at the CQ since.
  bool driven_wait_done_ = false;
  /// The usual case, one pending Notify, without a lock: a Notify per result otherwise took the
  /// mutex twice (to add itself, and for the notifier to take it), a tenth of a Notify wait.
  std::atomic<OVERLAPPED*> one_{nullptr};
  std::atomic<bool> more_{false};  ///< waiting_ may hold some
  std::mutex mu_;                  // Notify / notifier / cancel past the first waiter
  std::vector<OVERLAPPED*> waiting_;
};

class NdMemoryWindow final : public Unknown<INDMemoryWindow> {
 public:
  NdMemoryWindow(NdAdapter* adapter, uint32_t handle, ND_RESULT* invalidate_result)
      : adapter_(adapter), handle_(handle), rkey_(handle), invalidate_result_(invalidate_result) {
    adapter_->AddRef();
  }
  /// Names the window to the engine for Bind, Invalidate and release, whatever its key is.
  uint32_t handle() const { return handle_; }
  /// The token of the last Bind posted: the window's key once that bind has run.
  uint32_t rkey() const { return rkey_; }
  void set_rkey(uint32_t k) { rkey_ = k; }

 protected:
  ~NdMemoryWindow() override {
    adapter_->dev()->dealloc_mw(handle_);
    adapter_->Release();
  }
  bool implements(REFIID riid) const override { return riid == IID_INDMemoryWindow; }

 private:
  NdAdapter* adapter_;
  uint32_t handle_;                ///< the key alloc_mw returned: the engine's name for the window
  uint32_t rkey_;                  ///< the token of the last Bind posted (a failed bind never gets it)
  ND_RESULT* invalidate_result_;   ///< completed when the peer invalidates the window
};

/// Limits the connector gives an endpoint (CreateEndpoint's arguments).
struct EndpointLimits {
  SIZE_T inbound_entries, outbound_entries, inbound_sge, outbound_sge;
  SIZE_T inbound_read_limit, outbound_read_limit;
};

class NdEndpoint final : public Unknown<INDEndpointExt> {
 public:
  NdEndpoint(NdAdapter* adapter, nic::Qp* qp, NdCq* in, NdCq* out, const EndpointLimits& lim);
  HRESULT Flush() override;
  void StartRequestBatch() override;
  void SubmitRequestBatch() override;
  HRESULT Send(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, DWORD flags) override;
  HRESULT SendAndInvalidate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                            DWORD flags) override;
  HRESULT Receive(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n) override;
  HRESULT Bind(ND_RESULT* r, ND_MR_HANDLE mr, INDMemoryWindow* mw, const void* buf, SIZE_T size, DWORD flags,
               ND_MW_DESCRIPTOR* desc) override;
  HRESULT Invalidate(ND_RESULT* r, INDMemoryWindow* mw, DWORD flags) override;
  HRESULT Read(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
               DWORD flags) override;
  HRESULT Write(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
                DWORD flags) override;
  // INDEndpointExt
  HRESULT SendWithImmediate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, UINT32 imm, DWORD flags) override;
  HRESULT WriteWithImmediate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                             ULONGLONG offset, UINT32 imm, DWORD flags) override;
  HRESULT CompareAndSwap(ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
                         UINT64 compare, UINT64 swap, DWORD flags) override;
  HRESULT FetchAndAdd(ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset, UINT64 add,
                      DWORD flags) override;
  HRESULT ReceiveExt(NDNIC_RESULT* r, const ND_SGE* sgl, SIZE_T n) override;

  nic::Qp* qp() const { return qp_; }
  NdAdapter* adapter() const { return adapter_; }
  const EndpointLimits& limits() const { return lim_; }

 protected:
  ~NdEndpoint() override;
  bool implements(REFIID riid) const override { return riid == IID_INDEndpoint || riid == IID_INDEndpointExt; }

 private:
  HRESULT rdma(nic::WrOpcode op, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
               ULONGLONG offset, DWORD flags);
  /// Posts `wr`, which new_wr made (in a batch: kept in its slot).
  HRESULT post(nic::SendWr& wr, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, DWORD flags, bool rdma,
               uint8_t wr_flags = 0);
  /// A send work request with every field before the SGEs zero, built where it will stay: the
  /// open batch's next slot in the QP's send ring (post keeps it there; the engine reads it
  /// where it was built), else scratch_. Built on the stack and copied, its fields were read
  /// back by the copy while their stores were still in flight, which the CPU cannot forward
  /// from its store buffer: a stall in every batched post.
  nic::SendWr& new_wr(nic::WrOpcode op);
  HRESULT fill_sgl(nic::Sge* out, const ND_SGE* sgl, SIZE_T n, SIZE_T max_sge, bool* too_long);
  HRESULT receive(uint64_t wr_id, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n);
  HRESULT atomic(nic::SendWr& wr, ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
                 DWORD flags);

  NdAdapter* adapter_;
  nic::Qp* qp_;
  NdCq* in_;
  NdCq* out_;
  EndpointLimits lim_;
  uint64_t sends_posted_ = 0;
  uint64_t recvs_posted_ = 0;
  /// The QP's completed counts as last read (an under-count): read again only when they say full.
  uint64_t sends_completed_seen_ = 0;
  uint64_t recvs_completed_seen_ = 0;
  bool batching_ = false;
  size_t nbatch_ = 0;               ///< requests in the open batch, in its first send slots
  size_t batch_slots_ = 0;          ///< send slots the open batch reserved (Qp::open_send_slots)
  std::vector<nic::RecvWr> recv_batch_;  ///< the open batch's receives: the first nrecv_batch_
  size_t nrecv_batch_ = 0;
  nic::SendWr scratch_;             ///< where a request outside a batch is built
};

}  // namespace ndnic::nd
