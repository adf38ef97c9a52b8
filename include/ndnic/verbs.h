// The NIC's work requests, completions and QP attributes: what travels on the per-QP rings
// from the application to the owning lcore, and on the CQ rings back. Fixed-size PODs so a
// ring entry is one copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndnic::nic {

constexpr uint32_t kMaxSge = 8;          ///< scatter/gather entries per work request
constexpr uint32_t kMaxInline = kMaxSge * 16;  ///< inline bytes: they reuse the SGE array
constexpr uint32_t kMaxMessage = 1u << 31;     ///< largest message (RETH DMA length is 32-bit)

/// Access rights of a memory region or window (bit values of ibv_access_flags, so mapping is 1:1).
enum Access : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
  kAccessMwBind = 1u << 4,
};

enum class WrOpcode : uint8_t {
  kSend,
  kSendImm,
  kSendInv,          ///< SEND WITH INVALIDATE: invalidate_rkey names the peer's window
  kWrite,
  kWriteImm,
  kRead,
  kCompareSwap,
  kFetchAdd,
  kBindMw,           ///< local: binds bind.mw_key's window to a range of an MR
  kLocalInv,         ///< local: invalidates the window named by invalidate_rkey (no fast-register MRs)
};

enum WrFlags : uint8_t {
  kWrSignaled = 1u << 0,   ///< a successful completion is reported (errors always are)
  kWrFence = 1u << 1,      ///< wait for earlier READs and atomics to complete
  kWrSolicited = 1u << 2,  ///< set the SE bit on the last packet
  kWrInline = 1u << 3,     ///< the payload is in `inline_data`, copied at post time
  /// kBindMw / kLocalInv: bind.mw_key / invalidate_rkey is the window's handle (the key
  /// alloc_mw returned), not its current key
  kWrWindowHandle = 1u << 4,
};

struct Sge {
  uint64_t addr;     ///< virtual address in the registered region
  uint32_t length;   ///< bytes
  uint32_t lkey;     ///< local key of the region
};
static_assert(sizeof(Sge) == 16);

struct MwBind {
  uint32_t mw_key;   ///< the window's current R_Key; the bind gives it a new key byte
  uint32_t mr_lkey;  ///< region the window covers part of
  uint64_t addr;     ///< start of the window
  uint64_t length;   ///< bytes
  uint32_t access;   ///< a non-empty subset of remote read / write / atomic
  uint8_t new_key;   ///< the key byte the caller chose for the new R_Key
};

/// Where a UD SEND goes: the address handle, carried by each work request.
struct UdDest {
  uint32_t dest_ipv4;   ///< host order
  uint32_t remote_qpn;
  uint32_t qkey;        ///< ignored on the GSI QP, which always sends kGsiQkey
  uint8_t dest_mac[6];  ///< all zero: resolve by ARP
};

/// The well-known Q_Key of QP1 (IBTA): every GSI MAD carries it.
constexpr uint32_t kGsiQkey = 0x80010000;

/// One entry on a QP's send ring. A slot is whole cache lines, and what nearly every request
/// reads (the fields before the SGEs and one SGE, or up to 24 inline bytes) is its first line:
/// with the application and the lcore on different cores, each line a request fills is a line
/// moved from one to the other (perf/bench_rings, BM_send_ring_cross). What only atomics, binds
/// and UD sends read comes after the SGEs, and is copied only for them (nic/wr_ring.h).
struct alignas(64) SendWr {
  uint64_t wr_id;            ///< returned in the completion (the ND frontend's ND_RESULT*)
  WrOpcode opcode;
  uint8_t flags;             ///< WrFlags
  uint8_t num_sge;           ///< entries used in sge[] (0 for a zero-length message)
  uint8_t reserved = 0;
  uint32_t inline_len;       ///< bytes in inline_data when kWrInline
  uint32_t imm;              ///< immediate data, as the big-endian wire value
  uint32_t invalidate_rkey;  ///< kSendInv / kLocalInv
  uint64_t remote_addr;      ///< WRITE / READ / atomics
  uint32_t rkey;             ///< WRITE / READ / atomics
  uint32_t reserved2 = 0;
  union {
    Sge sge[kMaxSge];
    uint8_t inline_data[kMaxInline];
  };
  uint64_t compare_add;      ///< CMP_SWAP compare value, or FETCH_ADD addend
  uint64_t swap;             ///< CMP_SWAP swap value
  union {
    MwBind bind;             ///< kBindMw (RC)
    UdDest ud;               ///< every SEND on a UD QP
  };
};
static_assert(offsetof(SendWr, sge) + sizeof(Sge) <= 64, "a one-SGE request fits the slot's first line");

