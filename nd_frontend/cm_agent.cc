// The CM agent's machinery: QP1 and its MAD buffers, the thread, timers, and the application
// API. What each MAD does to a connection is in cm_handlers.cc.
#include "nd_frontend/cm_agent.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "nd_frontend/cm_conn.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::nd {
namespace cm = wire::cm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kMad = cm::kMadLen;
/// With no timer due the thread still wakes now and then; nothing depends on it.
constexpr int kIdleWaitMs = 1000;
// How often established connections' QPs are looked at for a transport failure (a peer that
// vanished). Against the ~0.5 s an RC QP's retries take with rdma_cm's defaults, small.
constexpr int kTransportWatchMs = 20;
// Run to completion: when no application thread is inside an ND call, this thread is the only
// one that moves the device (its MADs, and the ACKs and timers of every QP), this often.
constexpr int kDriveTickMs = 1;
// DREQ tries after a transport failure: the peer is most likely gone, so the connection is
// not held in DREQ_SENT for the full CM retry budget.
constexpr uint8_t kDreqRetriesAfterFailure = 2;
/// Linux's default ip_local_port_range, where rdma_cm binds an unbound active side.
constexpr uint16_t kEphemeralFirst = 32768;
constexpr uint16_t kEphemeralLast = 60999;
constexpr unsigned kPollBurst = 32;

/// Comm IDs, TIDs and starting PSNs are what a host off the path would have to guess to forge
/// a MAD or a packet of a connection: from the kernel's CSPRNG (getrandom blocks only until
/// it is seeded, early at boot), never from a generator seeded by the clock.
uint32_t secure_random32() {
  uint32_t v = 0;
  auto* p = reinterpret_cast<uint8_t*>(&v);
  for (size_t got = 0; got < sizeof v;) {
    const ssize_t n = getrandom(p + got, sizeof v - got, 0);
    if (n > 0) {
      got += size_t(n);
    } else if (n < 0 && errno != EINTR) {
      return std::random_device{}();  // no getrandom(2): libstdc++ reads the kernel's pool
    }
  }
  return v;
}

}  // namespace

const char* cm_state_name(CmState s) {
  switch (s) {
    case CmState::kIdle: return "IDLE";
    case CmState::kReqSent: return "REQ_SENT";
    case CmState::kMraReqRcvd: return "MRA_REQ_RCVD";
    case CmState::kReqRcvd: return "REQ_RCVD";
    case CmState::kRepSent: return "REP_SENT";
    case CmState::kMraRepRcvd: return "MRA_REP_RCVD";
    case CmState::kRepRcvd: return "REP_RCVD";
    case CmState::kEstablished: return "ESTABLISHED";
    case CmState::kDreqSent: return "DREQ_SENT";
    case CmState::kDreqRcvd: return "DREQ_RCVD";
    case CmState::kTimewait: return "TIMEWAIT";
  }
  return "?";
}

const char* cm_event_name(CmEventKind k) {
  switch (k) {
    case CmEventKind::kConnectResponse: return "connect_response";
    case CmEventKind::kEstablished: return "established";
    case CmEventKind::kRejected: return "rejected";
    case CmEventKind::kRefused: return "refused";
    case CmEventKind::kTimeout: return "timeout";
    case CmEventKind::kUnreachable: return "unreachable";
    case CmEventKind::kError: return "error";
    case CmEventKind::kDisconnected: return "disconnected";
    case CmEventKind::kDisconnectDone: return "disconnect_done";
  }
  return "?";
}

CmAgent::CmAgent(nic::Device& dev, const glue::Port& port, CmConfig config)
    : dev_(dev), ipv4_(port.ipv4()), ca_guid_(cm_mads::ca_guid(port.mac().addr_bytes)),
      cfg_(std::move(config)) {
  if (cm_mads::mtu_code(cfg_.path_mtu) == 0) cfg_.path_mtu = 1024;
}

