// The connection manager the ND connector sits on: IB CM (IBTA vol. 1 ch. 12) over the GSI QP1 of
// one Device/port, speaking what Linux rdma_cm speaks on RoCEv2 (RDMA_PS_TCP service IDs, the
// rdma_cm private-data header, rdma_cm's flow label), so either end may be a Linux host.
//
// The agent owns QP1 and a thread that sleeps on QP1's CQ event fds (and a wake-up fd), handles
// incoming MADs and retransmission timers, and moves the application's RC QPs through
// INIT -> RTR -> RTS (and to ERROR on disconnect). The API is thread-safe; results arrive as
// CmEvents through the callback given to connect()/accept(), always on the agent thread (never
// inside the call that caused them), with no agent lock held: a callback may call the agent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "nic/nic.h"
#include "wire/cm_mad.h"

namespace ndnic::glue {
class Port;
}

namespace ndnic::nd {

/// Our local communication ID: the handle of one connection, active or passive.
using CmConnId = uint32_t;
/// The agent's timers: each connection with a deadline, in deadline order.
using CmTimers = std::multimap<std::chrono::steady_clock::time_point, CmConnId>;

/// User private data each message can carry: the REQ loses rdma_cm's header to it.
constexpr size_t kCmConnectDataLen = wire::cm::kReqPrivateDataLen - wire::cm::kCmaHdrLen;  // 56
constexpr size_t kCmAcceptDataLen = wire::cm::kRepPrivateDataLen;   // 196
constexpr size_t kCmRejectDataLen = wire::cm::kRejPrivateDataLen;   // 148

/// Connection states, named as Linux ib_cm names them (IB_CM_*).
enum class CmState : uint8_t {
  kIdle,          ///< unknown, finished, or never started
  kReqSent,
  kMraReqRcvd,    ///< the peer asked for more time to answer our REQ
  kReqRcvd,       ///< a request waiting for accept() / reject()
  kRepSent,
  kMraRepRcvd,
  kRepRcvd,       ///< REP in, RTU deferred to complete_connect()
  kEstablished,
  kDreqSent,
  kDreqRcvd,
  kTimewait,      ///< over; kept a while to answer the peer's retransmissions
};
const char* cm_state_name(CmState s);

struct CmConfig {
  // Defaults are rdma_cm's (cma.c); tests shrink them.
  uint8_t cm_response_timeout = 20;  ///< CMA_CM_RESPONSE_TIMEOUT: 4.096 us * 2^20 = 4.3 s
  uint8_t max_cm_retries = 15;       ///< CMA_MAX_CM_RETRIES
  uint8_t packet_life_time = 18;     ///< CMA_IBOE_PACKET_LIFETIME (the RoCE path record's)
  uint8_t ack_timeout = 14;          ///< the path's local ACK timeout: the RC QPs' transport timer
  uint8_t retry_count = 7;           ///< RC transport retries, in the REQ
  uint8_t rnr_retry_count = 7;       ///< RNR retries we ask of the peer (REQ/REP); 7 = infinite
  uint32_t path_mtu = 1024;          ///< largest MTU we offer / accept (rxe on a 1500-byte netdev)
  uint8_t hop_limit = 64;
  uint32_t recv_depth = 64;          ///< MAD receives kept posted on QP1
  uint32_t send_depth = 64;          ///< MADs in flight on QP1
  /// Connection records (TIMEWAIT ones included) past which a REQ is dropped unanswered, so
  /// that a REQ flood cannot grow the agent's state without bound. At the cap the oldest
  /// TIMEWAIT record makes room first. connect() is not held to it: the application's own.
  uint32_t max_connections = 4096;
  /// A request nobody accepts or rejects is refused (REJ "timeout") after the REQ's sender would
  /// have given up on it, but never later than this.
  uint32_t max_request_wait_ms = 60000;
  /// Test hook: a MAD for which this returns true is not sent (counted as dropped). Runs under
  /// the agent's lock: it must not call the agent.
  std::function<bool(const wire::cm::CmMad&)> drop_tx;
};

enum class CmEventKind : uint8_t {
  kConnectResponse,  ///< active, defer_rtu: REP in, QP in RTR; call complete_connect()
  kEstablished,      ///< both sides: the QP is in RTS (active: RTU sent; passive: RTU in)
  kRejected,         ///< the peer's consumer rejected (REJ reason 28): private_data is its
  kRefused,          ///< any other REJ (8 = nobody listens on that port): reject_reason
  kTimeout,          ///< no answer after max_cm_retries (REQ, or REP on the passive side)
  kUnreachable,      ///< the peer's address did not resolve (ARP unanswered)
  kError,            ///< a local failure (the QP refused a transition)
  kDisconnected,     ///< DREQ in, or the transport failed (peer gone); the QP is in ERROR (ND NotifyDisconnect)
  kDisconnectDone,   ///< our disconnect() finished (DREP in, or DREQ retries exhausted)
};
const char* cm_event_name(CmEventKind k);

struct CmEvent {
  CmEventKind kind;
  CmConnId conn = 0;
  uint16_t reject_reason = 0;         ///< kRejected / kRefused: the REJ's reason
  std::vector<uint8_t> private_data;  ///< the REP's (established / response) or REJ's
};
using CmCallback = std::function<void(const CmEvent&)>;

/// An incoming connection request (a REQ to a port we listen on), waiting for accept/reject.
struct CmRequest {
  CmConnId conn = 0;
  uint16_t listen_port = 0;
  uint32_t local_ipv4 = 0;            ///< host order, from the rdma_cm header
  uint32_t peer_ipv4 = 0;
  uint16_t peer_port = 0;             ///< the active side's rdma_cm source port
  uint32_t peer_qpn = 0;
  uint32_t peer_starting_psn = 0;     ///< the PSN our QP will send from (REQ semantics)
  uint8_t responder_resources = 0;    ///< READs the peer lets us have outstanding at it
  uint8_t initiator_depth = 0;        ///< READs the peer wants outstanding at us
  uint32_t path_mtu = 0;              ///< bytes
  std::vector<uint8_t> private_data;  ///< kCmConnectDataLen bytes (the REQ's, minus rdma_cm's header)
};

struct CmConnectParams {
  nic::Qp* qp = nullptr;              ///< an RC QP in RESET or INIT
  uint32_t dest_ipv4 = 0;             ///< host order
  uint16_t dest_port = 0;
  uint16_t src_port = 0;              ///< 0: a random ephemeral port, as rdma_cm binds
  std::span<const uint8_t> private_data;  ///< at most kCmConnectDataLen
  uint8_t responder_resources = 1;    ///< READs the peer may have outstanding at us (ND inbound limit)
  uint8_t initiator_depth = 1;        ///< READs we want outstanding at the peer (ND outbound limit)
  bool defer_rtu = false;             ///< stop at kConnectResponse (ND Connect / CompleteConnect)
};

struct CmAcceptParams {
  nic::Qp* qp = nullptr;              ///< an RC QP in RESET or INIT
  std::span<const uint8_t> private_data;  ///< at most kCmAcceptDataLen
  uint8_t responder_resources = 1;    ///< clamped to the REQ's initiator depth
  uint8_t initiator_depth = 1;        ///< clamped to the REQ's responder resources
};

struct CmConn;

class CmAgent {
 public:
  CmAgent(nic::Device& dev, const glue::Port& port, CmConfig config = {});
  ~CmAgent();
  CmAgent(const CmAgent&) = delete;
  CmAgent& operator=(const CmAgent&) = delete;

