// What each CM MAD does to a connection: the IB CM state machine as Linux ib_cm runs it
// (drivers/infiniband/core/cm.c), the parts a RoCE RC connection uses. Every function here runs
// with the agent's lock held.
#include <algorithm>

#include "nd_frontend/cm_agent.h"
#include "nd_frontend/cm_conn.h"
#include "wire/headers.h"

namespace ndnic::nd {
namespace cm = wire::cm;
using Clock = std::chrono::steady_clock;

namespace {

/// TIMEWAIT answers the peer's retransmissions for an ACK timeout and one retry period, both
/// from the peer's REQ on the passive side: bounded, so that REQ fields cannot keep a record
/// for hours (2^31 * 4 us).
constexpr uint32_t kMaxTimewaitMs = 20000;

template <size_t N>
std::vector<uint8_t> bytes_of(const std::array<uint8_t, N>& a, size_t from = 0) {
  return std::vector<uint8_t>(a.begin() + from, a.end());
}

}  // namespace

void CmAgent::handle(uint32_t src, const cm::CmMad& mad) {
  const cm::CmMessage& m = mad.msg;
  if (auto* req = std::get_if<cm::CmReq>(&m)) on_req(src, mad.hdr, *req);
  else if (auto* rep = std::get_if<cm::CmRep>(&m)) on_rep(src, mad.hdr, *rep);
  else if (auto* rtu = std::get_if<cm::CmRtu>(&m)) on_rtu(src, *rtu);
  else if (auto* rej = std::get_if<cm::CmRej>(&m)) on_rej(src, *rej);
  else if (auto* mra = std::get_if<cm::CmMra>(&m)) on_mra(src, *mra);
  else if (auto* dreq = std::get_if<cm::CmDreq>(&m)) on_dreq(src, mad.hdr, *dreq);
  else if (auto* drep = std::get_if<cm::CmDrep>(&m)) on_drep(src, *drep);
}

CmConn* CmAgent::match(uint32_t src, uint32_t remote_comm_id, uint32_t local_comm_id) {
  // A comm ID alone is no proof: any host that saw one MAD knows it. The peer's address and
  // the peer's own comm ID must agree too.
  CmConn* c = find(remote_comm_id);
  if (!c || c->peer_ipv4 != src || c->remote_id != local_comm_id) {
    counters_.bad_mads++;
    return nullptr;
  }
  return c;
}

// ---- sending -------------------------------------------------------------------------------

void CmAgent::transmit(CmConn& c, const cm::CmMad& mad) {
  if (cm::encode_cm_mad(mad, c.sent.data(), c.sent.size()) != cm::CmError::kOk) return;
  send_raw(c.peer_ipv4, c.sent.data(), c.local_id);
}

void CmAgent::reply(CmConn& c, const cm::CmMad& mad) {
  if (cm::encode_cm_mad(mad, c.last_reply.data(), c.last_reply.size()) != cm::CmError::kOk) return;
  c.has_reply = true;
  send_raw(c.peer_ipv4, c.last_reply.data(), c.local_id);
}

void CmAgent::reject_req(uint32_t dest, const cm::MadHeader& h, const cm::CmReq& m, uint16_t reason) {
  // cm_issue_rej: no connection of ours, so no local comm ID.
  counters_.rejects_sent++;
  send(dest, cm_mads::rej(h.tid, 0, m.local_comm_id, cm::kMsgReq, reason), 0);
}

void CmAgent::reject_conn(CmConn& c, uint16_t reason, std::span<const uint8_t> data, uint64_t ari_guid) {
  counters_.rejects_sent++;
  // The passive side refuses the REQ; the active side can only be refusing the REP.
  reply(c, cm_mads::rej(c.tid, c.local_id, c.remote_id, c.active ? cm::kMsgRep : cm::kMsgReq, reason, data,
                        ari_guid));
  // Kept a while so that a retransmitted REQ (our REJ lost) gets the same answer, not a
  // second request for the application.
  enter_timewait(c);
}

void CmAgent::enter_timewait(CmConn& c) {
  unqueue(c);
  c.state = CmState::kTimewait;
  c.retries_left = 0;
  if (!c.in_timewait_list) {
    c.timewait_pos = timewait_.insert(timewait_.end(), c.local_id);
    c.in_timewait_list = true;
  }
  // Linux waits one ACK timeout; we add one retransmission period so that the peer's last
  // retransmission still finds us.
  const uint32_t ms = std::min(cm_mads::to_ms(c.ack_timeout) + c.timeout_ms, kMaxTimewaitMs);
  set_deadline(c, Clock::now() + std::chrono::milliseconds(ms));
}

// ---- the application's QP ----------------------------------------------------------------

namespace {

nic::QpAttr qp_attr(const CmConn& c) {
  nic::QpAttr a;
  a.remote_qpn = c.peer_qpn;
  a.rq_psn = c.rq_psn;
  a.sq_psn = c.sq_psn;
  a.path_mtu = c.mtu;
  a.dest_ipv4 = c.peer_ipv4;
  // Both ends derive the RC flows' UDP source port from the REQ's flow label, as rxe does.
  a.udp_src_port = cm_mads::udp_sport(c.flow_label);
  a.retry_cnt = c.retry_count;
  a.rnr_retry = c.rnr_retry_count;
  a.timeout = c.ack_timeout;
  a.max_rd_atomic = c.initiator_depth;
  a.max_dest_rd_atomic = c.responder_resources;
  return a;
}

}  // namespace

bool CmAgent::qp_to_rtr(CmConn& c) {
  if (!c.qp) return false;  // detached
  if (c.qp->state() == nic::QpState::kReset && !c.qp->modify(nic::QpState::kInit, {})) return false;
  return c.qp->state() == nic::QpState::kInit && c.qp->modify(nic::QpState::kRtr, qp_attr(c));
}

bool CmAgent::qp_to_rts(CmConn& c) {
  return c.qp && c.qp->state() == nic::QpState::kRtr && c.qp->modify(nic::QpState::kRts, qp_attr(c));
}

void CmAgent::qp_to_error(CmConn& c) {
  if (c.qp) c.qp->modify(nic::QpState::kError, {});
}

void CmAgent::establish_active(CmConn& c) {
  if (!qp_to_rts(c)) {
    // cma_rep_recv failing: the peer hears a consumer REJ, we report the error.
    counters_.rejects_sent++;
    send(c.peer_ipv4, cm_mads::rej(c.tid, c.local_id, c.remote_id, cm::kMsgRep, cm::kRejConsumerDefined),
         c.local_id);
    qp_to_error(c);
    fail(c, CmEventKind::kError);
    return;
  }
  c.state = CmState::kEstablished;
  watch(c);
  reply(c, cm_mads::rtu(c));
  event(c, CmEventKind::kEstablished, 0, c.peer_data);
}

// ---- passive side: REQ, RTU ----------------------------------------------------------------

void CmAgent::on_req(uint32_t src, const cm::MadHeader& h, const cm::CmReq& m) {
  if (auto it = by_remote_.find({src, m.local_comm_id}); it != by_remote_.end()) {
    CmConn* c = find(it->second);
    if (!c) return;
    switch (c->state) {
      case CmState::kRepSent:
      case CmState::kMraRepRcvd:
        counters_.duplicates++;  // our REP was lost: the same REP again
        send_raw(c->peer_ipv4, c->sent.data(), c->local_id);
        break;
      case CmState::kTimewait:
        counters_.duplicates++;
        if (cm::MadHeader last; c->has_reply &&
            cm::decode_mad_header(c->last_reply.data(), c->last_reply.size(), &last) == cm::CmError::kOk &&
            last.attr_id == cm::kAttrRej)
          send_raw(c->peer_ipv4, c->last_reply.data(), c->local_id);  // our REJ again
        else
          send(src, cm_mads::rej(h.tid, c->local_id, m.local_comm_id, cm::kMsgReq, cm::kRejStaleConn), 0);
        break;
      default:
        break;  // REQ_RCVD: the application has not answered yet (Linux drops it too)
    }
    return;
  }
  uint16_t ps = 0, port = 0;
  if (!cm::parse_rdma_service_id(m.service_id, &ps, &port) || ps != cm::kRdmaPsTcp ||
      !listeners_.count(port)) {
    reject_req(src, h, m, cm::kRejInvalidServiceId);  // cm_req_handler: nobody listens
    return;
  }
  cm::CmaHeader cma;
  if (cm::decode_cma_header(m.private_data.data(), m.private_data.size(), &cma) != cm::CmError::kOk ||
      cma.ip_version != 4) {
    reject_req(src, h, m, cm::kRejConsumerDefined);  // rdma_cm refuses what it cannot parse
    return;
  }
  if (m.transport_service_type != 0) {
    reject_req(src, h, m, cm::kRejInvalidTransportType);  // RC only
    return;
  }
  const uint32_t req_mtu = cm_mads::mtu_bytes(m.path_mtu);
  if (req_mtu == 0) {
    reject_req(src, h, m, cm::kRejInvalidMtu);
    return;
  }
  if (!admit_request(listeners_[port])) {
    // As Linux rdma_cm with its listener's backlog full (ucma's -ENOMEM, cm_destroy_id: "do
    // not reject to allow future retries"): no answer, no state. The sender's next try may
    // find room; a flood gets nothing back.
    counters_.requests_dropped++;
    return;
  }
  auto conn = std::make_unique<CmConn>();
  CmConn& c = *conn;
  c.local_id = new_id();
  c.remote_id = m.local_comm_id;
  c.state = CmState::kReqRcvd;
  c.tid = h.tid;
  c.local_ipv4 = ipv4_;
  c.peer_ipv4 = src;
  c.local_port = port;
  c.peer_port = cma.port;
  c.peer_qpn = m.local_qpn;
  c.sq_psn = m.starting_psn;  // the REQ names the PSN its sender expects: ours to send from
  c.rq_psn = random32() & 0xFFFFFF;
  c.mtu = std::min(req_mtu, cfg_.path_mtu);
  c.flow_label = m.primary.flow_label;
  c.ack_timeout = m.primary.local_ack_timeout;
  c.retry_count = m.retry_count;
  c.rnr_retry_count = m.rnr_retry_count;
  c.listen_port = port;
  c.peer_cm_response_timeout = m.local_cm_response_timeout;
  c.peer_max_cm_retries = m.max_cm_retries;
  c.peer_ca_guid = m.local_ca_guid;
  c.peer_data = bytes_of(m.private_data, cm::kCmaHdrLen);
  CmRequest& r = c.request;
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

bool CmAgent::admit_request(const Listener& l) {
  if (l.backlog != 0 && l.queue.size() >= l.backlog) return false;
  if (conns_.size() < cfg_.max_connections) return true;
  reap();
  if (conns_.size() < cfg_.max_connections) return true;
  // Full: the record kept longest only to answer retransmissions makes room.
  if (timewait_.empty()) return false;
  forget(timewait_.front());
  return true;
}

void CmAgent::queue_request(CmConn& c) {
  Listener& l = listeners_[c.listen_port];
  c.queue_pos = l.queue.insert(l.queue.end(), c.local_id);
  c.queued = true;
  if (l.on_request) pending_.push_back([f = l.on_request, port = c.listen_port] { f(port); });
  requests_cv_.notify_all();
}

Clock::time_point CmAgent::request_deadline(const cm::CmReq& m) const {
  // The sender gives up after max_cm_retries + 1 tries of its response timeout plus a round
  // trip (its path's ACK timeout stands in for that); past that nobody waits for our answer.
  const uint64_t per_try = uint64_t(cm_mads::to_ms(m.remote_cm_response_timeout)) +
                           cm_mads::to_ms(m.primary.local_ack_timeout);
  const uint64_t budget = (uint64_t(m.max_cm_retries) + 1) * per_try;
  return Clock::now() + std::chrono::milliseconds(std::min<uint64_t>(budget, cfg_.max_request_wait_ms));
}

void CmAgent::on_rtu(uint32_t src, const cm::CmRtu& m) {
  CmConn* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c) return;
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) return;  // a duplicate
  c->state = CmState::kEstablished;
  set_deadline(*c, Clock::time_point::max());
  watch(*c);
  event(*c, CmEventKind::kEstablished, 0, c->peer_data);
}