CmAgent::~CmAgent() { stop(); }

bool CmAgent::start() {
  if (thread_.joinable()) return true;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pd_ = dev_.alloc_pd();
  send_cq_ = dev_.create_cq(cfg_.send_depth);
  recv_cq_ = dev_.create_cq(cfg_.recv_depth);
  buf_.assign(size_t(cfg_.recv_depth + cfg_.send_depth) * kMad, 0);
  if (wake_fd_ < 0 || !send_cq_ || !recv_cq_ ||
      !dev_.register_mr(pd_, buf_.data(), buf_.size(), nic::kAccessLocalWrite, &mr_)) {
    error_ = "cm agent: no CQs, buffers or eventfd";
    stop();
    return false;
  }
  nic::QpCaps caps;
  caps.type = nic::QpType::kUd;
  caps.gsi = true;
  caps.send_cq = send_cq_;
  caps.recv_cq = recv_cq_;
  caps.max_send_wr = cfg_.send_depth;
  caps.max_recv_wr = cfg_.recv_depth;
  caps.pd = pd_;
  qp1_ = dev_.create_qp(caps);
  nic::QpAttr at;
  at.path_mtu = std::max<uint32_t>(cfg_.path_mtu, kMad);
  if (!qp1_ || !qp1_->modify(nic::QpState::kInit, at) || !qp1_->modify(nic::QpState::kRtr, at) ||
      !qp1_->modify(nic::QpState::kRts, at)) {
    error_ = "cm agent: cannot create QP1 (one GSI QP per device)";
    stop();
    return false;
  }
  for (uint32_t i = 0; i < cfg_.recv_depth; i++) post_recv(i);
  for (uint32_t i = 0; i < cfg_.send_depth; i++) free_send_.push_back(cfg_.recv_depth + i);
  stopping_ = false;
  thread_ = std::thread(&CmAgent::run, this);
  return true;
}

void CmAgent::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    wake();
    thread_.join();
  }
  std::lock_guard lk(mu_);
  if (qp1_) dev_.destroy_qp(qp1_);
  if (mr_.lkey) dev_.deregister_mr(mr_.lkey);
  if (send_cq_) dev_.destroy_cq(send_cq_);
  if (recv_cq_) dev_.destroy_cq(recv_cq_);
  if (wake_fd_ >= 0) close(wake_fd_);
  qp1_ = nullptr;
  mr_ = {};
  send_cq_ = recv_cq_ = nullptr;
  wake_fd_ = -1;
  free_send_.clear();
  conns_.clear();
  by_remote_.clear();
  timers_.clear();
  timewait_.clear();
  finished_.clear();
  watched_.clear();
  for (auto& [port, l] : listeners_) l.queue.clear();
  pending_.clear();
  requests_cv_.notify_all();
}

void CmAgent::wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) {
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
}

// ---- the thread --------------------------------------------------------------------------