  /// Creates QP1 (one per device) with its CQs and starts the thread. listen() may come first,
  /// so that no REQ arriving in between is refused.
  bool start();
  /// Stops the thread and destroys QP1; connections are dropped silently (a vanished host).
  /// Not from a callback (it joins the agent thread).
  void stop();
  const std::string& error() const { return error_; }

  /// Listens on an RDMA_PS_TCP port; 0 picks a free one. Returns the port, 0 if taken.
  /// on_request (optional) runs on the agent thread each time a request is queued. backlog:
  /// requests queued and not yet taken by get_request() beyond which a REQ is dropped
  /// unanswered (as Linux rdma_cm does, so that its sender's retry may still get in); 0: no
  /// limit but the agent's max_connections (ND v1 Listen).
  uint16_t listen(uint16_t port, std::function<void(uint16_t port)> on_request = {}, size_t backlog = 0);
  /// Stops listening; requests still queued are rejected (consumer reject, no data).
  void unlisten(uint16_t port);
  /// Takes the oldest request queued on `port`, waiting up to timeout_ms (0: do not wait).
  bool get_request(uint16_t port, CmRequest* out, int timeout_ms);
  /// Requests queued on `port` and not yet taken (what its backlog counts).
  size_t pending_requests(uint16_t port) const;

