// The IB CM state machine (IBTA vol. 1 ch. 12) as Linux ib_cm runs it, the parts a RoCE RC
// connection uses: every connection with its named state, the listeners with their queues of
// requests, the timers. One function per input: an application call, an incoming MAD (one
// on_<mad> each, in mad_handlers.cc), a timer, a send error, a transport failure. What follows
// from an input goes out through Effects (MADs, callbacks, the clock) and the connection's AppQp
// (QP transitions). No threads, locks or devices here: the agent brings those, tests bring
// fakes.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "cm/cm.h"
#include "cm/connection.h"
#include "wire/cm_mad.h"

namespace ndnic::cm {

/// What the state machine asks of the world around it.
class Effects {
 public:
  virtual ~Effects() = default;
  /// Sends one encoded MAD (wire::cm::kMadLen bytes) to a peer's QP1; a send error comes back
  /// as StateMachine::on_send_error(owner) (0: no connection).
  virtual void send(uint32_t dest_ipv4, const uint8_t* mad, ConnId owner) = 0;
  /// Runs `f` later, with no lock held: how application callbacks are delivered.
  virtual void post(std::function<void()> f) = 0;
  /// A request was queued, or a listener went away: get_request() waiters look again.
  virtual void requests_changed() = 0;
  /// The time deadlines are set from.
  virtual Clock::time_point now() = 0;
  /// Comm IDs, TIDs, starting PSNs and ports: what an off-path host must not guess.
  virtual uint32_t random32() = 0;
};

class StateMachine {
 public:
  /// `ipv4` and `ca_guid` are our port's; `fx` outlives the state machine.
  StateMachine(const Config& cfg, uint32_t ipv4, uint64_t ca_guid, Effects& fx);

  // ---- the application's calls (semantics: agent.h, method by method) ----
  /// A listener on `port` (0: an ephemeral one); 0 when taken.
  uint16_t listen(uint16_t port, std::function<void(uint16_t)> on_request, size_t backlog);
  /// The listener goes; its queued requests are rejected.
  void unlisten(uint16_t port);
  /// What take_request found on a port.
  enum class Take : uint8_t { kTaken, kEmpty, kNoListener };
  /// Takes the oldest request queued on `port` that is still waiting for an answer.
  Take take_request(uint16_t port, Request* out);
  /// Requests queued on `port`, not yet taken.
  size_t pending_requests(uint16_t port) const;
  /// Whether `p`'s addresses and data are ones connect() takes (the QP aside).
  static bool connect_args_ok(const ConnectParams& p);
  /// REQ out, REQ_SENT; `qp` is the application's QP, already in INIT (p.qp is not looked at).
  ConnId connect(const ConnectParams& p, std::unique_ptr<AppQp> qp, Callback cb);
  /// REP_RCVD -> ESTABLISHED: QP to RTS, RTU out.
  bool complete_connect(ConnId id);
  /// REQ_RCVD -> REP_SENT: `qp` to RTR and RTS, REP out (p.qp is not looked at).
  bool accept(ConnId id, const AcceptParams& p, std::unique_ptr<AppQp> qp, Callback cb);
  /// A consumer REJ of the REQ (passive) or of the REP (active, REP_RCVD).
  bool reject(ConnId id, std::span<const uint8_t> private_data);
  /// DREQ out, or a cancel (REJ) before the connection is up.
  bool disconnect(ConnId id);
  /// Drops the connection's QP handle and callback.
  void detach(ConnId id);
  /// Our rdma_cm port on the connection; 0 for an unknown one.
  uint16_t local_port(ConnId id) const;
  /// The connection's state; kIdle for an unknown one.
  State state(ConnId id) const;
  /// The peer's private data (REP's, or the REQ's user part).
  bool peer_private_data(ConnId id, std::vector<uint8_t>* out) const;
  /// The state machine's counts (MAD I/O adds its own).
  const Counters& counters() const { return counters_; }
  /// Connection records kept, TIMEWAIT ones included.
  size_t connection_count() const { return conns_.size(); }
  /// Forgets every connection and queued request, silently (the agent stopped).
  void clear();

  // ---- the wire and the clock ----
  /// A MAD that decoded, from `src` (IPv4, host order).
  void on_mad(uint32_t src, const wire::cm::CmMad& mad);
  /// A MAD of `owner`'s could not leave (ARP unanswered).
  void on_send_error(ConnId owner);
  /// Runs the timers due by `now`: retransmissions, timeouts, TIMEWAIT's end.
  void fire_timers(Clock::time_point now);
  /// The earliest deadline; time_point::max() when none.
  Clock::time_point next_deadline() const;
  /// Turns an established connection whose QP the transport moved to ERROR into a disconnect;
  /// true while any connection is established (the caller then looks again soon).
  bool watch_transport();

