// The Network Direct v1 service provider interface as Microsoft's SDK declares it
// (ndspi.h "HPC Pack 2008 SDK interface", ndstatus.mc, nddef.h), for Linux: the same names,
// values, layouts and method signatures, so ND v1 code ports unchanged. Facts and the rule
// for status codes: ../shared/notes/nd-v1-facts.md.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

// ---- Windows base types, as LP64 Linux needs them -------------------------------------------
using HRESULT = int32_t;  ///< 32-bit signed, as on Windows (`long` is 64-bit on LP64)
using SIZE_T = size_t;
using DWORD = uint32_t;
using UINT32 = uint32_t;
using UINT64 = uint64_t;
using ULONG = uint32_t;
using ULONGLONG = uint64_t;
using USHORT = uint16_t;
using INT = int32_t;
using BOOL = int32_t;
using VOID = void;
using HANDLE = void*;
using SOCKET = int;

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#ifndef FAILED
#define FAILED(hr) (static_cast<HRESULT>(hr) < 0)
#endif
#ifndef SUCCEEDED
#define SUCCEEDED(hr) (static_cast<HRESULT>(hr) >= 0)
#endif

struct GUID {
  uint32_t Data1;
  uint16_t Data2;
  uint16_t Data3;
  uint8_t Data4[8];
};
using IID = GUID;
using REFIID = const IID&;
constexpr bool operator==(const GUID& a, const GUID& b) {
  if (a.Data1 != b.Data1 || a.Data2 != b.Data2 || a.Data3 != b.Data3) return false;
  for (int i = 0; i < 8; i++)
    if (a.Data4[i] != b.Data4[i]) return false;
  return true;
}

/// Stand-in for Win32's OVERLAPPED: an ND call that completes later returns ND_PENDING and
/// finishes through this struct. Internal holds the final HRESULT (ND_PENDING until done),
/// InternalHigh the bytes transferred; GetOverlappedResult waits on it (bWait) or polls it.
struct OVERLAPPED {
  volatile uint64_t Internal;      ///< the request's HRESULT; ND_PENDING while in progress
  volatile uint64_t InternalHigh;  ///< bytes transferred
  uint64_t Offset;                 ///< unused by ND
  HANDLE hEvent;                   ///< unused: waiters block on the provider's own futex
};

struct SOCKET_ADDRESS {
  sockaddr* lpSockaddr;
  INT iSockaddrLength;
};
struct SOCKET_ADDRESS_LIST {
  INT iAddressCount;
  SOCKET_ADDRESS Address[1];
};

// ---- status codes (ndstatus.mc): (severity << 30) | code, facility 0 ----------------------------
constexpr HRESULT nd_status(uint32_t v) { return static_cast<HRESULT>(v); }

