// What each CM MAD does to a connection, one on_<mad> per message: the IB CM state machine as
// Linux ib_cm runs it (drivers/infiniband/core/cm.c, cm_req_handler, cm_rep_handler, ...), the
// parts a RoCE RC connection uses.
#include <algorithm>

#include "cm/mads.h"
#include "cm/state_machine.h"
#include "ndnic/wire/headers.h"

namespace ndnic::cm {
namespace ib = wire::cm;

namespace {

template <size_t N>
std::vector<uint8_t> bytes_of(const std::array<uint8_t, N>& a, size_t from = 0) {
  return std::vector<uint8_t>(a.begin() + from, a.end());
}

}  // namespace

void StateMachine::on_mad(uint32_t src, const ib::CmMad& mad) {
  const ib::CmMessage& m = mad.msg;
  if (auto* req = std::get_if<ib::CmReq>(&m)) on_req(src, mad.hdr, *req);
  else if (auto* rep = std::get_if<ib::CmRep>(&m)) on_rep(src, mad.hdr, *rep);
  else if (auto* rtu = std::get_if<ib::CmRtu>(&m)) on_rtu(src, *rtu);
  else if (auto* rej = std::get_if<ib::CmRej>(&m)) on_rej(src, *rej);
  else if (auto* mra = std::get_if<ib::CmMra>(&m)) on_mra(src, *mra);
  else if (auto* dreq = std::get_if<ib::CmDreq>(&m)) on_dreq(src, mad.hdr, *dreq);
  else if (auto* drep = std::get_if<ib::CmDrep>(&m)) on_drep(src, *drep);
}

Connection* StateMachine::match(uint32_t src, uint32_t remote_comm_id, uint32_t local_comm_id) {
  // A comm ID alone is no proof: any host that saw one MAD knows it. The peer's address and
  // the peer's own comm ID must agree too.
  Connection* c = find(remote_comm_id);
  if (!c || c->peer_ipv4 != src || c->remote_id != local_comm_id) {
    counters_.bad_mads++;
    return nullptr;
  }
  return c;
}

// ---- passive side: REQ, RTU ----------------------------------------------------------------

void StateMachine::on_req(uint32_t src, const ib::MadHeader& h, const ib::CmReq& m) {
  if (auto it = by_remote_.find({src, m.local_comm_id}); it != by_remote_.end()) {
    Connection* c = find(it->second);
    if (!c) return;
    switch (c->state) {
      case State::kRepSent:
      case State::kMraRepRcvd:
        counters_.duplicates++;  // our REP was lost: the same REP again
        fx_.send(c->peer_ipv4, c->sent.data(), c->local_id);
        break;
      case State::kTimewait:
        counters_.duplicates++;
        if (kept_reply_is_rej(*c))
          fx_.send(c->peer_ipv4, c->last_reply.data(), c->local_id);  // our REJ again
        else
          send(src, mads::rej(h.tid, c->local_id, m.local_comm_id, ib::kMsgReq, ib::kRejStaleConn), 0);
        break;
      default:
        break;  // REQ_RCVD: the application has not answered yet (Linux drops it too)
    }
    return;
  }
  uint16_t ps = 0, port = 0;
  if (!ib::parse_rdma_service_id(m.service_id, &ps, &port) || ps != ib::kRdmaPsTcp ||
      !listeners_.count(port)) {
    reject_req(src, h, m, ib::kRejInvalidServiceId);  // cm_req_handler: nobody listens
    return;
  }
  ib::CmaHeader cma;
  if (ib::decode_cma_header(m.private_data.data(), m.private_data.size(), &cma) != ib::CmError::kOk ||
      cma.ip_version != 4) {
    reject_req(src, h, m, ib::kRejConsumerDefined);  // rdma_cm refuses what it cannot parse
    return;
  }
  if (m.transport_service_type != 0) {
    reject_req(src, h, m, ib::kRejInvalidTransportType);  // RC only
    return;
  }
  const uint32_t req_mtu = mads::mtu_bytes(m.path_mtu);
  if (req_mtu == 0) {
    reject_req(src, h, m, ib::kRejInvalidMtu);
    return;
  }
  if (!admit_request(listeners_[port])) {
    // As Linux rdma_cm with its listener's backlog full (ucma's -ENOMEM, cm_destroy_id: "do
    // not reject to allow future retries"): no answer, no state. The sender's next try may
    // find room; a flood gets nothing back.
    counters_.requests_dropped++;
    return;
  }
  auto conn = std::make_unique<Connection>();
  Connection& c = *conn;
  c.local_id = new_id();
  c.remote_id = m.local_comm_id;
  c.state = State::kReqRcvd;
  c.tid = h.tid;
  c.local_ipv4 = ipv4_;
  c.peer_ipv4 = src;
  c.local_port = port;
  c.peer_port = cma.port;
  c.peer_qpn = m.local_qpn;
  c.sq_psn = m.starting_psn;  // the REQ names the PSN its sender expects: ours to send from
  c.rq_psn = fx_.random32() & 0xFFFFFF;
  c.mtu = std::min(req_mtu, cfg_.path_mtu);
  c.flow_label = m.primary.flow_label;
  c.ack_timeout = m.primary.local_ack_timeout;
  c.retry_count = m.retry_count;
  c.rnr_retry_count = m.rnr_retry_count;
  c.listen_port = port;
  c.peer_cm_response_timeout = m.local_cm_response_timeout;
  c.peer_max_cm_retries = m.max_cm_retries;
  c.peer_ca_guid = m.local_ca_guid;
  c.peer_data = bytes_of(m.private_data, ib::kCmaHdrLen);
  Request& r = c.request;
  r.conn = c.local_id;
  r.listen_port = port;
  r.local_ipv4 = cma.dst_ipv4();
  r.peer_ipv4 = src;
  r.peer_port = cma.port;
  r.peer_qpn = m.local_qpn;
  r.peer_starting_psn = m.starting_psn;
  r.responder_resources = m.responder_resources;
  r.initiator_depth = m.initiator_depth;
  r.path_mtu = c.mtu;
  r.private_data = c.peer_data;
  by_remote_[{src, m.local_comm_id}] = c.local_id;
  conns_[c.local_id] = std::move(conn);
  set_deadline(c, request_deadline(m));
  queue_request(c);
}

bool StateMachine::admit_request(const Listener& l) {
  if (l.backlog != 0 && l.queue.size() >= l.backlog) return false;
  if (conns_.size() < cfg_.max_connections) return true;
  reap();
  if (conns_.size() < cfg_.max_connections) return true;
  // Full: the record kept longest only to answer retransmissions makes room.
  if (timewait_.empty()) return false;
  forget(timewait_.front());
  return true;
}

void StateMachine::queue_request(Connection& c) {
  Listener& l = listeners_[c.listen_port];
  c.queue_pos = l.queue.insert(l.queue.end(), c.local_id);
  c.queued = true;
  if (l.on_request) fx_.post([f = l.on_request, port = c.listen_port] { f(port); });
  fx_.requests_changed();
}

Clock::time_point StateMachine::request_deadline(const ib::CmReq& m) {
  // The sender gives up after max_cm_retries + 1 tries of its response timeout plus a round
  // trip (its path's ACK timeout stands in for that); past that nobody waits for our answer.
  const uint64_t per_try = uint64_t(mads::to_ms(m.remote_cm_response_timeout)) +
                           mads::to_ms(m.primary.local_ack_timeout);
  const uint64_t budget = (uint64_t(m.max_cm_retries) + 1) * per_try;
  return fx_.now() + std::chrono::milliseconds(std::min<uint64_t>(budget, cfg_.max_request_wait_ms));
}

void StateMachine::on_rtu(uint32_t src, const ib::CmRtu& m) {
  Connection* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c) return;
  if (c->state != State::kRepSent && c->state != State::kMraRepRcvd) return;  // a duplicate
  c->state = State::kEstablished;
  set_deadline(*c, Clock::time_point::max());
  watch(*c);
  event(*c, EventKind::kEstablished, 0, c->peer_data);
}