/// One entry on a QP's receive ring. Whole cache lines, as SendWr: a receive of up to three
/// SGEs is its slot's first line.
struct alignas(64) RecvWr {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t reserved = 0;
  Sge sge[kMaxSge];
};
static_assert(offsetof(RecvWr, sge) + 3 * sizeof(Sge) <= 64, "a receive of three SGEs fits the slot's first line");

enum class WcStatus : uint8_t {
  kSuccess,
  kLocalLength,           ///< a receive too small for the message, or SGEs over the limits
  kLocalProtection,       ///< an SGE outside its region, or a bad lkey
  kLocalQpOperation,      ///< the work request is invalid for this QP
  kWrFlushed,             ///< the QP went to ERROR before this request ran
  kMwBind,                ///< a window bind was refused
  kRemoteAccess,          ///< the peer NAKed with a remote access error
  kRemoteInvalidRequest,  ///< the peer NAKed with invalid request
  kRemoteOperation,       ///< the peer NAKed with a remote operational error
  kRetryExceeded,         ///< transport retries exhausted (no ACK in time)
  kRnrRetryExceeded,      ///< the peer had no receive posted, RNR retries exhausted
  kInvalidation,          ///< a SEND WITH INVALIDATE named a key that cannot be invalidated
  kBadResponse,           ///< an unexpected response opcode
};
const char* wc_status_name(WcStatus s);

enum class WcOpcode : uint8_t {
  kSend,
  kWrite,
  kRead,
  kCompareSwap,
  kFetchAdd,
  kBindMw,
  kLocalInv,
  kRecv,
  kRecvWriteImm,          ///< a WRITE WITH IMMEDIATE consumed a receive
  kRemoteInvalidate,      ///< a peer's SEND WITH INVALIDATE invalidated this window
};

enum WcFlags : uint8_t {
  kWcWithImm = 1u << 0,
  kWcWithInv = 1u << 1,   ///< the receive came with an IETH; imm_or_inv holds the key
};

/// One completion on a CQ ring.
struct Completion {
  uint64_t wr_id;         ///< the work request's, or the window's context for kRemoteInvalidate
  uint32_t byte_len;      ///< bytes transferred
  uint32_t imm_or_inv;    ///< immediate data (kWcWithImm) or invalidated R_Key (kWcWithInv)
  uint32_t qpn;           ///< local QP
  WcStatus status;
  WcOpcode opcode;
  uint8_t flags;          ///< WcFlags
  uint8_t solicited;      ///< the message carried the SE bit
  uint32_t src_ipv4;      ///< UD receive: the sender's address, host order (no GRH is scattered)
  uint32_t src_qpn;       ///< UD receive: the sender's QP, from the DETH
};
static_assert(sizeof(Completion) == 32);

enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kError };
const char* qp_state_name(QpState s);

/// Attributes of a RoCEv2 QP, as ibv_modify_qp takes them. A UD QP uses qkey (INIT),
/// path_mtu (RTR) and sq_psn (RTS); its peers are named per work request.
struct QpAttr {
  uint32_t remote_qpn = 0;
  uint32_t sq_psn = 0;          ///< first PSN this side sends
  uint32_t rq_psn = 0;          ///< first PSN expected from the peer
  uint32_t path_mtu = 1024;     ///< 256, 512, 1024, 2048 or 4096 payload bytes per packet
  uint32_t dest_ipv4 = 0;       ///< peer address, host order
  uint8_t dest_mac[6] = {};     ///< all zero: resolve by ARP
  uint16_t udp_src_port = 0;    ///< 0: derived from the QPNs as rxe does
  uint8_t retry_cnt = 7;        ///< transport retries (7 = the verbs maximum)
  uint8_t rnr_retry = 7;        ///< RNR retries; 7 means infinite, as in IBTA
  uint8_t min_rnr_timer = 12;   ///< IBTA RNR timer code sent in our RNR NAKs (12 = 0.64 ms)
  uint8_t timeout = 14;         ///< local ACK timeout: 4.096 us * 2^timeout (14 = 67 ms)
  uint8_t max_rd_atomic = 16;   ///< READs/atomics this side may have outstanding
  uint8_t max_dest_rd_atomic = 16;  ///< READs/atomics the peer may have outstanding here
  uint32_t qkey = 0;            ///< UD: the Q_Key receives must carry (ignored on the GSI QP)
};

}  // namespace ndnic::nic