constexpr HRESULT ND_SUCCESS = nd_status(0x00000000);
constexpr HRESULT ND_TIMEOUT = nd_status(0x00000102);  ///< STATUS_TIMEOUT: success severity!
constexpr HRESULT ND_PENDING = nd_status(0x00000103);
constexpr HRESULT ND_BUFFER_OVERFLOW = nd_status(0x80000005);
constexpr HRESULT ND_DEVICE_BUSY = nd_status(0x80000011);
constexpr HRESULT ND_NO_MORE_ENTRIES = nd_status(0x8000001A);
constexpr HRESULT ND_UNSUCCESSFUL = nd_status(0xC0000001);
constexpr HRESULT ND_ACCESS_VIOLATION = nd_status(0xC0000005);
constexpr HRESULT ND_INVALID_HANDLE = nd_status(0xC0000008);
constexpr HRESULT ND_INVALID_PARAMETER = nd_status(0xC000000D);
constexpr HRESULT ND_INVALID_DEVICE_REQUEST = nd_status(0xC0000010);
constexpr HRESULT ND_NO_MEMORY = nd_status(0xC0000017);
constexpr HRESULT ND_INVALID_PARAMETER_MIX = nd_status(0xC0000030);
constexpr HRESULT ND_DATA_OVERRUN = nd_status(0xC000003C);
constexpr HRESULT ND_SHARING_VIOLATION = nd_status(0xC0000043);
constexpr HRESULT ND_INSUFFICIENT_RESOURCES = nd_status(0xC000009A);
constexpr HRESULT ND_DEVICE_NOT_READY = nd_status(0xC00000A3);
constexpr HRESULT ND_IO_TIMEOUT = nd_status(0xC00000B5);
constexpr HRESULT ND_NOT_SUPPORTED = nd_status(0xC00000BB);
constexpr HRESULT ND_INTERNAL_ERROR = nd_status(0xC00000E5);
constexpr HRESULT ND_INVALID_PARAMETER_1 = nd_status(0xC00000EF);
constexpr HRESULT ND_INVALID_PARAMETER_2 = nd_status(0xC00000F0);
constexpr HRESULT ND_INVALID_PARAMETER_3 = nd_status(0xC00000F1);
constexpr HRESULT ND_INVALID_PARAMETER_4 = nd_status(0xC00000F2);
constexpr HRESULT ND_INVALID_PARAMETER_5 = nd_status(0xC00000F3);
constexpr HRESULT ND_INVALID_PARAMETER_6 = nd_status(0xC00000F4);
constexpr HRESULT ND_INVALID_PARAMETER_7 = nd_status(0xC00000F5);
constexpr HRESULT ND_INVALID_PARAMETER_8 = nd_status(0xC00000F6);
constexpr HRESULT ND_INVALID_PARAMETER_9 = nd_status(0xC00000F7);
constexpr HRESULT ND_INVALID_PARAMETER_10 = nd_status(0xC00000F8);
constexpr HRESULT ND_CANCELED = nd_status(0xC0000120);
constexpr HRESULT ND_REMOTE_ERROR = nd_status(0xC000013D);
constexpr HRESULT ND_INVALID_ADDRESS = nd_status(0xC0000141);
constexpr HRESULT ND_INVALID_DEVICE_STATE = nd_status(0xC0000184);
constexpr HRESULT ND_INVALID_BUFFER_SIZE = nd_status(0xC0000206);
constexpr HRESULT ND_TOO_MANY_ADDRESSES = nd_status(0xC0000209);
constexpr HRESULT ND_ADDRESS_ALREADY_EXISTS = nd_status(0xC000020A);
constexpr HRESULT ND_CONNECTION_REFUSED = nd_status(0xC0000236);
constexpr HRESULT ND_CONNECTION_INVALID = nd_status(0xC000023A);
constexpr HRESULT ND_CONNECTION_ACTIVE = nd_status(0xC000023B);
constexpr HRESULT ND_NETWORK_UNREACHABLE = nd_status(0xC000023C);
constexpr HRESULT ND_HOST_UNREACHABLE = nd_status(0xC000023D);
constexpr HRESULT ND_CONNECTION_ABORTED = nd_status(0xC0000241);
constexpr HRESULT ND_DEVICE_REMOVED = nd_status(0xC00002B6);
// v1 names (the end of ndspi.h maps them onto v2 codes).
constexpr HRESULT ND_LOCAL_LENGTH = ND_DATA_OVERRUN;
constexpr HRESULT ND_INVALIDATION_ERROR = ND_INVALID_DEVICE_REQUEST;
// Named by the v1 pages, defined by no SDK file: ndnic's own values, error severity with the
// NTSTATUS customer bit (0x20000000) set, so they can never equal a Microsoft-defined code.
constexpr HRESULT ND_FAILURE = nd_status(0xE0000001);
constexpr HRESULT ND_INVALID_REQUEST = nd_status(0xE0000002);

// ---- nddef.h ----------------------------------------------------------------------------
constexpr DWORD ND_VERSION_1 = 0x1;
constexpr DWORD ND_VERSION_2 = 0x20000;
constexpr DWORD ND_CQ_NOTIFY_ERRORS = 0;
constexpr DWORD ND_CQ_NOTIFY_ANY = 1;
constexpr DWORD ND_CQ_NOTIFY_SOLICITED = 2;
constexpr DWORD ND_OP_FLAG_SILENT_SUCCESS = 0x01;
constexpr DWORD ND_OP_FLAG_READ_FENCE = 0x02;
constexpr DWORD ND_OP_FLAG_SEND_AND_SOLICIT_EVENT = 0x04;
constexpr DWORD ND_OP_FLAG_ALLOW_READ = 0x08;
constexpr DWORD ND_OP_FLAG_ALLOW_WRITE = 0x10;

// ---- structures -------------------------------------------------------------------------
struct ND_MR_HANDLE__;
using ND_MR_HANDLE = ND_MR_HANDLE__*;  ///< v1 registrations are opaque handles