// ---- active side: REP, MRA ---------------------------------------------------------------

void CmAgent::on_rep(uint32_t src, const cm::MadHeader& h, const cm::CmRep& m) {
  CmConn* c = find(m.remote_comm_id);
  if (!c || !c->active || c->peer_ipv4 != src) {
    // cm_rep_handler: a REP for no REQ of ours.
    counters_.bad_mads++;
    counters_.rejects_sent++;
    send(src, cm_mads::rej(h.tid, 0, m.local_comm_id, cm::kMsgRep, cm::kRejInvalidCommId), 0);
    return;
  }
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      break;
    case CmState::kEstablished:
      if (c->remote_id == m.local_comm_id && c->has_reply) {
        counters_.duplicates++;  // our RTU was lost: the same RTU again
        send_raw(c->peer_ipv4, c->last_reply.data(), c->local_id);
      }
      return;
    case CmState::kTimewait:
      // We refused this REP (reject() or disconnect() in REP_RCVD) and the REJ was lost: the
      // peer would otherwise wait out all its REP retries.
      if (cm::MadHeader last; c->remote_id == m.local_comm_id && c->has_reply &&
          cm::decode_mad_header(c->last_reply.data(), c->last_reply.size(), &last) == cm::CmError::kOk &&
          last.attr_id == cm::kAttrRej) {
        counters_.duplicates++;
        send_raw(c->peer_ipv4, c->last_reply.data(), c->local_id);
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
    send(c->peer_ipv4, cm_mads::rej(c->tid, c->local_id, c->remote_id, cm::kMsgRep, cm::kRejConsumerDefined),
         c->local_id);
    fail(*c, CmEventKind::kError);
    return;
  }
  if (c->defer_rtu) {
    c->state = CmState::kRepRcvd;
    event(*c, CmEventKind::kConnectResponse, 0, c->peer_data);
    return;
  }
  establish_active(*c);
}