// ---- active side: REP, MRA ---------------------------------------------------------------

void StateMachine::on_rep(uint32_t src, const ib::MadHeader& h, const ib::CmRep& m) {
  Connection* c = find(m.remote_comm_id);
  if (!c || !c->active || c->peer_ipv4 != src) {
    // cm_rep_handler: a REP for no REQ of ours.
    counters_.bad_mads++;
    counters_.rejects_sent++;
    send(src, mads::rej(h.tid, 0, m.local_comm_id, ib::kMsgRep, ib::kRejInvalidCommId), 0);
    return;
  }
  switch (c->state) {
    case State::kReqSent:
    case State::kMraReqRcvd:
      break;
    case State::kEstablished:
      if (c->remote_id == m.local_comm_id && c->has_reply) {
        counters_.duplicates++;  // our RTU was lost: the same RTU again
        fx_.send(c->peer_ipv4, c->last_reply.data(), c->local_id);
      }
      return;
    case State::kTimewait:
      // We refused this REP (reject() or disconnect() in REP_RCVD) and the REJ was lost: the
      // peer would otherwise wait out all its REP retries.
      if (c->remote_id == m.local_comm_id && kept_reply_is_rej(*c)) {
        counters_.duplicates++;
        fx_.send(c->peer_ipv4, c->last_reply.data(), c->local_id);
      }
      return;
    default:
      return;  // REP_RCVD waits for complete_connect(); later states are past it
  }
  c->remote_id = m.local_comm_id;
  by_remote_[{c->peer_ipv4, c->remote_id}] = c->local_id;
  c->peer_qpn = m.local_qpn;
  c->sq_psn = m.starting_psn;  // the REP names the PSN the passive side expects: ours to send from
  c->initiator_depth = std::min(c->initiator_depth, m.responder_resources);
  c->rnr_retry_count = m.rnr_retry_count;  // as Linux's cm_rep_handler
  set_deadline(*c, Clock::time_point::max());
  c->peer_data = bytes_of(m.private_data);
  if (!qp_to_rtr(*c)) {
    counters_.rejects_sent++;
    send(c->peer_ipv4, mads::rej(c->tid, c->local_id, c->remote_id, ib::kMsgRep, ib::kRejConsumerDefined),
         c->local_id);
    fail(*c, EventKind::kError);
    return;
  }
  if (c->defer_rtu) {
    c->state = State::kRepRcvd;
    event(*c, EventKind::kConnectResponse, 0, c->peer_data);
    return;
  }
  establish_active(*c);
}