 private:
  struct Listener {
    std::function<void(uint16_t)> on_request;
    std::list<ConnId> queue;  ///< requests not yet taken, oldest first (Connection::queue_pos)
    size_t backlog = 0;       ///< 0: no limit but max_connections
  };

  // One function per incoming MAD (mad_handlers.cc).
  void on_req(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmReq& m);
  void on_rep(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmRep& m);
  void on_rtu(uint32_t src, const wire::cm::CmRtu& m);
  void on_rej(uint32_t src, const wire::cm::CmRej& m);
  void on_mra(uint32_t src, const wire::cm::CmMra& m);
  void on_dreq(uint32_t src, const wire::cm::MadHeader& h, const wire::cm::CmDreq& m);
  void on_drep(uint32_t src, const wire::cm::CmDrep& m);
  /// The timer of one connection came due.
  void on_timer(Connection& c, Clock::time_point now);

  /// The connection a MAD names (its remote comm ID), if it came from that connection's peer
  /// with the peer's comm ID (`local_comm_id`, 0 while the peer's is not known yet).
  Connection* match(uint32_t src, uint32_t remote_comm_id, uint32_t local_comm_id);
  Connection* rej_target(uint32_t src, const wire::cm::CmRej& m);
  Connection* withdrawn_request(uint32_t src, const wire::cm::CmRej& m);
  /// Whether a new request may be queued on `l`: room in its backlog and in max_connections.
  bool admit_request(const Listener& l);
  void queue_request(Connection& c);
  Clock::time_point request_deadline(const wire::cm::CmReq& m);

  // Connection steps.
  Connection* find(ConnId id);
  const Connection* find(ConnId id) const;
  ConnId new_id();
  void arm_timer(Connection& c, uint32_t timeout_ms, uint8_t retries);
  void set_deadline(Connection& c, Clock::time_point t);
  void unqueue(Connection& c);       ///< out of its listener's queue, if there
  void leave_timewait(Connection& c);
  void finish(Connection& c);        ///< IDLE: forgotten at the end of this round of timers
  void reap();
  void forget(ConnId id);
  void watch(Connection& c);         ///< an established connection: its QP is looked at
  void send(uint32_t dest_ipv4, const wire::cm::CmMad& mad, ConnId owner);  ///< encodes, sends
  void transmit(Connection& c, const wire::cm::CmMad& mad);  ///< sends, keeps for retransmission
  void reply(Connection& c, const wire::cm::CmMad& mad);     ///< sends, keeps for duplicates
  /// Whether the reply kept for duplicates is a REJ (we refused, and may have to again).
  bool kept_reply_is_rej(const Connection& c) const;
  void enter_timewait(Connection& c);
  void fail(Connection& c, EventKind kind, uint16_t reason = 0, std::vector<uint8_t> data = {});
  void event(Connection& c, EventKind kind, uint16_t reason = 0, std::vector<uint8_t> data = {});
  bool qp_to_rtr(Connection& c);
  bool qp_to_rts(Connection& c);
  void qp_to_error(Connection& c);
  void establish_active(Connection& c);
  void reject_req(uint32_t dest, const wire::cm::MadHeader& h, const wire::cm::CmReq& m,
                  uint16_t reason);
  void reject_conn(Connection& c, uint16_t reason, std::span<const uint8_t> data, uint64_t ari_guid = 0);
  uint16_t pick_port(bool listening);

  Config cfg_;
  uint32_t ipv4_ = 0;
  uint64_t ca_guid_ = 0;
  Effects& fx_;
  std::map<ConnId, std::unique_ptr<Connection>> conns_;
  std::map<std::pair<uint32_t, uint32_t>, ConnId> by_remote_;  ///< (peer IP, remote comm ID)
  std::map<uint16_t, Listener> listeners_;
  Counters counters_;
  Timers timers_;
  std::list<ConnId> timewait_;     ///< TIMEWAIT connections, oldest first: evicted at the cap
  std::vector<ConnId> finished_;   ///< went IDLE: forgotten by reap()
  std::set<ConnId> watched_;       ///< established with a QP (some may have moved on since)
};

}  // namespace ndnic::cm
