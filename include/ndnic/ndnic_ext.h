// ndnic's extension to ND v1: what the engine has and ND v1 lacks (immediate data, atomics),
// beside the v1 interfaces and without changing any of them. An endpoint from
// INDConnector::CreateEndpoint answers QueryInterface(IID_INDEndpointExt); the same pointer
// keeps every v1 method. Results come through the endpoint's CQs as usual (GetResults).
//
//   INDEndpointExt* ext;
//   ep->QueryInterface(IID_INDEndpointExt, reinterpret_cast<void**>(&ext));
//   ext->FetchAndAdd(&r, &result_sge, &desc, 0, 1, 0);   // ... ext->Release();
//
// The adapter answers QueryInterface(IID_INDAdapterExt): completion queues tied to one of the
// device's workers, as ND v2 ties a CQ to a processor affinity.
#pragma once

#include "ndnic/ndspi.h"

/// {26701BEE-460B-4EB4-BC48-AB7E798A0B01}
constexpr IID IID_INDEndpointExt = {0x26701BEE, 0x460B, 0x4EB4, {0xBC, 0x48, 0xAB, 0x7E, 0x79, 0x8A, 0x0B, 0x01}};

/// {26701BEE-460B-4EB4-BC48-AB7E798A0B02}
constexpr IID IID_INDAdapterExt = {0x26701BEE, 0x460B, 0x4EB4, {0xBC, 0x48, 0xAB, 0x7E, 0x79, 0x8A, 0x0B, 0x02}};

/// Bind flag: the peer may run atomics (8-byte aligned) on the window; with ALLOW_READ/WRITE.
constexpr DWORD NDNIC_OP_FLAG_ALLOW_ATOMIC = 0x00010000;

/// INDAdapter::Control code: how long a CQ's Notify wait on worker lcores spins on the CQ before
/// it sleeps (on the CQ's futex word, which the lcore's signal wakes), in microseconds (0: sleep
/// at once). In: a ULONG, the new value, at most
/// NDNIC_NOTIFY_WATCH_MAX_US, or NDNIC_NOTIFY_WATCH_AUTO. Out (optional): a ULONG, the value
/// it replaces. Waits that drive the device (run to completion) never sleep: it does not apply
/// to them. Completes at once.
constexpr DWORD NDNIC_CONTROL_NOTIFY_WATCH_US = 0x4E440001;
/// Largest NDNIC_CONTROL_NOTIFY_WATCH_US value: a second.
constexpr ULONG NDNIC_NOTIFY_WATCH_MAX_US = 1000000;
/// The default: 50 us for a thread whose processors no worker lcore of the adapter uses, else
/// 0 (a watch there would keep the worker it waits for off its processor).
constexpr ULONG NDNIC_NOTIFY_WATCH_AUTO = 0xFFFFFFFF;

/// NDNIC_RESULT::Flags
constexpr DWORD NDNIC_RESULT_IMMEDIATE = 0x1;    ///< ImmediateData is valid (SEND / WRITE with immediate)
constexpr DWORD NDNIC_RESULT_INVALIDATED = 0x2;  ///< the peer's SendAndInvalidate named InvalidatedToken
constexpr DWORD NDNIC_RESULT_WRITE = 0x4;        ///< a WRITE with immediate consumed this receive

/// A receive's result with what ND_RESULT cannot say. Post it with ReceiveExt; GetResults
/// returns it as the ND_RESULT* it starts with.
struct NDNIC_RESULT : ND_RESULT {
  DWORD Flags;             ///< NDNIC_RESULT_*
  UINT32 ImmediateData;    ///< host order
  UINT32 InvalidatedToken; ///< network order, as ND_MW_DESCRIPTOR::Token
};

struct INDEndpointExt : INDEndpoint {
  /// Send carrying 32 bits of immediate data (host order) to the peer's receive.
  virtual HRESULT SendWithImmediate(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge, UINT32 ImmediateData,
                                    DWORD Flags) = 0;
  /// Write that also consumes a receive at the peer and hands it the immediate data
  /// (BytesTransferred there: the bytes written).
  virtual HRESULT WriteWithImmediate(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge,
                                     const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, ULONGLONG Offset,
                                     UINT32 ImmediateData, DWORD Flags) = 0;
  /// 8-byte compare-and-swap at Base + Offset of the peer's window (bound with
  /// NDNIC_OP_FLAG_ALLOW_ATOMIC); the original value lands in the 8 bytes of pResultSge.
  virtual HRESULT CompareAndSwap(ND_RESULT* pResult, const ND_SGE* pResultSge,
                                 const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, ULONGLONG Offset, UINT64 Compare,
                                 UINT64 Swap, DWORD Flags) = 0;
  /// 8-byte fetch-and-add, as CompareAndSwap.
  virtual HRESULT FetchAndAdd(ND_RESULT* pResult, const ND_SGE* pResultSge,
                              const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, ULONGLONG Offset, UINT64 Add,
                              DWORD Flags) = 0;
  /// Receive whose result also reports immediate data and invalidations.
  virtual HRESULT ReceiveExt(NDNIC_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge) = 0;
};

/// Scale-out without sharing: an application thread that creates its CQ on worker w and its
/// endpoints over that CQ is served by that one worker lcore (share nothing across threads).
struct INDAdapterExt : INDAdapter {
  /// The device's workers (shards): one per worker lcore, one when the application's threads
  /// drive the device.
  virtual ULONG GetWorkerCount() = 0;
  /// CreateCompletionQueue whose endpoints (those whose outbound CQ it is) run on worker
  /// Worker % GetWorkerCount().
  virtual HRESULT CreateCompletionQueueOnWorker(SIZE_T nEntries, ULONG Worker, INDCompletionQueue** ppCq) = 0;
};

namespace ndnic::nd {

/// NTSTATUS STATUS_BAD_NETWORK_NAME, which no ND header names: the SDK's provider tests
/// (ndmemorytest NdInvalidIP) expect it from Connect to the unspecified address 0.0.0.0.
constexpr HRESULT STATUS_BAD_NETWORK_NAME = ::nd_status(0xC00000CC);

}  // namespace ndnic::nd