void StateMachine::on_mra(uint32_t src, const ib::CmMra& m) {
  // An MRA of our REQ comes before we know the peer's comm ID (Linux cm_acquire_mraed_id).
  Connection* c = match(src, m.remote_comm_id, m.message_mraed == ib::kMsgReq ? 0 : m.local_comm_id);
  if (!c) return;
  if (c->state == State::kReqSent && m.message_mraed == ib::kMsgReq)
    c->state = State::kMraReqRcvd;
  else if (c->state == State::kRepSent && m.message_mraed == ib::kMsgRep)
    c->state = State::kMraRepRcvd;
  else
    return;
  // The peer needs service_timeout more: wait that long (plus the round trip) before the next try.
  set_deadline(*c, fx_.now() + std::chrono::milliseconds(mads::to_ms(m.service_timeout) +
                                                            2 * mads::to_ms(cfg_.packet_life_time)));
}

// ---- either side: REJ, DREQ, DREP --------------------------------------------------------

Connection* StateMachine::rej_target(uint32_t src, const ib::CmRej& m) {
  if (m.remote_comm_id == 0) return withdrawn_request(src, m);
  Connection* c = find(m.remote_comm_id);
  // Before the peer's REP (REQ_SENT) we know no comm ID of its and it may name none (a REJ
  // from a host with no listener, cm_issue_rej); from then on both must match.
  if (!c || c->peer_ipv4 != src || (c->remote_id != 0 && m.local_comm_id != c->remote_id)) return nullptr;
  return c;
}