  /// Sends a REQ. Returns the connection's ID, 0 when refused locally (bad QP or arguments).
  CmConnId connect(const CmConnectParams& p, CmCallback cb);
  /// After kConnectResponse: QP to RTS, RTU out, state ESTABLISHED (kEstablished follows).
  bool complete_connect(CmConnId conn);
  /// Accepts a request: QP to RTS with its parameters, REP out; kEstablished once the RTU is in.
  bool accept(CmConnId conn, const CmAcceptParams& p, CmCallback cb);
  /// Rejects (REJ, consumer defined, up to kCmRejectDataLen bytes) a request not yet accepted,
  /// or on the active side the peer's REP instead of complete_connect() (the QP goes to ERROR):
  /// IB CM lets either end refuse until the RTU. No event follows. False when neither applies.
  bool reject(CmConnId conn, std::span<const uint8_t> private_data);
  /// Moves the QP to ERROR and sends DREQ; kDisconnectDone follows. Before the connection is
  /// up it cancels instead (REJ to the peer) and kDisconnectDone follows as well.
  bool disconnect(CmConnId conn);
  /// The application is done with the connection's QP and callback: the agent touches neither
  /// again (events in flight may still run). Call before destroying the QP of a connection
  /// the agent may still know, e.g. one in TIMEWAIT or still disconnecting.
  void detach(CmConnId conn);
  /// The rdma_cm port the connection uses on our side (the one picked when connect() was
  /// given none); 0 for an unknown connection.
  uint16_t local_port(CmConnId conn) const;

  CmState state(CmConnId conn) const;
  /// The peer's private data (REP's on the active side, REQ's user part on the passive side),
  /// for ND GetConnectionData. False for an unknown connection.
  bool peer_private_data(CmConnId conn, std::vector<uint8_t>* out) const;

  struct Counters {
    uint64_t mads_sent = 0, mads_received = 0;
    uint64_t retransmits = 0;      ///< REQ / REP / DREQ sent again on timeout
    uint64_t duplicates = 0;       ///< duplicate REQ / REP / DREQ answered again
    uint64_t dropped_tx = 0;       ///< no free send slot, or the drop_tx hook
    /// Receives that did not decode, or for no connection of ours: unknown comm IDs, or not
    /// from the connection's peer with its comm ID (and, for a DREQ, our QPN).
    uint64_t bad_mads = 0;
    uint64_t rejects_sent = 0;
    uint64_t requests_dropped = 0;  ///< REQs not queued: the backlog or max_connections was full
    uint64_t requests_expired = 0;  ///< requests never answered by the application, refused
  };
  Counters counters() const;
  /// Connection records the agent keeps, TIMEWAIT ones included.
  size_t connection_count() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Listener {
    std::function<void(uint16_t)> on_request;
    std::list<CmConnId> queue;  ///< requests not yet taken, oldest first (CmConn::queue_pos)
    size_t backlog = 0;         ///< 0: no limit but max_connections
  };

  void run();
  unsigned drain_recv();
  unsigned drain_send();
  void fire_timers(Clock::time_point now);
  void on_timer(CmConn& c, Clock::time_point now);
  /// Turns an established connection whose QP the transport moved to ERROR into a disconnect;
  /// true while any connection is established (the loop then wakes to look again).
  bool watch_transport();
  Clock::time_point next_deadline() const;
  void deliver();
  void wake();