void CmAgent::run() {
  pollfd fds[3] = {{recv_cq_->event_fd(), POLLIN, 0}, {send_cq_->event_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const bool drive = dev_.app_driven();
  for (;;) {
    int wait_ms = 0;
    if (drive) dev_.progress();
    {
      std::lock_guard lk(mu_);
      if (stopping_) break;
      drain_recv();
      drain_send();
      fire_timers(Clock::now());
      const bool watching = watch_transport();
      // Arm, then look once more: a completion that landed before arm() would not wake us.
      recv_cq_->arm(false);
      send_cq_->arm(false);
      if (drain_recv() + drain_send() == 0 && pending_.empty()) {
        const auto next = next_deadline();
        const auto now = Clock::now();
        wait_ms = next == Clock::time_point::max()
                      ? kIdleWaitMs
                      : int(std::clamp<int64_t>(
                            std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1, 0,
                            kIdleWaitMs));
        if (watching) wait_ms = std::min(wait_ms, kTransportWatchMs);
        if (drive) wait_ms = std::min(wait_ms, kDriveTickMs);
      }
    }
    deliver();
    if (wait_ms > 0) ::poll(fds, 3, wait_ms);
    uint64_t v;
    for (const pollfd& p : fds) {
      [[maybe_unused]] ssize_t n = read(p.fd, &v, sizeof v);
    }
  }
}

void CmAgent::deliver() {
  std::vector<std::function<void()>> todo;
  {
    std::lock_guard lk(mu_);
    todo.swap(pending_);
  }
  for (auto& f : todo) f();
}

unsigned CmAgent::drain_recv() {
  unsigned total = 0;
  nic::Completion c[kPollBurst];
  for (unsigned n; (n = recv_cq_->poll(c, kPollBurst)) > 0;) {
    total += n;
    for (unsigned i = 0; i < n; i++) {
      const uint32_t slot = uint32_t(c[i].wr_id);
      if (c[i].status == nic::WcStatus::kSuccess) {
        counters_.mads_received++;
        cm::CmMad mad;
        if (cm::decode_cm_mad(buf_.data() + size_t(slot) * kMad, c[i].byte_len, &mad) == cm::CmError::kOk)
          handle(c[i].src_ipv4, mad);
        else
          counters_.bad_mads++;
      }
      if (c[i].status != nic::WcStatus::kWrFlushed) post_recv(slot);
    }
  }
  return total;
}

unsigned CmAgent::drain_send() {
  unsigned total = 0;
  nic::Completion c[kPollBurst];
  for (unsigned n; (n = send_cq_->poll(c, kPollBurst)) > 0;) {
    total += n;
    for (unsigned i = 0; i < n; i++) {
      free_send_.push_back(uint32_t(c[i].wr_id));
      if (c[i].status != nic::WcStatus::kSuccess) on_send_error(CmConnId(c[i].wr_id >> 32));
    }
  }
  return total;
}

void CmAgent::post_recv(uint32_t slot) {
  nic::RecvWr wr{};
  wr.wr_id = slot;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(buf_.data() + size_t(slot) * kMad), kMad, mr_.lkey};
  qp1_->post_recv(wr);
}

void CmAgent::send(uint32_t dest_ipv4, const cm::CmMad& mad, CmConnId owner) {
  std::array<uint8_t, kMad> bytes;
  if (cm::encode_cm_mad(mad, bytes.data(), bytes.size()) != cm::CmError::kOk) return;
  send_raw(dest_ipv4, bytes.data(), owner);
}

void CmAgent::send_raw(uint32_t dest_ipv4, const uint8_t* mad, CmConnId owner) {
  if (cfg_.drop_tx) {
    cm::CmMad m;
    if (cm::decode_cm_mad(mad, kMad, &m) == cm::CmError::kOk && cfg_.drop_tx(m)) {
      counters_.dropped_tx++;
      return;
    }
  }
  if (free_send_.empty() || !qp1_) {
    counters_.dropped_tx++;  // the peer's retransmission, or ours, covers it
    return;
  }
  const uint32_t slot = free_send_.back();
  uint8_t* at = buf_.data() + size_t(slot) * kMad;
  std::memcpy(at, mad, kMad);
  nic::SendWr wr{};
  wr.wr_id = uint64_t(owner) << 32 | slot;
  wr.opcode = nic::WrOpcode::kSend;
  wr.flags = nic::kWrSignaled;  // every slot comes back through a completion
  wr.num_sge = 1;
  wr.ud = {};
  wr.ud.dest_ipv4 = dest_ipv4;
  wr.ud.remote_qpn = cm::kGsiQpn;
  wr.ud.qkey = cm::kGsiQkey;
  wr.sge[0] = {reinterpret_cast<uint64_t>(at), kMad, mr_.lkey};
  if (!qp1_->post_send(wr)) {
    counters_.dropped_tx++;
    return;
  }
  free_send_.pop_back();
  counters_.mads_sent++;
}

// ---- timers --------------------------------------------------------------------------------

void CmAgent::set_deadline(CmConn& c, Clock::time_point t) {
  if (c.timer_armed) timers_.erase(c.timer);
  c.deadline = t;
  c.timer_armed = t != Clock::time_point::max();
  if (c.timer_armed) c.timer = timers_.emplace(t, c.local_id);
}

void CmAgent::arm_timer(CmConn& c, uint32_t timeout_ms, uint8_t retries) {
  c.timeout_ms = timeout_ms;
  c.max_retries = c.retries_left = retries;
  set_deadline(c, Clock::now() + std::chrono::milliseconds(timeout_ms));
}

Clock::time_point CmAgent::next_deadline() const {
  return timers_.empty() ? Clock::time_point::max() : timers_.begin()->first;
}

void CmAgent::fire_timers(Clock::time_point now) {
  // Only the timers that are due: a wake-up costs what it handles, not every connection kept.
  std::vector<CmConnId> due;
  for (auto it = timers_.begin(); it != timers_.end() && it->first <= now; it = timers_.erase(it)) {
    if (CmConn* c = find(it->second)) {
      c->timer_armed = false;
      c->deadline = Clock::time_point::max();
    }
    due.push_back(it->second);
  }
  for (CmConnId id : due)
    if (CmConn* c = find(id)) on_timer(*c, now);
  reap();
}

void CmAgent::on_timer(CmConn& c, Clock::time_point now) {
  const bool waiting = c.state == CmState::kReqSent || c.state == CmState::kMraReqRcvd ||
                       c.state == CmState::kRepSent || c.state == CmState::kMraRepRcvd ||
                       c.state == CmState::kDreqSent;
  if (waiting && c.retries_left > 0) {
    c.retries_left--;
    counters_.retransmits++;
    send_raw(c.peer_ipv4, c.sent.data(), c.local_id);
    set_deadline(c, now + std::chrono::milliseconds(c.timeout_ms));
    return;
  }
  switch (c.state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      // Linux ib_cm gives up silently (IB_CM_REQ_ERROR; rdma_cm: UNREACHABLE, -ETIMEDOUT).
      fail(c, CmEventKind::kTimeout);
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      qp_to_error(c);
      fail(c, CmEventKind::kTimeout);
      break;
    case CmState::kReqRcvd:
      // Nobody answered the request: its sender hears a REJ "timeout" naming our CA (as a side
      // that gives up tells its peer) rather than silence until its own tries run out, and the
      // request stops holding a place in the backlog.
      counters_.requests_expired++;
      reject_conn(c, cm::kRejTimeout, {}, ca_guid_);
      break;
    case CmState::kDreqSent:
      // A peer that vanished: we are disconnected all the same.
      enter_timewait(c);
      event(c, CmEventKind::kDisconnectDone);
      break;
    case CmState::kTimewait:
      finish(c);
      break;
    default:
      break;
  }
}

void CmAgent::finish(CmConn& c) {
  c.state = CmState::kIdle;
  set_deadline(c, Clock::time_point::max());
  unqueue(c);
  leave_timewait(c);
  finished_.push_back(c.local_id);
}

void CmAgent::reap() {
  for (CmConnId id : finished_)
    if (const CmConn* c = find(id); c && c->state == CmState::kIdle) forget(id);
  finished_.clear();
}

void CmAgent::forget(CmConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  CmConn& c = *it->second;
  set_deadline(c, Clock::time_point::max());
  unqueue(c);
  leave_timewait(c);
  auto r = by_remote_.find({c.peer_ipv4, c.remote_id});
  if (r != by_remote_.end() && r->second == c.local_id) by_remote_.erase(r);
  conns_.erase(it);
}

void CmAgent::unqueue(CmConn& c) {
  if (!c.queued) return;
  if (auto l = listeners_.find(c.listen_port); l != listeners_.end()) l->second.queue.erase(c.queue_pos);
  c.queued = false;
}

void CmAgent::leave_timewait(CmConn& c) {
  if (!c.in_timewait_list) return;
  timewait_.erase(c.timewait_pos);
  c.in_timewait_list = false;
}

void CmAgent::watch(CmConn& c) { watched_.insert(c.local_id); }

// ---- helpers -------------------------------------------------------------------------------

uint32_t CmAgent::random32() { return secure_random32(); }

CmConnId CmAgent::new_id() {
  for (;;) {
    const CmConnId id = random32();
    if (id != 0 && !conns_.count(id)) return id;
  }
}

uint16_t CmAgent::pick_port(bool listening) {
  for (;;) {
    const uint16_t p = uint16_t(kEphemeralFirst + random32() % (kEphemeralLast - kEphemeralFirst + 1));
    if (listening && listeners_.count(p)) continue;
    if (!listening && std::any_of(conns_.begin(), conns_.end(), [&](const auto& kv) {
          return kv.second->active && kv.second->local_port == p;
        }))
      continue;
    return p;
  }
}

CmConn* CmAgent::find(CmConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

const CmConn* CmAgent::find(CmConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

void CmAgent::event(CmConn& c, CmEventKind kind, uint16_t reason, std::vector<uint8_t> data) {
  if (!c.cb) return;
  CmEvent ev{kind, c.local_id, reason, std::move(data)};
  pending_.push_back([cb = c.cb, ev = std::move(ev)] { cb(ev); });
}

void CmAgent::fail(CmConn& c, CmEventKind kind, uint16_t reason, std::vector<uint8_t> data) {
  event(c, kind, reason, std::move(data));
  finish(c);
}

// ---- application API -------------------------------------------------------------------

uint16_t CmAgent::listen(uint16_t port, std::function<void(uint16_t)> on_request, size_t backlog) {
  std::lock_guard lk(mu_);
  if (port == 0) port = pick_port(true);
  if (listeners_.count(port)) return 0;
  Listener& l = listeners_[port];
  l.on_request = std::move(on_request);
  l.backlog = backlog;
  return port;
}

void CmAgent::unlisten(uint16_t port) {
  std::lock_guard lk(mu_);
  auto it = listeners_.find(port);
  if (it == listeners_.end()) return;
  const std::list<CmConnId> queued = it->second.queue;
  for (CmConnId id : queued) {
    CmConn* c = find(id);
    if (!c) continue;
    unqueue(*c);
    if (c->state == CmState::kReqRcvd) reject_conn(*c, cm::kRejConsumerDefined, {});
  }
  listeners_.erase(it);
  requests_cv_.notify_all();
  wake();
}

bool CmAgent::get_request(uint16_t port, CmRequest* out, int timeout_ms) {
  std::unique_lock lk(mu_);
  const auto until = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  for (;;) {
    auto it = listeners_.find(port);
    if (it == listeners_.end()) return false;
    while (!it->second.queue.empty()) {
      CmConn* c = find(it->second.queue.front());
      if (!c) {
        it->second.queue.pop_front();
        continue;
      }
      unqueue(*c);  // taken: no longer counts against the backlog
      if (c->state == CmState::kReqRcvd) {
        *out = c->request;
        return true;
      }
    }
    if (requests_cv_.wait_until(lk, until) == std::cv_status::timeout) {
      it = listeners_.find(port);
      if (it == listeners_.end() || it->second.queue.empty()) return false;
    }
  }
}

CmConnId CmAgent::connect(const CmConnectParams& p, CmCallback cb) {
  if (!p.qp || p.dest_ipv4 == 0 || p.dest_port == 0 || p.private_data.size() > kCmConnectDataLen)
    return 0;
  if (p.qp->state() == nic::QpState::kReset && !p.qp->modify(nic::QpState::kInit, {})) return 0;
  if (p.qp->state() != nic::QpState::kInit) return 0;
  std::lock_guard lk(mu_);
  if (!qp1_) return 0;
  auto conn = std::make_unique<CmConn>();
  CmConn& c = *conn;
  c.local_id = new_id();
  c.active = true;
  c.qp = p.qp;
  c.local_qpn = p.qp->qpn();
  c.cb = std::move(cb);
  c.tid = uint64_t(random32()) << 32 | c.local_id;
  c.local_ipv4 = ipv4_;
  c.peer_ipv4 = p.dest_ipv4;
  c.local_port = p.src_port ? p.src_port : pick_port(false);
  c.peer_port = p.dest_port;
  c.rq_psn = random32() & 0xFFFFFF;
  c.mtu = cfg_.path_mtu;
  c.flow_label = cm_mads::flow_label(c.local_port, c.peer_port);
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.ack_timeout = cfg_.ack_timeout;
  c.retry_count = cfg_.retry_count;
  c.defer_rtu = p.defer_rtu;
  // Linux ib_send_cm_req: two packet lifetimes plus the peer's response time, per try.
  arm_timer(c, 2 * cm_mads::to_ms(cfg_.packet_life_time) + cm_mads::to_ms(cfg_.cm_response_timeout),
            cfg_.max_cm_retries);
  c.state = CmState::kReqSent;
  transmit(c, cm_mads::req(c, cfg_, ca_guid_, p.private_data));
  const CmConnId id = c.local_id;
  conns_[id] = std::move(conn);
  wake();
  return id;
}

bool CmAgent::complete_connect(CmConnId id) {
  std::lock_guard lk(mu_);
  CmConn* c = find(id);
  if (!c || c->state != CmState::kRepRcvd) return false;
  establish_active(*c);
  wake();
  return c->state == CmState::kEstablished;
}

bool CmAgent::accept(CmConnId id, const CmAcceptParams& p, CmCallback cb) {
  if (p.private_data.size() > kCmAcceptDataLen || !p.qp) return false;
  std::lock_guard lk(mu_);
  CmConn* c = find(id);
  if (!c || c->active || c->state != CmState::kReqRcvd) return false;
  unqueue(*c);
  c->qp = p.qp;
  c->local_qpn = p.qp->qpn();
  c->cb = std::move(cb);
  c->responder_resources = std::min(p.responder_resources, c->request.initiator_depth);
  c->initiator_depth = std::min(p.initiator_depth, c->request.responder_resources);
  // rdma_accept: the QP reaches RTS before the REP leaves, so the peer may send at once.
  if (!qp_to_rtr(*c) || !qp_to_rts(*c)) {
    reject_conn(*c, cm::kRejNoResources, {});
    c->cb = nullptr;
    wake();
    return false;
  }
  arm_timer(*c, cm_mads::to_ms(c->peer_cm_response_timeout), c->peer_max_cm_retries);
  c->state = CmState::kRepSent;
  transmit(*c, cm_mads::rep(*c, cfg_, ca_guid_, p.private_data));
  wake();
  return true;
}

bool CmAgent::reject(CmConnId id, std::span<const uint8_t> private_data) {
  if (private_data.size() > kCmRejectDataLen) return false;
  std::lock_guard lk(mu_);
  CmConn* c = find(id);
  if (!c) return false;
  if (c->active ? c->state != CmState::kRepRcvd : c->state != CmState::kReqRcvd) return false;
  // ib_send_cm_rej in REP_RCVD: the QP reached RTR with the REP's parameters and must not be
  // left able to receive from a peer that will never be connected.
  if (c->active) qp_to_error(*c);
  reject_conn(*c, cm::kRejConsumerDefined, private_data);
  wake();
  return true;
}

bool CmAgent::watch_transport() {
  bool any = false;
  for (auto it = watched_.begin(); it != watched_.end();) {
    CmConn* c = find(*it);
    if (!c || c->state != CmState::kEstablished || !c->qp) {
      it = watched_.erase(it);
      continue;
    }
    ++it;
    any = true;
    if (c->qp->state() != nic::QpState::kError) continue;
    // The RC transport gave up on the peer (retries spent, a fatal NAK, a local Flush): the
    // connection cannot carry data any more. The application hears it as a disconnect, and
    // the peer, if it is still there, through a DREQ. The QP is closed for good: later posts
    // are refused as on any ended connection.
    qp_to_error(*c);
    arm_timer(*c, c->timeout_ms, kDreqRetriesAfterFailure);
    c->state = CmState::kDreqSent;
    transmit(*c, cm_mads::dreq(*c));
    event(*c, CmEventKind::kDisconnected);
  }
  return any;
}

bool CmAgent::disconnect(CmConnId id) {
  std::lock_guard lk(mu_);
  CmConn* c = find(id);
  if (!c) return false;
  switch (c->state) {
    case CmState::kRepRcvd:
      // Our RTU never left (ND: Connect done, no CompleteConnect): as Linux cm_destroy_id in
      // REP_RCVD, a consumer REJ, so that the peer's pending accept fails at once.
      qp_to_error(*c);
      reject_conn(*c, cm::kRejConsumerDefined, {});
      event(*c, CmEventKind::kDisconnectDone);
      break;
    case CmState::kEstablished:
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      // rdma_disconnect: the QP goes to ERROR first (its work flushes), then the DREQ.
      qp_to_error(*c);
      arm_timer(*c, c->timeout_ms, c->max_retries);
      c->state = CmState::kDreqSent;
      transmit(*c, cm_mads::dreq(*c));
      break;
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      // Cancelled before an answer: as ib_destroy_cm_id in REQ_SENT, a REJ "timeout" naming us.
      counters_.rejects_sent++;
      send(c->peer_ipv4, cm_mads::rej(c->tid, c->local_id, 0, cm::kMsgReq, cm::kRejTimeout, {}, ca_guid_),
           c->local_id);
      fail(*c, CmEventKind::kDisconnectDone);
      break;
    case CmState::kReqRcvd:
      reject_conn(*c, cm::kRejConsumerDefined, {});
      break;
    case CmState::kTimewait:
    case CmState::kDreqRcvd:
      event(*c, CmEventKind::kDisconnectDone);  // the peer was first: nothing left to do
      break;
    case CmState::kDreqSent:
      break;  // already under way
    case CmState::kIdle:
      return false;
  }
  wake();
  return true;
}

void CmAgent::detach(CmConnId id) {
  std::lock_guard lk(mu_);
  if (CmConn* c = find(id)) {
    c->cb = nullptr;
    c->qp = nullptr;
  }
}

uint16_t CmAgent::local_port(CmConnId id) const {
  std::lock_guard lk(mu_);
  const CmConn* c = find(id);
  return c ? c->local_port : 0;
}

CmState CmAgent::state(CmConnId id) const {
  std::lock_guard lk(mu_);
  const CmConn* c = find(id);
  return c ? c->state : CmState::kIdle;
}

bool CmAgent::peer_private_data(CmConnId id, std::vector<uint8_t>* out) const {
  std::lock_guard lk(mu_);
  const CmConn* c = find(id);
  if (!c) return false;
  *out = c->peer_data;
  return true;
}

CmAgent::Counters CmAgent::counters() const {
  std::lock_guard lk(mu_);
  return counters_;
}

size_t CmAgent::connection_count() const {
  std::lock_guard lk(mu_);
  return conns_.size();
}

size_t CmAgent::pending_requests(uint16_t port) const {
  std::lock_guard lk(mu_);
  auto it = listeners_.find(port);
  return it == listeners_.end() ? 0 : it->second.queue.size();
}

}  // namespace ndnic::nd
