// One RC QP that the program drives itself on an EnginePort, its peer's address traded out of
// band (rdma-core's tools and perftest send QP numbers over TCP, no connection manager): the
// registered buffer, the CQs, the QP from INIT to RTS, posting, completions checked for errors
// and stalls, the linger and the counters at the end. rc_pingpong and ndperf --perftest keep
// only their protocol over it. Each keeps the words of the program it stands in for: the
// session writes the messages they share the shape of itself and hands the tool a Failure for
// the others.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "ndnic/nic.h"
#include "tools/raw_qp/engine_port.h"
#include "tools/raw_qp/gid.h"

namespace ndnic::raw_qp {

/// The steps that can fail once the port is open, each with its own message in each tool.
enum class Step { kNoMemory, kRegister, kCq, kQp, kRtr, kRts, kPostRecv, kPostSend, kStatus, kStall };

/// A failed step, for the tool to say.
struct Failure {
  Step step;                            ///< what failed
  uint64_t wr_id = 0;                   ///< kPostRecv, kPostSend: the request's id
  const nic::Completion* wc = nullptr;  ///< kStatus: the completion
  const char* what = "";                ///< kStatus, kStall: what the tool was waiting for
};

/// Writes a failure's message to stderr in the tool's words.
using Say = std::function<void(const Failure&)>;

/// A tool's name and words, and how long it waits for progress.
struct Voice {
  std::string prog;              ///< starts the messages the session writes itself
  std::string arp_hint;          ///< follows "no ARP reply from A.B.C.D" (may be empty)
  std::chrono::seconds stall{};  ///< this long without progress is a stall
  Say say;                       ///< says every other failure
};

/// The buffer, CQs and QP that create() makes.
struct Shape {
  uint64_t bytes = 1;         ///< the buffer, page-aligned and registered whole
  uint32_t access = 0;        ///< the region's nic::kAccess* flags
  uint32_t send_cq = 0;       ///< entries of the send CQ (the only CQ when recv_cq is 0)
  uint32_t recv_cq = 0;       ///< entries of the receive CQ; 0: the send CQ serves both
  uint32_t max_send_wr = 0;   ///< the send queue's depth
  uint32_t max_recv_wr = 0;   ///< the receive queue's depth
};

/// The peer's QP as its out-of-band message gives it.
struct Remote {
  uint32_t qpn = 0;       ///< its QP number
  uint32_t psn = 0;       ///< its first PSN
  Gid gid{};              ///< its GID: its IPv4 address when IPv4-mapped
  uint32_t tcp_ipv4 = 0;  ///< the side channel's peer address (host order), used otherwise
};

/// The QP attributes ibv_rc_pingpong (pp_connect_ctx) and perftest (ctx_modify_qp_to_rtr/_rts)
/// both give their RC QP, what the peer's device sees from us: ACK timeout 14 (DEF_QP_TIME),
/// 7 retries of each kind, RNR timer 12 (MIN_RNR_TIMER); with the tool's path MTU and READ limits.
nic::QpAttr rdma_core_attr(uint32_t mtu, uint8_t max_rd_atomic, uint8_t max_dest_rd_atomic);

/// A request on the send queue, from the buffer.
struct Request {
  nic::WrOpcode op = nic::WrOpcode::kSend;  ///< SEND, WRITE or READ
  uint64_t wr_id = 0;                       ///< its completion's id
  uint64_t addr = 0;                        ///< where in the buffer
  uint32_t len = 0;                         ///< bytes
  uint64_t remote_addr = 0;                 ///< WRITE, READ: the peer's address
  uint32_t rkey = 0;                        ///< WRITE, READ: the peer's key
  bool inline_small = false;                ///< sent inline when len fits nic::kMaxInline
};

/// Monotonic nanoseconds, what stalled() measures from.
uint64_t now_ns();

class RcSession {
 public:
  explicit RcSession(Voice v) : voice_(std::move(v)) {}
  RcSession(const RcSession&) = delete;
  RcSession& operator=(const RcSession&) = delete;
  /// The QP, CQs and region, then the port, then the buffer: nothing touches it after.
  ~RcSession();

  /// The port and the device, refusing a path MTU whose packets would not fit the port.
  bool open_port(const std::string& device, uint32_t ipv4, const std::string& capture, uint32_t mtu);
  /// Buffer, region, CQs, QP in INIT, a random first PSN.
  bool create(const Shape& s);
  /// RTR then RTS towards the peer with attr (rdma_core_attr) and the peer's QP, PSNs and
  /// address, after resolving its MAC (a peer that does not answer ARP fails here with a clear
  /// message rather than as a retry-exceeded completion later).
  bool connect(const Remote& r, nic::QpAttr attr);

  /// One receive of len bytes at addr (no scatter entry when len is 0).
  bool post_recv(uint64_t wr_id, uint64_t addr, uint32_t len);
  /// One signaled request.
  bool post(const Request& r);
  /// One round of the engine (and so of the port's ARP).
  void poll() { port_.poll(); }
  /// Whether c succeeded; says kStatus when not.
  bool check(const nic::Completion& c, const char* what) const;
  /// Whether the stall limit has passed since last_progress_ns; says kStall when it has.
  bool stalled(uint64_t last_progress_ns, const char* what) const;
  /// Keeps the engine answering for a moment after the last message (the peer may still
  /// need an ACK or retransmit a request).
  void linger() { port_.linger(); }
  /// One line of the QP's transport counters, for the log.
  std::string counters() const;

  uint8_t* buf() { return buf_; }                         ///< the registered buffer
  uint32_t rkey() const { return mr_.rkey; }              ///< the region's remote key
  uint32_t qpn() const { return qp_->qpn(); }             ///< our QP number
  uint32_t psn() const { return psn_; }                   ///< our first PSN
  nic::Cq& send_cq() { return *send_cq_; }                ///< where requests complete
  nic::Cq& recv_cq() { return recv_cq_ ? *recv_cq_ : *send_cq_; }  ///< where receives complete

 private:
  bool fail(Step s) const;

  Voice voice_;
  EnginePort port_;
  uint8_t* buf_ = nullptr;
  nic::MrKeys mr_{};
  nic::Cq* send_cq_ = nullptr;
  nic::Cq* recv_cq_ = nullptr;  ///< null when the send CQ serves both
  nic::Qp* qp_ = nullptr;
  uint32_t psn_ = 0;
};

}  // namespace ndnic::raw_qp
