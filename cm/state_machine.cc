// The state machine's bookkeeping (connections, listeners, timers) and its inputs other than
// MADs: the application's calls, the timers, send errors, transport failures. What each MAD does
// is in mad_handlers.cc.
#include "cm/state_machine.h"

#include <algorithm>

#include "cm/mads.h"

namespace ndnic::cm {
namespace ib = wire::cm;

namespace {

// DREQ tries after a transport failure: the peer is most likely gone, so the connection is
// not held in DREQ_SENT for the full CM retry budget.
constexpr uint8_t kDreqRetriesAfterFailure = 2;
/// Linux's default ip_local_port_range, where rdma_cm binds an unbound active side.
constexpr uint16_t kEphemeralFirst = 32768;
constexpr uint16_t kEphemeralLast = 60999;
/// TIMEWAIT answers the peer's retransmissions for an ACK timeout and one retry period, both
/// from the peer's REQ on the passive side: bounded, so that REQ fields cannot keep a record
/// for hours (2^31 * 4 us).
constexpr uint32_t kMaxTimewaitMs = 20000;

}  // namespace

const char* state_name(State s) {
  switch (s) {
    case State::kIdle: return "IDLE";
    case State::kReqSent: return "REQ_SENT";
    case State::kMraReqRcvd: return "MRA_REQ_RCVD";
    case State::kReqRcvd: return "REQ_RCVD";
    case State::kRepSent: return "REP_SENT";
    case State::kMraRepRcvd: return "MRA_REP_RCVD";
    case State::kRepRcvd: return "REP_RCVD";
    case State::kEstablished: return "ESTABLISHED";
    case State::kDreqSent: return "DREQ_SENT";
    case State::kDreqRcvd: return "DREQ_RCVD";
    case State::kTimewait: return "TIMEWAIT";
  }
  return "?";
}

const char* event_name(EventKind k) {
  switch (k) {
    case EventKind::kConnectResponse: return "connect_response";
    case EventKind::kEstablished: return "established";
    case EventKind::kRejected: return "rejected";
    case EventKind::kRefused: return "refused";
    case EventKind::kTimeout: return "timeout";
    case EventKind::kUnreachable: return "unreachable";
    case EventKind::kError: return "error";
    case EventKind::kDisconnected: return "disconnected";
    case EventKind::kDisconnectDone: return "disconnect_done";
  }
  return "?";
}

StateMachine::StateMachine(const Config& cfg, uint32_t ipv4, uint64_t ca_guid, Effects& fx)
    : cfg_(cfg), ipv4_(ipv4), ca_guid_(ca_guid), fx_(fx) {
  if (mads::mtu_code(cfg_.path_mtu) == 0) cfg_.path_mtu = 1024;
}

void StateMachine::clear() {
  conns_.clear();
  by_remote_.clear();
  timers_.clear();
  timewait_.clear();
  finished_.clear();
  watched_.clear();
  for (auto& [port, l] : listeners_) l.queue.clear();
}

// ---- timers --------------------------------------------------------------------------------

void StateMachine::set_deadline(Connection& c, Clock::time_point t) {
  if (c.timer_armed) timers_.erase(c.timer);
  c.deadline = t;
  c.timer_armed = t != Clock::time_point::max();
  if (c.timer_armed) c.timer = timers_.emplace(t, c.local_id);
}

void StateMachine::arm_timer(Connection& c, uint32_t timeout_ms, uint8_t retries) {
  c.timeout_ms = timeout_ms;
  c.max_retries = c.retries_left = retries;
  set_deadline(c, fx_.now() + std::chrono::milliseconds(timeout_ms));
}

Clock::time_point StateMachine::next_deadline() const {
  return timers_.empty() ? Clock::time_point::max() : timers_.begin()->first;
}

void StateMachine::fire_timers(Clock::time_point now) {
  // Only the timers that are due: a wake-up costs what it handles, not every connection kept.
  std::vector<ConnId> due;
  for (auto it = timers_.begin(); it != timers_.end() && it->first <= now; it = timers_.erase(it)) {
    if (Connection* c = find(it->second)) {
      c->timer_armed = false;
      c->deadline = Clock::time_point::max();
    }
    due.push_back(it->second);
  }
  for (ConnId id : due)
    if (Connection* c = find(id)) on_timer(*c, now);
  reap();
}

void StateMachine::on_timer(Connection& c, Clock::time_point now) {
  const bool waiting = c.state == State::kReqSent || c.state == State::kMraReqRcvd ||
                       c.state == State::kRepSent || c.state == State::kMraRepRcvd ||
                       c.state == State::kDreqSent;
  if (waiting && c.retries_left > 0) {
    c.retries_left--;
    counters_.retransmits++;
    fx_.send(c.peer_ipv4, c.sent.data(), c.local_id);
    set_deadline(c, now + std::chrono::milliseconds(c.timeout_ms));
    return;
  }
  switch (c.state) {
    case State::kReqSent:
    case State::kMraReqRcvd:
      // Linux ib_cm gives up silently (IB_CM_REQ_ERROR; rdma_cm: UNREACHABLE, -ETIMEDOUT).
      fail(c, EventKind::kTimeout);
      break;
    case State::kRepSent:
    case State::kMraRepRcvd:
      qp_to_error(c);
      fail(c, EventKind::kTimeout);
      break;
    case State::kReqRcvd:
      // Nobody answered the request: its sender hears a REJ "timeout" naming our CA (as a side
      // that gives up tells its peer) rather than silence until its own tries run out, and the
      // request stops holding a place in the backlog.
      counters_.requests_expired++;
      reject_conn(c, ib::kRejTimeout, {}, ca_guid_);
      break;
    case State::kDreqSent:
      // A peer that vanished: we are disconnected all the same.
      enter_timewait(c);
      event(c, EventKind::kDisconnectDone);
      break;
    case State::kTimewait:
      finish(c);
      break;
    default:
      break;
  }
}

void StateMachine::finish(Connection& c) {
  c.state = State::kIdle;
  set_deadline(c, Clock::time_point::max());
  unqueue(c);
  leave_timewait(c);
  finished_.push_back(c.local_id);
}

void StateMachine::reap() {
  for (ConnId id : finished_)
    if (const Connection* c = find(id); c && c->state == State::kIdle) forget(id);
  finished_.clear();
}

void StateMachine::forget(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  set_deadline(c, Clock::time_point::max());
  unqueue(c);
  leave_timewait(c);
  auto r = by_remote_.find({c.peer_ipv4, c.remote_id});
  if (r != by_remote_.end() && r->second == c.local_id) by_remote_.erase(r);
  conns_.erase(it);
}

void StateMachine::unqueue(Connection& c) {
  if (!c.queued) return;
  if (auto l = listeners_.find(c.listen_port); l != listeners_.end()) l->second.queue.erase(c.queue_pos);
  c.queued = false;
}

void StateMachine::leave_timewait(Connection& c) {
  if (!c.in_timewait_list) return;
  timewait_.erase(c.timewait_pos);
  c.in_timewait_list = false;
}

void StateMachine::watch(Connection& c) { watched_.insert(c.local_id); }

// ---- helpers -------------------------------------------------------------------------------

ConnId StateMachine::new_id() {
  for (;;) {
    const ConnId id = fx_.random32();
    if (id != 0 && !conns_.count(id)) return id;
  }
}

uint16_t StateMachine::pick_port(bool listening) {
  for (;;) {
    const uint16_t p = uint16_t(kEphemeralFirst + fx_.random32() % (kEphemeralLast - kEphemeralFirst + 1));
    if (listening && listeners_.count(p)) continue;
    if (!listening && std::any_of(conns_.begin(), conns_.end(), [&](const auto& kv) {
          return kv.second->active && kv.second->local_port == p;
        }))
      continue;
    return p;
  }
}

Connection* StateMachine::find(ConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

const Connection* StateMachine::find(ConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

void StateMachine::event(Connection& c, EventKind kind, uint16_t reason, std::vector<uint8_t> data) {
  if (!c.cb) return;
  Event ev{kind, c.local_id, reason, std::move(data)};
  fx_.post([cb = c.cb, ev = std::move(ev)] { cb(ev); });
}

void StateMachine::fail(Connection& c, EventKind kind, uint16_t reason, std::vector<uint8_t> data) {
  event(c, kind, reason, std::move(data));
  finish(c);
}

// ---- sending -------------------------------------------------------------------------------

void StateMachine::transmit(Connection& c, const ib::CmMad& mad) {
  if (ib::encode_cm_mad(mad, c.sent.data(), c.sent.size()) != ib::CmError::kOk) return;
  fx_.send(c.peer_ipv4, c.sent.data(), c.local_id);
}

void StateMachine::reply(Connection& c, const ib::CmMad& mad) {
  if (ib::encode_cm_mad(mad, c.last_reply.data(), c.last_reply.size()) != ib::CmError::kOk) return;
  c.has_reply = true;
  fx_.send(c.peer_ipv4, c.last_reply.data(), c.local_id);
}

void StateMachine::send(uint32_t dest_ipv4, const ib::CmMad& mad, ConnId owner) {
  std::array<uint8_t, ib::kMadLen> bytes;
  if (ib::encode_cm_mad(mad, bytes.data(), bytes.size()) != ib::CmError::kOk) return;
  fx_.send(dest_ipv4, bytes.data(), owner);
}

bool StateMachine::kept_reply_is_rej(const Connection& c) const {
  ib::MadHeader last;
  return c.has_reply &&
         ib::decode_mad_header(c.last_reply.data(), c.last_reply.size(), &last) == ib::CmError::kOk &&
         last.attr_id == ib::kAttrRej;
}

void StateMachine::reject_req(uint32_t dest, const ib::MadHeader& h, const ib::CmReq& m, uint16_t reason) {
  // cm_issue_rej: no connection of ours, so no local comm ID.
  counters_.rejects_sent++;
  send(dest, mads::rej(h.tid, 0, m.local_comm_id, ib::kMsgReq, reason), 0);
}

void StateMachine::reject_conn(Connection& c, uint16_t reason, std::span<const uint8_t> data, uint64_t ari_guid) {
  counters_.rejects_sent++;
  // The passive side refuses the REQ; the active side can only be refusing the REP.
  reply(c, mads::rej(c.tid, c.local_id, c.remote_id, c.active ? ib::kMsgRep : ib::kMsgReq, reason, data,
                        ari_guid));
  // Kept a while so that a retransmitted REQ (our REJ lost) gets the same answer, not a
  // second request for the application.
  enter_timewait(c);
}

void StateMachine::enter_timewait(Connection& c) {
  unqueue(c);
  c.state = State::kTimewait;
  c.retries_left = 0;
  if (!c.in_timewait_list) {
    c.timewait_pos = timewait_.insert(timewait_.end(), c.local_id);
    c.in_timewait_list = true;
  }
  // Linux waits one ACK timeout; we add one retransmission period so that the peer's last
  // retransmission still finds us.
  const uint32_t ms = std::min(mads::to_ms(c.ack_timeout) + c.timeout_ms, kMaxTimewaitMs);
  set_deadline(c, fx_.now() + std::chrono::milliseconds(ms));
}

// ---- the application's QP ----------------------------------------------------------------

bool StateMachine::qp_to_rtr(Connection& c) {
  return c.qp && c.qp->to_rtr(c);  // no QP: detached
}

bool StateMachine::qp_to_rts(Connection& c) { return c.qp && c.qp->to_rts(c); }

void StateMachine::qp_to_error(Connection& c) {
  if (c.qp) c.qp->to_error();
}

void StateMachine::establish_active(Connection& c) {
  if (!qp_to_rts(c)) {
    // cma_rep_recv failing: the peer hears a consumer REJ, we report the error.
    counters_.rejects_sent++;
    send(c.peer_ipv4, mads::rej(c.tid, c.local_id, c.remote_id, ib::kMsgRep, ib::kRejConsumerDefined),
         c.local_id);
    qp_to_error(c);
    fail(c, EventKind::kError);
    return;
  }
  c.state = State::kEstablished;
  watch(c);
  reply(c, mads::rtu(c));
  event(c, EventKind::kEstablished, 0, c.peer_data);
}

// ---- application API -------------------------------------------------------------------

uint16_t StateMachine::listen(uint16_t port, std::function<void(uint16_t)> on_request, size_t backlog) {
  if (port == 0) port = pick_port(true);
  if (listeners_.count(port)) return 0;
  Listener& l = listeners_[port];
  l.on_request = std::move(on_request);
  l.backlog = backlog;
  return port;
}

void StateMachine::unlisten(uint16_t port) {
  auto it = listeners_.find(port);
  if (it == listeners_.end()) return;
  const std::list<ConnId> queued = it->second.queue;
  for (ConnId id : queued) {
    Connection* c = find(id);
    if (!c) continue;
    unqueue(*c);
    if (c->state == State::kReqRcvd) reject_conn(*c, ib::kRejConsumerDefined, {});
  }
  listeners_.erase(it);
  fx_.requests_changed();
}

StateMachine::Take StateMachine::take_request(uint16_t port, Request* out) {
  auto it = listeners_.find(port);
  if (it == listeners_.end()) return Take::kNoListener;
  while (!it->second.queue.empty()) {
    Connection* c = find(it->second.queue.front());
    if (!c) {
      it->second.queue.pop_front();
      continue;
    }
    unqueue(*c);  // taken: no longer counts against the backlog
    if (c->state == State::kReqRcvd) {
      *out = c->request;
      return Take::kTaken;
    }
  }
  return Take::kEmpty;
}

bool StateMachine::connect_args_ok(const ConnectParams& p) {
  return p.dest_ipv4 != 0 && p.dest_port != 0 && p.private_data.size() <= kConnectDataLen;
}

ConnId StateMachine::connect(const ConnectParams& p, std::unique_ptr<AppQp> qp, Callback cb) {
  if (!qp || !connect_args_ok(p)) return 0;
  auto conn = std::make_unique<Connection>();
  Connection& c = *conn;
  c.local_id = new_id();
  c.active = true;
  c.local_qpn = qp->qpn();
  c.qp = std::move(qp);
  c.cb = std::move(cb);
  c.tid = uint64_t(fx_.random32()) << 32 | c.local_id;
  c.local_ipv4 = ipv4_;
  c.peer_ipv4 = p.dest_ipv4;
  c.local_port = p.src_port ? p.src_port : pick_port(false);
  c.peer_port = p.dest_port;
  c.rq_psn = fx_.random32() & 0xFFFFFF;
  c.mtu = cfg_.path_mtu;
  c.flow_label = mads::flow_label(c.local_port, c.peer_port);
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.ack_timeout = cfg_.ack_timeout;
  c.retry_count = cfg_.retry_count;
  c.defer_rtu = p.defer_rtu;
  // Linux ib_send_cm_req: two packet lifetimes plus the peer's response time, per try.
  arm_timer(c, 2 * mads::to_ms(cfg_.packet_life_time) + mads::to_ms(cfg_.cm_response_timeout),
            cfg_.max_cm_retries);
  c.state = State::kReqSent;
  transmit(c, mads::req(c, cfg_, ca_guid_, p.private_data));
  const ConnId id = c.local_id;
  conns_[id] = std::move(conn);
  return id;
}

bool StateMachine::complete_connect(ConnId id) {
  Connection* c = find(id);
  if (!c || c->state != State::kRepRcvd) return false;
  establish_active(*c);
  return c->state == State::kEstablished;
}

bool StateMachine::accept(ConnId id, const AcceptParams& p, std::unique_ptr<AppQp> qp, Callback cb) {
  if (p.private_data.size() > kAcceptDataLen || !qp) return false;
  Connection* c = find(id);
  if (!c || c->active || c->state != State::kReqRcvd) return false;
  unqueue(*c);
  c->local_qpn = qp->qpn();
  c->qp = std::move(qp);
  c->cb = std::move(cb);
  c->responder_resources = std::min(p.responder_resources, c->request.initiator_depth);
  c->initiator_depth = std::min(p.initiator_depth, c->request.responder_resources);
  // rdma_accept: the QP reaches RTS before the REP leaves, so the peer may send at once.
  if (!qp_to_rtr(*c) || !qp_to_rts(*c)) {
    reject_conn(*c, ib::kRejNoResources, {});
    c->cb = nullptr;
    return false;
  }
  arm_timer(*c, mads::to_ms(c->peer_cm_response_timeout), c->peer_max_cm_retries);
  c->state = State::kRepSent;
  transmit(*c, mads::rep(*c, cfg_, ca_guid_, p.private_data));
  return true;
}

bool StateMachine::reject(ConnId id, std::span<const uint8_t> private_data) {
  if (private_data.size() > kRejectDataLen) return false;
  Connection* c = find(id);
  if (!c) return false;
  if (c->active ? c->state != State::kRepRcvd : c->state != State::kReqRcvd) return false;
  // ib_send_cm_rej in REP_RCVD: the QP reached RTR with the REP's parameters and must not be
  // left able to receive from a peer that will never be connected.
  if (c->active) qp_to_error(*c);
  reject_conn(*c, ib::kRejConsumerDefined, private_data);
  return true;
}

bool StateMachine::watch_transport() {
  bool any = false;
  for (auto it = watched_.begin(); it != watched_.end();) {
    Connection* c = find(*it);
    if (!c || c->state != State::kEstablished || !c->qp) {
      it = watched_.erase(it);
      continue;
    }
    ++it;
    any = true;
    if (!c->qp->failed()) continue;
    // The RC transport gave up on the peer (retries spent, a fatal NAK, a local Flush): the
    // connection cannot carry data any more. The application hears it as a disconnect, and
    // the peer, if it is still there, through a DREQ. The QP is closed for good: later posts
    // are refused as on any ended connection.
    qp_to_error(*c);
    arm_timer(*c, c->timeout_ms, kDreqRetriesAfterFailure);
    c->state = State::kDreqSent;
    transmit(*c, mads::dreq(*c));
    event(*c, EventKind::kDisconnected);
  }
  return any;
}

bool StateMachine::disconnect(ConnId id) {
  Connection* c = find(id);
  if (!c) return false;
  switch (c->state) {
    case State::kRepRcvd:
      // Our RTU never left (ND: Connect done, no CompleteConnect): as Linux cm_destroy_id in
      // REP_RCVD, a consumer REJ, so that the peer's pending accept fails at once.
      qp_to_error(*c);
      reject_conn(*c, ib::kRejConsumerDefined, {});
      event(*c, EventKind::kDisconnectDone);
      break;
    case State::kEstablished:
    case State::kRepSent:
    case State::kMraRepRcvd:
      // rdma_disconnect: the QP goes to ERROR first (its work flushes), then the DREQ.
      qp_to_error(*c);
      arm_timer(*c, c->timeout_ms, c->max_retries);
      c->state = State::kDreqSent;
      transmit(*c, mads::dreq(*c));
      break;
    case State::kReqSent:
    case State::kMraReqRcvd:
      // Cancelled before an answer: as ib_destroy_cm_id in REQ_SENT, a REJ "timeout" naming us.
      counters_.rejects_sent++;
      send(c->peer_ipv4, mads::rej(c->tid, c->local_id, 0, ib::kMsgReq, ib::kRejTimeout, {}, ca_guid_),
           c->local_id);
      fail(*c, EventKind::kDisconnectDone);
      break;
    case State::kReqRcvd:
      reject_conn(*c, ib::kRejConsumerDefined, {});
      break;
    case State::kTimewait:
    case State::kDreqRcvd:
      event(*c, EventKind::kDisconnectDone);  // the peer was first: nothing left to do
      break;
    case State::kDreqSent:
      break;  // already under way
    case State::kIdle:
      return false;
  }
  return true;
}

void StateMachine::detach(ConnId id) {
  if (Connection* c = find(id)) {
    c->cb = nullptr;
    c->qp.reset();
  }
}

uint16_t StateMachine::local_port(ConnId id) const {
  const Connection* c = find(id);
  return c ? c->local_port : 0;
}

State StateMachine::state(ConnId id) const {
  const Connection* c = find(id);
  return c ? c->state : State::kIdle;
}

bool StateMachine::peer_private_data(ConnId id, std::vector<uint8_t>* out) const {
  const Connection* c = find(id);
  if (!c) return false;
  *out = c->peer_data;
  return true;
}

size_t StateMachine::pending_requests(uint16_t port) const {
  auto it = listeners_.find(port);
  return it == listeners_.end() ? 0 : it->second.queue.size();
}

}  // namespace ndnic::cm