struct ND_ADAPTER_INFO1 {
  UINT32 VendorId;
  UINT32 DeviceId;
  SIZE_T MaxInboundSge;
  SIZE_T MaxInboundRequests;
  SIZE_T MaxInboundLength;
  SIZE_T MaxOutboundSge;
  SIZE_T MaxOutboundRequests;
  SIZE_T MaxOutboundLength;
  SIZE_T MaxInlineData;
  SIZE_T MaxInboundReadLimit;
  SIZE_T MaxOutboundReadLimit;
  SIZE_T MaxCqEntries;
  SIZE_T MaxRegistrationSize;
  SIZE_T MaxWindowSize;
  SIZE_T LargeRequestThreshold;
  SIZE_T MaxCallerData;
  SIZE_T MaxCalleeData;
};
using ND_ADAPTER_INFO = ND_ADAPTER_INFO1;
static_assert(sizeof(ND_ADAPTER_INFO1) == 128);

struct ND_RESULT {
  HRESULT Status;
  SIZE_T BytesTransferred;  ///< Send, SendAndInvalidate, Receive, Read and Write
};

struct ND_SGE {
  VOID* pAddr;
  SIZE_T Length;
  ND_MR_HANDLE hMr;
};
static_assert(sizeof(ND_SGE) == 24);

#pragma pack(push, 1)
/// Describes a bound window to the peer. All three fields are in network byte order.
struct ND_MW_DESCRIPTOR {
  UINT64 Base;
  UINT64 Length;
  UINT32 Token;
};
#pragma pack(pop)
static_assert(sizeof(ND_MW_DESCRIPTOR) == 20);

// ---- interface IDs ------------------------------------------------------------------------
constexpr IID IID_IUnknown = {0x00000000, 0x0000, 0x0000, {0xC0, 0, 0, 0, 0, 0, 0, 0x46}};
constexpr IID IID_INDOverlapped = {0xC859E15E, 0x75E2, 0x4fe3, {0x8D, 0x6D, 0x0D, 0xFF, 0x36, 0xF0, 0x24, 0x42}};
constexpr IID IID_INDCompletionQueue = {0x1245A633, 0x2A32, 0x473a, {0x83, 0x0C, 0xE0, 0x5D, 0x1F, 0x86, 0x9D, 0x02}};
constexpr IID IID_INDMemoryWindow = {0x070FE1F5, 0x0AB5, 0x4361, {0x88, 0xDB, 0x97, 0x4B, 0xA7, 0x04, 0xD4, 0xB9}};
constexpr IID IID_INDEndpoint = {0xDBD00EAB, 0xB679, 0x44a9, {0xBD, 0x65, 0xE8, 0x2F, 0x3D, 0xE1, 0x2D, 0x1A}};
constexpr IID IID_INDConnector = {0x1BCAF2D1, 0xE274, 0x4aeb, {0xAC, 0x57, 0xCD, 0x5D, 0x43, 0x76, 0xE0, 0xB7}};
constexpr IID IID_INDListen = {0xBB902588, 0xBA3F, 0x4441, {0x9F, 0xE1, 0x3B, 0x67, 0x95, 0xE4, 0xE6, 0x68}};
constexpr IID IID_INDAdapter = {0xA023C5A0, 0x5B73, 0x43bc, {0x8D, 0x20, 0x33, 0xAA, 0x07, 0xE9, 0x51, 0x0F}};
constexpr IID IID_INDProvider = {0x0C5DD316, 0x5FDF, 0x47e6, {0xB2, 0xD0, 0x2A, 0x6E, 0xDA, 0x8D, 0x39, 0xDD}};

// ---- interfaces ---------------------------------------------------------------------------
struct IUnknown {
  virtual HRESULT QueryInterface(REFIID riid, void** ppvObject) = 0;
  virtual ULONG AddRef() = 0;
  virtual ULONG Release() = 0;

 protected:
  ~IUnknown() = default;  // objects go away through Release()
};

struct INDOverlapped : IUnknown {
  virtual HRESULT CancelOverlappedRequests() = 0;
  virtual HRESULT GetOverlappedResult(OVERLAPPED* pOverlapped, SIZE_T* pNumberOfBytesTransferred, BOOL bWait) = 0;
};

struct INDCompletionQueue : INDOverlapped {
  virtual HRESULT Resize(SIZE_T nEntries) = 0;
  virtual HRESULT Notify(DWORD Type, OVERLAPPED* pOverlapped) = 0;
  virtual SIZE_T GetResults(ND_RESULT* pResults[], SIZE_T nResults) = 0;
};

struct INDMemoryWindow : IUnknown {};