void CmAgent::on_mra(uint32_t src, const cm::CmMra& m) {
  // An MRA of our REQ comes before we know the peer's comm ID (Linux cm_acquire_mraed_id).
  CmConn* c = match(src, m.remote_comm_id, m.message_mraed == cm::kMsgReq ? 0 : m.local_comm_id);
  if (!c) return;
  if (c->state == CmState::kReqSent && m.message_mraed == cm::kMsgReq)
    c->state = CmState::kMraReqRcvd;
  else if (c->state == CmState::kRepSent && m.message_mraed == cm::kMsgRep)
    c->state = CmState::kMraRepRcvd;
  else
    return;
  // The peer needs service_timeout more: wait that long (plus the round trip) before the next try.
  set_deadline(*c, Clock::now() + std::chrono::milliseconds(cm_mads::to_ms(m.service_timeout) +
                                                            2 * cm_mads::to_ms(cfg_.packet_life_time)));
}

// ---- either side: REJ, DREQ, DREP --------------------------------------------------------

CmConn* CmAgent::rej_target(uint32_t src, const cm::CmRej& m) {
  if (m.remote_comm_id == 0) return withdrawn_request(src, m);
  CmConn* c = find(m.remote_comm_id);
  // Before the peer's REP (REQ_SENT) we know no comm ID of its and it may name none (a REJ
  // from a host with no listener, cm_issue_rej); from then on both must match.
  if (!c || c->peer_ipv4 != src || (c->remote_id != 0 && m.local_comm_id != c->remote_id)) return nullptr;
  return c;
}