Connection* StateMachine::withdrawn_request(uint32_t src, const ib::CmRej& m) {
  // A REQ's sender that gives up before hearing from us (cm_destroy_id in REQ_SENT) cannot
  // name our comm ID, only its own, and sends REJ "timeout" with its CA GUID: Linux finds the
  // connection by that pair (cm_acquire_rejected_id). Only a connection still answering that
  // REQ can be meant, and only from the address the REQ came from.
  constexpr uint8_t kGuidLen = 8;
  if (m.reason != ib::kRejTimeout || m.reject_info_length < kGuidLen) return nullptr;
  auto it = by_remote_.find({src, m.local_comm_id});
  Connection* c = it == by_remote_.end() ? nullptr : find(it->second);
  if (!c || c->active || wire::load_be64(m.ari.data()) != c->peer_ca_guid) return nullptr;
  const bool answering = c->state == State::kReqRcvd || c->state == State::kRepSent ||
                         c->state == State::kMraRepRcvd;
  return answering ? c : nullptr;
}

void StateMachine::on_rej(uint32_t src, const ib::CmRej& m) {
  Connection* c = rej_target(src, m);
  if (!c) {
    counters_.bad_mads++;
    return;
  }
  const EventKind kind =
      m.reason == ib::kRejConsumerDefined ? EventKind::kRejected : EventKind::kRefused;
  std::vector<uint8_t> data = bytes_of(m.private_data);
  switch (c->state) {
    case State::kReqSent:
    case State::kMraReqRcvd:
      fail(*c, kind, m.reason, std::move(data));  // the QP stays in INIT: the app may retry
      break;
    case State::kReqRcvd:
      // The peer gave up on a request nobody answered yet: get_request() skips it and a late
      // accept() or reject() fails, rather than sending a REP to nobody. TIMEWAIT, not IDLE,
      // so that a REQ retransmission still in flight is not taken for a new request.
      enter_timewait(*c);
      break;
    case State::kRepRcvd:
    case State::kRepSent:
    case State::kMraRepRcvd:
      qp_to_error(*c);
      event(*c, kind, m.reason, std::move(data));
      enter_timewait(*c);
      break;
    case State::kEstablished:
      // cm_rej_handler: a REJ to an established connection ends it (e.g. a stale connection).
      qp_to_error(*c);
      event(*c, EventKind::kDisconnected, m.reason);
      enter_timewait(*c);
      break;
    default:
      break;
  }
}

void StateMachine::on_dreq(uint32_t src, const ib::MadHeader& h, const ib::CmDreq& m) {
  Connection* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c) {
    // cm_issue_drep: a DREQ for a connection we do not know still gets its DREP.
    send(src, mads::drep(h.tid, m.remote_comm_id, m.local_comm_id), 0);
    return;
  }
  if (m.remote_qpn_eecn != c->local_qpn) {
    counters_.bad_mads++;  // Linux cm_dreq_handler: not for this connection's QP, dropped
    return;
  }
  switch (c->state) {
    case State::kRepSent:
    case State::kMraRepRcvd:
    case State::kRepRcvd:
    case State::kEstablished:
      c->state = State::kDreqRcvd;
      qp_to_error(*c);
      event(*c, EventKind::kDisconnected);
      reply(*c, mads::drep(h.tid, c->local_id, c->remote_id));
      enter_timewait(*c);
      break;
    case State::kDreqSent:
      // Both ends disconnected at once: answer, and ours is done too.
      reply(*c, mads::drep(h.tid, c->local_id, c->remote_id));
      event(*c, EventKind::kDisconnected);
      event(*c, EventKind::kDisconnectDone);
      enter_timewait(*c);
      break;
    case State::kTimewait:
      counters_.duplicates++;  // our DREP was lost
      send(src, mads::drep(h.tid, c->local_id, c->remote_id), c->local_id);
      break;
    default:
      break;
  }
}

void StateMachine::on_drep(uint32_t src, const ib::CmDrep& m) {
  Connection* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c || c->state != State::kDreqSent) return;
  enter_timewait(*c);
  event(*c, EventKind::kDisconnectDone);
}

void StateMachine::on_send_error(ConnId owner) {
  // A MAD that could not leave: only ARP failing does that, i.e. the address is not there.
  Connection* c = find(owner);
  if (c && (c->state == State::kReqSent || c->state == State::kMraReqRcvd))
    fail(*c, EventKind::kUnreachable);
}

}  // namespace ndnic::cm
