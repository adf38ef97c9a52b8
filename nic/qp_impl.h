// A QP's private state. The application thread touches only `send_ring`, `recv_ring` and the
// atomic `state`; everything else belongs to the lcore that owns the QP.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <vector>

#include <rte_ether.h>

#include "ndnic/nic.h"
#include "nic/held_requests.h"
#include "nic/spsc_ring.h"
#include "wire/header_template.h"
#include "wire/icrc_prefix.h"
#include "ndnic/wire/packet.h"

struct rte_mbuf;

namespace ndnic::nic {

struct ControlCmd;
struct TxPins;
struct Shard;

constexpr uint32_t kMaxUnackedPsns = 256;     ///< requester window, in packets
constexpr uint32_t kAckReqEvery = 32;         ///< AckReq at least this often inside long messages
constexpr uint32_t kMaxReadResources = 64;    ///< responder READ/atomic replay slots (per QP)
static_assert((kMaxReadResources & (kMaxReadResources - 1)) == 0, "slots are indexed by a mask");
constexpr uint32_t kMaxHeldPerQp = 64;        ///< requests a responder holds behind READ replies
constexpr uint32_t kMaxHeldPerShard = 512;    ///< ... all QPs of a shard together

/// One more on a counter only the QP's lcore writes (readers on other threads load it): a
/// plain store, no locked instruction.
inline void count_one(std::atomic<uint64_t>& n) {
  n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

/// 24-bit PSN arithmetic: a - b as a signed distance.
inline int32_t psn_diff(uint32_t a, uint32_t b) { return int32_t((a - b) << 8) >> 8; }
inline uint32_t psn_add(uint32_t a, uint32_t n) { return (a + n) & 0xFFFFFF; }

/// bytes / mtu for a path MTU, which is a power of two (RTR takes 256..4096 only): a shift
/// rather than a divide (10-26 cycles of latency on current x86 cores) in every packet's PSN.
/// perf put the stall after the divide at ~16% of send_next_packet on sendinv's sending core;
/// end to end (ndperf sendinv, 2-CPU VM) the change is inside the noise.
inline uint32_t whole_mtus(uint32_t bytes, uint32_t mtu) { return bytes >> std::countr_zero(mtu); }

/// Packets a message of `len` bytes takes at this MTU; a zero-length one takes one.
inline uint32_t packets_for(uint32_t len, uint32_t mtu) {
  return len == 0 ? 1 : uint32_t((uint64_t(len) + mtu - 1) >> std::countr_zero(mtu));
}

// ---- requester / completer ---------------------------------------------------------------

enum class WqeState : uint8_t {
  kPosted,    ///< taken from the ring, not yet (fully) sent
  kSent,      ///< every packet sent; waiting for its ACK / response
  kDone,      ///< acknowledged (or a local op executed); completes in order
  kError,     ///< failed with `status`; completes in order, then the QP goes to ERROR
};

/// A send-side work request while the requester and completer own it.
struct SendWqe {
  SendWr wr;
  WqeState state = WqeState::kPosted;
  WcStatus status = WcStatus::kSuccess;
  uint32_t length = 0;        ///< message bytes
  uint32_t first_psn = 0;     ///< PSN of its first packet (READ: of the request)
  uint32_t last_psn = 0;      ///< PSN of its last packet (READ: of the last response)
  uint32_t npkts = 0;         ///< packets (READ: response packets)
  uint32_t sent = 0;          ///< bytes sent so far (resets on retry)
  uint32_t next_psn = 0;      ///< PSN of the next packet to send (retry rewinds it)
  uint32_t placed = 0;        ///< READ: bytes placed from responses
  uint64_t atomic_orig = 0;   ///< atomic: the original value returned
  bool rd_counted = false;    ///< READ/atomic: counted in rd_atomic_outstanding
  bool psn_assigned = false;  ///< first_psn/last_psn/npkts are set (on first transmission)
  /// SGE addresses checked against their lkeys at fetch time. The UD requester gathers from
  /// them; RC does while no deregistration has started since (region_epoch), and checks each
  /// lkey again for every packet otherwise: the application may deregister a region while its
  /// request is still outstanding.
  uint8_t* host[kMaxSge] = {};
  TxPins* pins = nullptr;     ///< the first SGE's region's (zero-copy transmit), from fetch
  uint64_t region_epoch = 0;  ///< MemoryTable::region_epoch() before the fetch's checks
};

/// A READ's PSN of its first response not yet placed: where the completer expects the next
/// response, and where a retry of the READ resumes.
inline uint32_t first_unplaced_psn(const SendWqe& w, uint32_t mtu) {
  return psn_add(w.first_psn, whole_mtus(w.placed, mtu));
}

struct ReqState {
  std::vector<SendWqe> sq;    ///< circular, capacity a power of two
  uint32_t mask = 0;
  uint32_t head = 0;          ///< oldest WQE not yet completed
  uint32_t next = 0;          ///< next WQE to send
  uint32_t tail = 0;          ///< one past the newest WQE
  uint32_t psn = 0;           ///< next PSN to send
  uint32_t rd_atomic_outstanding = 0;
  uint16_t noack_pkts = 0;    ///< packets since the last AckReq
};

/// CompState::timer_tsc of a timer the requester armed: its deadline is set at the next look
/// at the timers. The clock read then comes after the packet's flush, not before it (one read,
/// ~10 ns here, off each ping-pong's half round trip); the deadline moves later by at most that
/// one iteration, and a retransmission timer is only a lower bound.
constexpr uint64_t kArmAtNextLook = UINT64_MAX;

struct CompState {
  uint32_t psn = 0;           ///< oldest PSN not yet acknowledged
  uint8_t retry_left = 7;
  uint8_t rnr_retry_left = 7;
  uint64_t timer_tsc = 0;     ///< retransmission deadline; 0 = not armed, kArmAtNextLook
  uint64_t rnr_tsc = 0;       ///< RNR wait deadline; 0 = not waiting
  bool retry_pending = false; ///< go back to `retry_psn` before sending anything new
  uint32_t retry_psn = 0;
  uint32_t last_retry_psn = 0xFFFFFFFF;  ///< damping of repeated go-backs to one PSN
  uint64_t last_retry_tsc = 0;
  /// One past the highest PSN the requester has sent (READ: its last response PSN + 1), kept
  /// through go-backs: no genuine response is at or past it. Meaningful once `sent_any`.
  uint32_t sent_psn = 0;
  bool sent_any = false;
  /// The PSN of the last RNR NAK while nothing past it is acknowledged: the sequence NAK
  /// that the packets sent behind it draw is part of that RNR wait, not a transport retry.
  uint32_t rnr_psn = 0;
  bool rnr_gap = false;
  uint64_t ignored = 0;       ///< responses for PSNs never sent (forged or corrupt): dropped
};

// ---- responder ---------------------------------------------------------------------------

/// A READ or atomic the responder accepted, kept to answer (and replay) it.
struct ReadResource {
  bool valid = false;
  bool atomic = false;
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  uint32_t rkey = 0;
  uint64_t standing = 0;      ///< the READ's check (Resolved::standing), asked for each response
  uint64_t va = 0;
  uint32_t length = 0;
  uint64_t atomic_orig = 0;
  uint32_t msn = 0;           ///< MSN reported in its responses
  // Response generation progress (READ):
  bool active = false;
  uint32_t offset = 0;        ///< next byte to send
  uint32_t psn = 0;           ///< next response PSN
};

struct RespState {
  uint32_t psn = 0;           ///< expected PSN
  uint32_t msn = 0;           ///< messages completed
  bool nak_sent = false;      ///< one PSN-sequence NAK per gap
  // The message in progress (SEND or WRITE FIRST/MIDDLE seen, LAST not yet):
  bool in_send = false;
  bool in_write = false;
  /// The receive a SEND is landing in, read in the receive ring's slot where the application
  /// built it (next_recv), which stays ours until the receive ends (end_recv). Copied out of
  /// the ring in bursts, each receive was copied once more, and the copies took ~1.1 KiB of
  /// the QP's state. nullptr while there is none.
  const RecvWr* recv = nullptr;
  /// Receives posted past those ended, as the ring last said: its producer's line, which the
  /// posting thread's core owns, is read again only when these are used up.
  uint32_t recvs_ready = 0;
  uint32_t recv_offset = 0;   ///< bytes placed into `recv`
  uint32_t recv_capacity = 0;
  uint32_t write_rkey = 0;    ///< the WRITE's R_Key: checked again for every packet
  uint64_t write_standing = 0;  ///< the FIRST's check (Resolved::standing), asked for every later packet
  uint64_t write_va = 0;      ///< next byte a WRITE places (a peer's virtual address)
  uint32_t write_left = 0;    ///< bytes of the WRITE's DMA length still to come
  uint32_t write_len = 0;
  /// ACKNOWLEDGE, coalesced: the newest PSN asked to be acknowledged in this RX burst, and the
  /// MSN as of it. One ACK per QP leaves at the end of the burst (Shard::send_due_acks), or
  /// before any other response of the QP so that responses stay in PSN order.
  bool ack_pending = false;
  uint32_t ack_psn = 0;
  uint32_t ack_msn = 0;
  std::vector<ReadResource> res;
  uint32_t res_next = 0;      ///< READs/atomics accepted so far; the next takes slot res_next % size
  /// The oldest accepted READ that may still be replying (<= res_next): READ_REPLY starts its
  /// walk there instead of visiting every slot on every poll.
  uint32_t res_head = 0;
  uint32_t reads_active = 0;  ///< READs whose responses are still being sent
  /// Requests that arrived while a READ reply was in progress: responses leave in PSN order,
  /// so they wait (with their mbufs) until it is done. Bounded (kMaxHeldPerQp, and the
  /// shard's kMaxHeldPerShard): beyond it a request is dropped, which the requester recovers
  /// from like a loss, so no peer can drain the port's mbufs.
  HeldRequests deferred;
};

struct Qp::Impl {
  Qp handle;
  uint32_t qpn = 0;
  /// This QP's instance, unique for the device's lifetime (QP numbers are reused): windows are
  /// bound to it, so a window cannot outlive its QP into a new one with the same number.
  uint32_t id = 0;
  uint32_t pd = 0;
  std::atomic<Shard*> shard{nullptr};  ///< the owner; read by other shards to dispatch frames
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  QpCaps caps;
  std::atomic<QpState> state{QpState::kReset};
  /// Taken to ERROR by modify() (its consumer ended it), not by a failure of its own.
  std::atomic<bool> closed{false};
  QpAttr attr;
  SpscRing<SendWr> send_ring;      ///< app -> lcore: the send queue, built in place
  SpscRing<RecvWr> recv_ring;      ///< app -> lcore: the receive queue
  bool mac_known = false;
  rte_ether_addr dest_mac{};
  ControlCmd* migrate = nullptr;           ///< attach command when RSS moves the QP at RTR
  bool resolve_requested = false;          ///< asked the ARP owner (another shard) for the MAC
  rte_ether_addr published_mac{};          ///< written by the ARP owner before mac_published
  std::atomic<bool> mac_published{false};
  uint16_t udp_sport = 0;
  wire::IcrcPrefix icrc_prefix;    ///< the ICRC prefix of what this UD QP sends (tx.cc)
  wire::HeaderTemplate tx_headers; ///< the headers of what this RC QP sends (tx.cc)
  /// What tx_headers was made for (MACs, addresses, source port, remote QP). `built` is cleared
  /// wherever one of them changes (tx_addressing_changed): a modify to RTR, the peer's MAC
  /// resolved or learned, the QP attached to a shard (whose port may be another). Checked rather
  /// than compared field by field before each packet: the compare cost every frame ~32
  /// instructions (callgrind, BM_stream and BM_pingpong); builds with assertions still compare.
  struct TxFlow {
    uint64_t dst = 0;      ///< destination MAC, UDP source port
    uint64_t src = 0;      ///< source MAC
    uint64_t ips = 0;      ///< source and destination IPv4 addresses
    uint32_t remote_qpn = 0;
    bool built = false;
    bool operator==(const TxFlow&) const = default;
  } tx_flow;
  /// What tx_headers is made of changed: the next packet makes it again.
  void tx_addressing_changed() { tx_flow.built = false; }
  uint64_t timeout_tsc = 0;        ///< local ACK timeout in TSC cycles
  ReqState req;
  CompState comp;
  RespState resp;
  Qp::Counters counters;
  bool cq_overrun = false;         ///< a completion of this QP found its CQ full: to ERROR
  std::atomic<uint64_t> sends_completed{0};  ///< written by the owning lcore, read by the app
  std::atomic<uint64_t> recvs_completed{0};
};

}  // namespace ndnic::nic