CmConn* CmAgent::withdrawn_request(uint32_t src, const cm::CmRej& m) {
  // A REQ's sender that gives up before hearing from us (cm_destroy_id in REQ_SENT) cannot
  // name our comm ID, only its own, and sends REJ "timeout" with its CA GUID: Linux finds the
  // connection by that pair (cm_acquire_rejected_id). Only a connection still answering that
  // REQ can be meant, and only from the address the REQ came from.
  constexpr uint8_t kGuidLen = 8;
  if (m.reason != cm::kRejTimeout || m.reject_info_length < kGuidLen) return nullptr;
  auto it = by_remote_.find({src, m.local_comm_id});
  CmConn* c = it == by_remote_.end() ? nullptr : find(it->second);
  if (!c || c->active || wire::load_be64(m.ari.data()) != c->peer_ca_guid) return nullptr;
  const bool answering = c->state == CmState::kReqRcvd || c->state == CmState::kRepSent ||
                         c->state == CmState::kMraRepRcvd;
  return answering ? c : nullptr;
}

void CmAgent::on_rej(uint32_t src, const cm::CmRej& m) {
  CmConn* c = rej_target(src, m);
  if (!c) {
    counters_.bad_mads++;
    return;
  }
  const CmEventKind kind =
      m.reason == cm::kRejConsumerDefined ? CmEventKind::kRejected : CmEventKind::kRefused;
  std::vector<uint8_t> data = bytes_of(m.private_data);
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      fail(*c, kind, m.reason, std::move(data));  // the QP stays in INIT: the app may retry
      break;
    case CmState::kReqRcvd:
      // The peer gave up on a request nobody answered yet: get_request() skips it and a late
      // accept() or reject() fails, rather than sending a REP to nobody. TIMEWAIT, not IDLE,
      // so that a REQ retransmission still in flight is not taken for a new request.
      enter_timewait(*c);
      break;
    case CmState::kRepRcvd:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      qp_to_error(*c);
      event(*c, kind, m.reason, std::move(data));
      enter_timewait(*c);
      break;
    case CmState::kEstablished:
      // cm_rej_handler: a REJ to an established connection ends it (e.g. a stale connection).
      qp_to_error(*c);
      event(*c, CmEventKind::kDisconnected, m.reason);
      enter_timewait(*c);
      break;
    default:
      break;
  }
}