  // MAD I/O (caller holds mu_).
  void send(uint32_t dest_ipv4, const wire::cm::CmMad& mad, CmConnId owner);
  void send_raw(uint32_t dest_ipv4, const uint8_t* mad, CmConnId owner);
  void post_recv(uint32_t slot);
  void handle(uint32_t src_ipv4, const wire::cm::CmMad& mad);
  void on_req(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmReq& m);
  void on_rep(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmRep& m);
  void on_rtu(uint32_t src, const wire::cm::CmRtu& m);
  void on_rej(uint32_t src, const wire::cm::CmRej& m);
  void on_mra(uint32_t src, const wire::cm::CmMra& m);
  void on_dreq(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmDreq& m);
  void on_drep(uint32_t src, const wire::cm::CmDrep& m);
  void on_send_error(CmConnId owner);
  /// The connection a MAD names (its remote comm ID), if it came from that connection's peer
  /// with the peer's comm ID (`local_comm_id`, 0 while the peer's is not known yet).
  CmConn* match(uint32_t src, uint32_t remote_comm_id, uint32_t local_comm_id);
  CmConn* rej_target(uint32_t src, const wire::cm::CmRej& m);
  CmConn* withdrawn_request(uint32_t src, const wire::cm::CmRej& m);
  /// Whether a new request may be queued on `l`: room in its backlog and in max_connections.
  bool admit_request(const Listener& l);
  void queue_request(CmConn& c);
  Clock::time_point request_deadline(const wire::cm::CmReq& m) const;

  // Connection steps (caller holds mu_).
  CmConn* find(CmConnId id);
  const CmConn* find(CmConnId id) const;
  CmConnId new_id();
  void arm_timer(CmConn& c, uint32_t timeout_ms, uint8_t retries);
  void set_deadline(CmConn& c, Clock::time_point t);
  void unqueue(CmConn& c);       ///< out of its listener's queue, if there
  void leave_timewait(CmConn& c);
  void finish(CmConn& c);        ///< IDLE: forgotten at the end of this round of timers
  void reap();
  void forget(CmConnId id);
  void watch(CmConn& c);         ///< an established connection: its QP is looked at
  void transmit(CmConn& c, const wire::cm::CmMad& mad);  ///< sends, keeps for retransmission
  void reply(CmConn& c, const wire::cm::CmMad& mad);     ///< sends, keeps for duplicates
  void enter_timewait(CmConn& c);
  void fail(CmConn& c, CmEventKind kind, uint16_t reason = 0, std::vector<uint8_t> data = {});
  void event(CmConn& c, CmEventKind kind, uint16_t reason = 0, std::vector<uint8_t> data = {});
  bool qp_to_rtr(CmConn& c);
  bool qp_to_rts(CmConn& c);
  void qp_to_error(CmConn& c);
  void establish_active(CmConn& c);
  void reject_req(uint32_t dest, const wire::cm::MadHeader& h, const wire::cm::CmReq& m,
                  uint16_t reason);
  void reject_conn(CmConn& c, uint16_t reason, std::span<const uint8_t> data, uint64_t ari_guid = 0);
  uint16_t pick_port(bool listening);
  uint32_t random32();

  nic::Device& dev_;
  uint32_t ipv4_ = 0;
  uint64_t ca_guid_ = 0;
  CmConfig cfg_;
  std::string error_;

  mutable std::mutex mu_;
  std::condition_variable requests_cv_;
  std::map<CmConnId, std::unique_ptr<CmConn>> conns_;
  std::map<std::pair<uint32_t, uint32_t>, CmConnId> by_remote_;  ///< (peer IP, remote comm ID)
  std::map<uint16_t, Listener> listeners_;
  std::vector<std::function<void()>> pending_;  ///< callbacks to run unlocked
  Counters counters_;
  CmTimers timers_;
  std::list<CmConnId> timewait_;     ///< TIMEWAIT connections, oldest first: evicted at the cap
  std::vector<CmConnId> finished_;   ///< went IDLE: forgotten by reap()
  std::set<CmConnId> watched_;       ///< established with a QP (some may have moved on since)

  // QP1 and its buffers: recv_depth receive slots, then send_depth send slots, of a MAD each.
  uint32_t pd_ = 0;
  nic::Cq* send_cq_ = nullptr;
  nic::Cq* recv_cq_ = nullptr;
  nic::Qp* qp1_ = nullptr;
  std::vector<uint8_t> buf_;
  nic::MrKeys mr_{};
  std::vector<uint32_t> free_send_;
  int wake_fd_ = -1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ndnic::nd
