// One connection as the state machine keeps it (Linux's cm_id_private): its named state, the
// peer, the path and QP parameters agreed in REQ/REP, the MADs kept for retransmission and for
// duplicates, its deadline; and the application's QP as the state machine moves it (AppQp).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "cm/cm.h"
#include "wire/cm_mad.h"

namespace ndnic::cm {

using Clock = std::chrono::steady_clock;
/// The state machine's timers: each connection with a deadline, in deadline order.
using Timers = std::multimap<Clock::time_point, ConnId>;

struct Connection;

/// The application's RC QP, as the state machine moves it. The agent implements it over
/// nic::Qp; tests implement it with a record of the transitions asked for.
class AppQp {
 public:
  virtual ~AppQp() = default;
  /// The QP number, named in our REQ / REP and in the peer's DREQ.
  virtual uint32_t qpn() const = 0;
  /// RESET or INIT -> RTR with what `c`'s REQ and REP agreed on; false when the QP refuses.
  virtual bool to_rtr(const Connection& c) = 0;
  /// RTR -> RTS; false when the QP is not in RTR or refuses.
  virtual bool to_rts(const Connection& c) = 0;
  /// -> ERROR: its work flushes, nothing more is received.
  virtual void to_error() = 0;
  /// Whether the transport moved it to ERROR by itself (retries spent, a fatal NAK, a flush).
  virtual bool failed() const = 0;
};

struct Connection {
  ConnId local_id = 0;                ///< our comm ID: the connection's handle
  uint32_t remote_id = 0;             ///< the peer's comm ID, once known
  State state = State::kIdle;         ///< where it is, as ib_cm names it
  bool active = false;                ///< we sent the REQ
  std::unique_ptr<AppQp> qp;          ///< null once detached
  Callback cb;                        ///< the application's; null once detached
  uint64_t tid = 0;                   ///< the REQ's TID: every MAD of the exchange carries it

  uint32_t local_ipv4 = 0, peer_ipv4 = 0;  ///< host order
  uint16_t local_port = 0, peer_port = 0;  ///< rdma_cm ports (service ID port on the passive side)
  uint32_t peer_qpn = 0;              ///< the peer's RC QP, from its REQ or REP
  uint32_t local_qpn = 0;             ///< our QP's, kept after detach(): a DREQ must name it
  uint32_t rq_psn = 0;                ///< first PSN we expect (our REQ's / REP's starting PSN)
  uint32_t sq_psn = 0;                ///< first PSN we send (the peer's starting PSN)
  uint32_t mtu = 1024;                ///< path MTU in bytes, agreed in the REQ
  uint32_t flow_label = 0;            ///< the REQ's: the RC flows' UDP source port comes from it
  uint8_t responder_resources = 1;    ///< our QP's max_dest_rd_atomic
  uint8_t initiator_depth = 1;        ///< our QP's max_rd_atomic
  uint8_t ack_timeout = 14;           ///< our QP's local ACK timeout (time code)
  uint8_t retry_count = 7;            ///< our QP's transport retries
  /// RNR retries of our QP: the count the peer's REQ or REP asked for (as Linux's CM:
  /// the receiver knows how soon it posts receives, so each side tells the other).
  uint8_t rnr_retry_count = 7;
  bool defer_rtu = false;             ///< active: stop in REP_RCVD until complete_connect()
  std::vector<uint8_t> peer_data;     ///< the REP's private data, or the REQ's user part

  /// Passive, until accept/reject: the request as the application sees it.
  Request request;
  uint16_t listen_port = 0;           ///< passive: the listener the REQ came to
  uint8_t peer_cm_response_timeout = 0;  ///< the REQ's local CM response timeout
  uint8_t peer_max_cm_retries = 0;    ///< the REQ's: how often our REP is sent again
  uint64_t peer_ca_guid = 0;          ///< the REQ's: a REJ withdrawing it names that CA
  bool queued = false;                ///< in its listener's queue (not yet taken by get_request)
  std::list<ConnId>::iterator queue_pos;     ///< valid while queued
  bool in_timewait_list = false;      ///< in the TIMEWAIT list (the eviction order)
  std::list<ConnId>::iterator timewait_pos;  ///< valid while in_timewait_list

  /// Retransmission: `sent` goes again at `deadline` while retries_left lasts.
  std::array<uint8_t, wire::cm::kMadLen> sent{};
  std::array<uint8_t, wire::cm::kMadLen> last_reply{};  ///< RTU / DREP / REJ, for duplicates
  bool has_reply = false;
  uint32_t timeout_ms = 0;            ///< per try: the REQ's (active), the REP's (passive); DREQ reuses it
  uint8_t max_retries = 0;            ///< tries after the first, per message
  uint8_t retries_left = 0;           ///< of the message in `sent`
  /// Set through StateMachine::set_deadline only: it keeps the deadline-ordered timers.
  Clock::time_point deadline = Clock::time_point::max();
  bool timer_armed = false;           ///< `timer` is in the state machine's timers
  Timers::iterator timer;             ///< valid while timer_armed
};

}  // namespace ndnic::cm