void CmAgent::on_dreq(uint32_t src, const cm::MadHeader& h, const cm::CmDreq& m) {
  CmConn* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c) {
    // cm_issue_drep: a DREQ for a connection we do not know still gets its DREP.
    send(src, cm_mads::drep(h.tid, m.remote_comm_id, m.local_comm_id), 0);
    return;
  }
  if (m.remote_qpn_eecn != c->local_qpn) {
    counters_.bad_mads++;  // Linux cm_dreq_handler: not for this connection's QP, dropped
    return;
  }
  switch (c->state) {
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
    case CmState::kRepRcvd:
    case CmState::kEstablished:
      c->state = CmState::kDreqRcvd;
      qp_to_error(*c);
      event(*c, CmEventKind::kDisconnected);
      reply(*c, cm_mads::drep(h.tid, c->local_id, c->remote_id));
      enter_timewait(*c);
      break;
    case CmState::kDreqSent:
      // Both ends disconnected at once: answer, and ours is done too.
      reply(*c, cm_mads::drep(h.tid, c->local_id, c->remote_id));
      event(*c, CmEventKind::kDisconnected);
      event(*c, CmEventKind::kDisconnectDone);
      enter_timewait(*c);
      break;
    case CmState::kTimewait:
      counters_.duplicates++;  // our DREP was lost
      send(src, cm_mads::drep(h.tid, c->local_id, c->remote_id), c->local_id);
      break;
    default:
      break;
  }
}

void CmAgent::on_drep(uint32_t src, const cm::CmDrep& m) {
  CmConn* c = match(src, m.remote_comm_id, m.local_comm_id);
  if (!c || c->state != CmState::kDreqSent) return;
  enter_timewait(*c);
  event(*c, CmEventKind::kDisconnectDone);
}

void CmAgent::on_send_error(CmConnId owner) {
  // A MAD that could not leave: only ARP failing does that, i.e. the address is not there.
  CmConn* c = find(owner);
  if (c && (c->state == CmState::kReqSent || c->state == CmState::kMraReqRcvd))
    fail(*c, CmEventKind::kUnreachable);
}

}  // namespace ndnic::nd