struct INDEndpoint : IUnknown {
  virtual HRESULT Flush() = 0;
  virtual void StartRequestBatch() = 0;
  virtual void SubmitRequestBatch() = 0;
  virtual HRESULT Send(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge, DWORD Flags) = 0;
  virtual HRESULT SendAndInvalidate(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge,
                                    const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, DWORD Flags) = 0;
  virtual HRESULT Receive(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge) = 0;
  virtual HRESULT Bind(ND_RESULT* pResult, ND_MR_HANDLE hMr, INDMemoryWindow* pMw, const void* pBuffer,
                       SIZE_T BufferSize, DWORD Flags, ND_MW_DESCRIPTOR* pMwDescriptor) = 0;
  virtual HRESULT Invalidate(ND_RESULT* pResult, INDMemoryWindow* pMw, DWORD Flags) = 0;
  virtual HRESULT Read(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge,
                       const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, ULONGLONG Offset, DWORD Flags) = 0;
  virtual HRESULT Write(ND_RESULT* pResult, const ND_SGE* pSgl, SIZE_T nSge,
                        const ND_MW_DESCRIPTOR* pRemoteMwDescriptor, ULONGLONG Offset, DWORD Flags) = 0;
};

struct INDConnector : INDOverlapped {
  virtual HRESULT CreateEndpoint(INDCompletionQueue* pInboundCq, INDCompletionQueue* pOutboundCq,
                                 SIZE_T nInboundEntries, SIZE_T nOutboundEntries, SIZE_T nInboundSge,
                                 SIZE_T nOutboundSge, SIZE_T InboundReadLimit, SIZE_T OutboundReadLimit,
                                 SIZE_T* pMaxInlineData, INDEndpoint** ppEndpoint) = 0;
  virtual HRESULT Connect(INDEndpoint* pEndpoint, const sockaddr* pAddress, SIZE_T AddressLength, INT Protocol,
                          USHORT LocalPort, const void* pPrivateData, SIZE_T PrivateDataLength,
                          OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT CompleteConnect(OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT Accept(INDEndpoint* pEndpoint, const void* pPrivateData, SIZE_T PrivateDataLength,
                         OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT Reject(const void* pPrivateData, SIZE_T PrivateDataLength) = 0;
  virtual HRESULT GetConnectionData(SIZE_T* pInboundReadLimit, SIZE_T* pOutboundReadLimit, void* pPrivateData,
                                    SIZE_T* pPrivateDataLength) = 0;
  virtual HRESULT GetLocalAddress(sockaddr* pAddress, SIZE_T* pAddressLength) = 0;
  virtual HRESULT GetPeerAddress(sockaddr* pAddress, SIZE_T* pAddressLength) = 0;
  virtual HRESULT NotifyDisconnect(OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT Disconnect(OVERLAPPED* pOverlapped) = 0;
};

struct INDListen : INDOverlapped {
  virtual HRESULT GetConnectionRequest(INDConnector* pConnector, OVERLAPPED* pOverlapped) = 0;
};

struct INDAdapter : INDOverlapped {
  virtual HANDLE GetFileHandle() = 0;
  virtual HRESULT Query(DWORD VersionRequested, ND_ADAPTER_INFO* pInfo, SIZE_T* pBufferSize) = 0;
  virtual HRESULT Control(DWORD IoControlCode, const void* pInBuffer, SIZE_T InBufferSize, void* pOutBuffer,
                          SIZE_T OutBufferSize, SIZE_T* pBytesReturned, OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT CreateCompletionQueue(SIZE_T nEntries, INDCompletionQueue** ppCq) = 0;
  virtual HRESULT RegisterMemory(const void* pBuffer, SIZE_T BufferSize, OVERLAPPED* pOverlapped,
                                 ND_MR_HANDLE* phMr) = 0;
  virtual HRESULT DeregisterMemory(ND_MR_HANDLE hMr, OVERLAPPED* pOverlapped) = 0;
  virtual HRESULT CreateMemoryWindow(ND_RESULT* pInvalidateResult, INDMemoryWindow** ppMw) = 0;
  virtual HRESULT CreateConnector(INDConnector** ppConnector) = 0;
  virtual HRESULT Listen(SIZE_T Backlog, INT Protocol, USHORT Port, USHORT* pAssignedPort,
                         INDListen** ppListen) = 0;
};

struct INDProvider : IUnknown {
  virtual HRESULT QueryAddressList(SOCKET_ADDRESS_LIST* pAddressList, SIZE_T* pBufferSize) = 0;
  virtual HRESULT OpenAdapter(const sockaddr* pAddress, SIZE_T AddressLength, INDAdapter** ppAdapter) = 0;
};
