// INDConnector and INDListen over the CM agent: Connect/CompleteConnect, Listen/
// GetConnectionRequest/Accept/Reject, GetConnectionData, addresses, NotifyDisconnect and
// Disconnect, each finishing through the caller's OVERLAPPED (ND_PENDING from the call).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

#include "cm/agent.h"
#include "nd_frontend/objects.h"
#include "nd_frontend/overlapped.h"
#include "nd_frontend/status.h"
#include "ndnic/port.h"

namespace ndnic::nd {
namespace {

HRESULT connect_status(const cm::Event& e) {
  switch (e.kind) {
    case cm::EventKind::kConnectResponse:
    case cm::EventKind::kEstablished:
      return ND_SUCCESS;
    case cm::EventKind::kRejected:
    case cm::EventKind::kRefused:  // nobody listens there (REJ 8), or any other refusal
      return ND_CONNECTION_REFUSED;
    case cm::EventKind::kTimeout:
      return ND_TIMEOUT;
    case cm::EventKind::kUnreachable:
      return ND_HOST_UNREACHABLE;
    default:
      return ND_CONNECTION_ABORTED;
  }
}

sockaddr_in to_sockaddr(uint32_t ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ip);
  sa.sin_port = htons(port);
  return sa;
}

HRESULT put_address(const sockaddr_in& sa, sockaddr* out, SIZE_T* len) {
  if (!len) return ND_INVALID_PARAMETER;
  if (!out || *len < sizeof sa) {
    *len = sizeof sa;
    return ND_BUFFER_OVERFLOW;
  }
  std::memcpy(out, &sa, sizeof sa);
  *len = sizeof sa;
  return ND_SUCCESS;
}

class NdConnector final : public Unknown<INDConnector> {
 public:
  explicit NdConnector(NdAdapter* adapter) : adapter_(adapter) {
    adapter_->AddRef();
    link_->self = this;
  }

  HRESULT CancelOverlappedRequests() override {
    std::lock_guard<std::mutex> g(mu_);
    // Canceling a connection attempt abandons it, as closing the request's handle would:
    // the peer hears a REJ (or DREQ) and the connector may Connect again.
    if (connect_ov_) {
      agent().disconnect(conn_);
      forget_connection();
      state_ = State::kFailed;
      finish(&connect_ov_, ND_CANCELED);
    }
    if (complete_ov_) {
      agent().disconnect(conn_);
      state_ = State::kDisconnecting;
      finish(&complete_ov_, ND_CANCELED);
    }
    notified(ND_CANCELED);
    finish(&disconnect_ov_, ND_CANCELED);  // the DREQ still goes; only the wait is canceled
    return ND_SUCCESS;
  }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) override {
    return ov ? adapter_->overlapped_wait(ov, bytes, wait) : ND_INVALID_PARAMETER;
  }

  HRESULT CreateEndpoint(INDCompletionQueue* in, INDCompletionQueue* out, SIZE_T n_in, SIZE_T n_out,
                         SIZE_T sge_in, SIZE_T sge_out, SIZE_T read_in, SIZE_T read_out, SIZE_T* max_inline,
                         INDEndpoint** ep) override {
    if (!in || !out || !ep) return ND_INVALID_PARAMETER;
    if (n_in == 0 || n_out == 0 || n_in > 4096 || n_out > 4096) return ND_INVALID_BUFFER_SIZE;
    if (sge_in > nic::kMaxSge || sge_out > nic::kMaxSge) return ND_INVALID_PARAMETER_MIX;
    if (read_in > 16 || read_out > 16) return ND_INVALID_PARAMETER_MIX;
    auto* cin = static_cast<NdCq*>(in);
    auto* cout = static_cast<NdCq*>(out);
    nic::QpCaps caps;
    caps.send_cq = cout->cq();
    caps.recv_cq = cin->cq();
    caps.pd = adapter_->pd();
    caps.shard = cout->shard();
    caps.max_send_wr = uint32_t(n_out);
    caps.max_recv_wr = uint32_t(n_in);
    caps.max_send_sge = uint32_t(sge_out ? sge_out : 1);
    caps.max_recv_sge = uint32_t(sge_in ? sge_in : 1);
    nic::Qp* qp = adapter_->dev()->create_qp(caps);
    if (!qp) return ND_INSUFFICIENT_RESOURCES;
    if (!qp->modify(nic::QpState::kInit, {})) {
      adapter_->dev()->destroy_qp(qp);
      return ND_INSUFFICIENT_RESOURCES;
    }
    if (max_inline) *max_inline = nic::kMaxInline;
    *ep = new NdEndpoint(adapter_, qp, cin, cout, {n_in, n_out, sge_in, sge_out, read_in, read_out});
    return ND_SUCCESS;
  }

  HRESULT Connect(INDEndpoint* pep, const sockaddr* addr, SIZE_T len, INT, USHORT local_port, const void* data,
                  SIZE_T data_len, OVERLAPPED* ov) override {
    if (!pep || !ov) return ND_INVALID_PARAMETER;
    if (!addr || addr->sa_family != AF_INET || len < sizeof(sockaddr_in)) return ND_INVALID_ADDRESS;
    const auto* sa = reinterpret_cast<const sockaddr_in*>(addr);
    const uint32_t dest = ntohl(sa->sin_addr.s_addr);
    // The SDK's ndmemorytest (NdInvalidIP) expects STATUS_BAD_NETWORK_NAME for the wildcard.
    if (dest == INADDR_ANY) return STATUS_BAD_NETWORK_NAME;
    // Nothing can listen at the broadcast or multicast addresses, nor on port 0.
    if (dest == INADDR_BROADCAST || IN_MULTICAST(dest) || sa->sin_port == 0) return ND_INVALID_ADDRESS;
    if (data_len > cm::kConnectDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    // A failed attempt (refused, timed out, canceled) may be retried on the same connector,
    // as the SDK's ndconn does after ND_TIMEOUT.
    if (state_ != State::kIdle && !(state_ == State::kFailed && !passive_)) return ND_CONNECTION_ACTIVE;
    auto* ep = static_cast<NdEndpoint*>(pep);
    cm::ConnectParams p;
    p.qp = ep->qp();
    p.dest_ipv4 = dest;
    p.dest_port = ntohs(sa->sin_port);
    p.src_port = ntohs(local_port);
    p.private_data = {static_cast<const uint8_t*>(data), data_len};
    p.responder_resources = uint8_t(ep->limits().inbound_read_limit);
    p.initiator_depth = uint8_t(ep->limits().outbound_read_limit);
    p.defer_rtu = true;  // Connect finishes on the peer's answer; CompleteConnect sends the RTU
    forget_connection();
    hold(ep);
    // Refused locally: the endpoint's QP is not fresh (connected, or flushed into ERROR).
    const cm::ConnId id = agent().connect(p, callback());
    if (id == 0) return ND_INVALID_DEVICE_STATE;
    conn_ = id;
    state_ = State::kConnecting;
    peer_data_.clear();
    have_data_ = false;
    disconnected_ = false;
    peer_ = to_sockaddr(p.dest_ipv4, p.dest_port);
    local_ = to_sockaddr(adapter_->port()->ipv4(), agent().local_port(id));
    overlapped_start(ov);  // the answer cannot overtake us: its callback waits for mu_
    connect_ov_ = ov;
    return ND_PENDING;
  }

  HRESULT CompleteConnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    if (state_ != State::kResponded) return ND_CONNECTION_INVALID;
    if (!agent().complete_connect(conn_)) return ND_CONNECTION_ABORTED;  // the peer gave up meanwhile
    state_ = State::kCompleting;
    overlapped_start(ov);
    complete_ov_ = ov;
    return ND_PENDING;
  }

  HRESULT Accept(INDEndpoint* pep, const void* data, SIZE_T data_len, OVERLAPPED* ov) override {
    if (!pep || !ov) return ND_INVALID_PARAMETER;
    // Checked before anything else: the request stays acceptable after this error.
    if (data_len > cm::kAcceptDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    if (state_ != State::kRequested) return ND_CONNECTION_INVALID;
    auto* ep = static_cast<NdEndpoint*>(pep);
    cm::AcceptParams p;
    p.qp = ep->qp();
    p.private_data = {static_cast<const uint8_t*>(data), data_len};
    p.responder_resources = uint8_t(ep->limits().inbound_read_limit);
    p.initiator_depth = uint8_t(ep->limits().outbound_read_limit);
    hold(ep);
    if (!agent().accept(conn_, p, callback())) {
      // The connecting peer gave up (its REJ came first), or the QP refused the transition.
      state_ = State::kFailed;
      return ND_CONNECTION_ABORTED;
    }
    state_ = State::kAccepting;
    overlapped_start(ov);
    complete_ov_ = ov;
    return ND_PENDING;
  }

  HRESULT Reject(const void* data, SIZE_T data_len) override {
    if (data_len > cm::kRejectDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    // The passive side before Accept, or the active side after Connect instead of
    // CompleteConnect (the v1 Reject page: either peer may reject).
    if (state_ != State::kRequested && state_ != State::kResponded) return ND_CONNECTION_INVALID;
    const bool sent = agent().reject(conn_, {static_cast<const uint8_t*>(data), data_len});
    state_ = State::kFailed;
    return sent ? ND_SUCCESS : ND_CONNECTION_ABORTED;  // not sent: the peer gave up first
  }

  HRESULT GetConnectionData(SIZE_T* in_limit, SIZE_T* out_limit, void* data, SIZE_T* data_len) override {
    std::lock_guard<std::mutex> g(mu_);
    // The peer's REQ, REP or REJ: a rejected Connect can still read why.
    if (!have_data_) return ND_CONNECTION_INVALID;
    // The peer's view: what it lets us read (its responder resources) and what it will read.
    if (in_limit) *in_limit = peer_initiator_depth_;
    if (out_limit) *out_limit = peer_responder_resources_;
    if (data_len) {
      // Too small a buffer still gets what fits (the SDK's ndmpic uses it), and the full length.
      const SIZE_T have = peer_data_.size();
      const SIZE_T room = data ? *data_len : 0;
      if (room && have) std::memcpy(data, peer_data_.data(), std::min(room, have));
      *data_len = have;
      if (room < have) return ND_BUFFER_OVERFLOW;
    }
    return ND_SUCCESS;
  }

  HRESULT GetLocalAddress(sockaddr* out, SIZE_T* len) override {
    std::lock_guard<std::mutex> g(mu_);
    if (state_ == State::kIdle) return ND_CONNECTION_INVALID;
    return put_address(local_, out, len);
  }
  HRESULT GetPeerAddress(sockaddr* out, SIZE_T* len) override {
    std::lock_guard<std::mutex> g(mu_);
    if (state_ == State::kIdle) return ND_CONNECTION_INVALID;
    return put_address(peer_, out, len);
  }

  HRESULT NotifyDisconnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    switch (state_) {
      case State::kResponded:
      case State::kCompleting:
      case State::kAccepting:
      case State::kConnected:
      case State::kDisconnecting:
        if (!disconnected_) {
          overlapped_start(ov);
          notify_ovs_.push_back(ov);
          return ND_PENDING;
        }
        [[fallthrough]];
      case State::kDisconnected:
        overlapped_start(ov);
        overlapped_complete(ov, ND_SUCCESS);
        return ND_SUCCESS;
      default:
        return ND_CONNECTION_INVALID;
    }
  }

  HRESULT Disconnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    switch (state_) {
      case State::kConnecting:
        // Not answered yet: the attempt is abandoned (REJ to the peer).
        agent().disconnect(conn_);
        forget_connection();
        state_ = State::kFailed;
        finish(&connect_ov_, ND_CONNECTION_ABORTED);
        break;
      case State::kRequested:
        agent().disconnect(conn_);  // a consumer REJ, as Reject
        state_ = State::kFailed;
        break;
      case State::kResponded:
      case State::kCompleting:
      case State::kAccepting:
      case State::kConnected:
        if (disconnected_) {  // the peer went first: our QP is already in ERROR
          state_ = State::kDisconnected;
          break;
        }
        state_ = State::kDisconnecting;
        if (!agent().disconnect(conn_)) {
          state_ = State::kDisconnected;
          break;
        }
        overlapped_start(ov);
        disconnect_ov_ = ov;
        return ND_PENDING;
      case State::kDisconnected:
        break;
      default:  // never connected, failed, or a Disconnect already under way
        return ND_CONNECTION_INVALID;
    }
    overlapped_start(ov);
    overlapped_complete(ov, ND_SUCCESS);
    return ND_SUCCESS;
  }

  /// The listener hands over a request (passive side).
  void take_request(const cm::Request& r) {
    std::lock_guard<std::mutex> g(mu_);
    forget_connection();
    conn_ = r.conn;
    state_ = State::kRequested;
    passive_ = true;
    disconnected_ = false;
    peer_data_ = r.private_data;
    have_data_ = true;
    peer_initiator_depth_ = r.initiator_depth;
    peer_responder_resources_ = r.responder_resources;
    peer_ = to_sockaddr(r.peer_ipv4, r.peer_port);
    local_ = to_sockaddr(r.local_ipv4, r.listen_port);
  }

 protected:
  ~NdConnector() override {
    {
      // From here on no callback reaches us; one running now finishes first.
      std::lock_guard<std::mutex> g(link_->mu);
      link_->self = nullptr;
    }
    std::lock_guard<std::mutex> g(mu_);
    // The last Release closes the connector as closing its handle would on Windows: a
    // connection still being made is refused (the peer's Accept fails at once, never hangs),
    // an established one is disconnected, and pending requests complete as canceled.
    switch (state_) {
      case State::kConnecting:
      case State::kResponded:
      case State::kCompleting:
      case State::kRequested:
      case State::kAccepting:
      case State::kConnected:
        if (!disconnected_) agent().disconnect(conn_);
        break;
      default:
        break;
    }
    forget_connection();
    for (OVERLAPPED** ov : {&connect_ov_, &complete_ov_, &disconnect_ov_}) finish(ov, ND_CANCELED);
    notified(ND_CANCELED);
    if (ep_) ep_->Release();
    adapter_->Release();
  }
  bool implements(REFIID riid) const override { return riid == IID_INDConnector || riid == IID_INDOverlapped; }

 private:
  enum class State : uint8_t {
    kIdle,           ///< fresh
    kConnecting,     ///< active: REQ out, Connect pending
    kResponded,      ///< active: REP in (Connect done); CompleteConnect or Reject next
    kCompleting,     ///< active: RTU out, CompleteConnect pending
    kRequested,      ///< passive: a request handed over; Accept or Reject next
    kAccepting,      ///< passive: REP out, Accept pending until the RTU
    kConnected,
    kDisconnecting,  ///< our DREQ out (or the connection aborted), waiting for its end
    kDisconnected,
    kFailed,         ///< the attempt ended without a connection (refused, rejected, timed out)
  };

  /// Callbacks hold the link, not a reference: the application's last Release must reach the
  /// destructor even while the agent still knows the connection.
  struct Link {
    std::mutex mu;
    NdConnector* self = nullptr;
  };

  cm::Agent& agent() { return *adapter_->cm(); }

  cm::Callback callback() {
    return [link = link_](const cm::Event& e) {
      std::lock_guard<std::mutex> g(link->mu);
      if (link->self) link->self->on_event(e);
    };
  }

  /// Keeps the endpoint (its QP) alive while the agent may still move it (caller holds mu_;
  /// any connection on the previous one is forgotten already).
  void hold(NdEndpoint* ep) {
    if (ep == ep_) return;
    if (ep_) ep_->Release();
    ep->AddRef();
    ep_ = ep;
  }

  /// The agent lets go of our QP and callback; the connection itself runs on (caller holds mu_).
  void forget_connection() {
    if (conn_) agent().detach(conn_);
    conn_ = 0;
  }

  void on_event(const cm::Event& e) {
    std::lock_guard<std::mutex> g(mu_);
    if (e.conn != conn_) return;  // an attempt we abandoned
    switch (e.kind) {
      case cm::EventKind::kConnectResponse:
        if (state_ != State::kConnecting) break;
        state_ = State::kResponded;
        peer_data_ = e.private_data;
        have_data_ = true;
        finish(&connect_ov_, ND_SUCCESS);
        break;
      case cm::EventKind::kEstablished:
        if (state_ == State::kCompleting || state_ == State::kAccepting) state_ = State::kConnected;
        finish(&complete_ov_, ND_SUCCESS);
        break;
      case cm::EventKind::kDisconnected:
      case cm::EventKind::kDisconnectDone:
        disconnected_ = true;
        if (state_ != State::kFailed) state_ = State::kDisconnected;
        // A connection that ends before it was up fails the request still waiting for it.
        finish(&connect_ov_, ND_CONNECTION_ABORTED);
        finish(&complete_ov_, ND_CONNECTION_ABORTED);
        notified(ND_SUCCESS);
        if (e.kind == cm::EventKind::kDisconnectDone) finish(&disconnect_ov_, ND_SUCCESS);
        break;
      default: {  // refused, rejected, timeout, unreachable, error: the attempt is over
        if (e.kind == cm::EventKind::kRejected || e.kind == cm::EventKind::kRefused) {
          peer_data_ = e.private_data;
          have_data_ = true;
        }
        HRESULT hr = connect_status(e);
        // A passive side whose REP went unanswered: the connecting peer is gone. ND_TIMEOUT
        // has success severity, and an Accept must not look as if it had succeeded.
        if (passive_ && hr == ND_TIMEOUT) hr = ND_CONNECTION_ABORTED;
        state_ = State::kFailed;
        finish(&connect_ov_, hr);
        finish(&complete_ov_, hr);
        notified(ND_SUCCESS);
        break;
      }
    }
  }

  static void finish(OVERLAPPED** ov, HRESULT hr) {
    if (*ov) overlapped_complete(*ov, hr);
    *ov = nullptr;
  }
  /// Completes every pending NotifyDisconnect (caller holds mu_).
  void notified(HRESULT hr) {
    for (OVERLAPPED* ov : notify_ovs_) overlapped_complete(ov, hr);
    notify_ovs_.clear();
  }

  NdAdapter* adapter_;
  std::shared_ptr<Link> link_ = std::make_shared<Link>();
  std::mutex mu_;
  State state_ = State::kIdle;
  cm::ConnId conn_ = 0;
  NdEndpoint* ep_ = nullptr;  ///< the endpoint of our latest Connect or Accept (a reference)
  bool passive_ = false;
  bool disconnected_ = false;  ///< the connection is over (either side ended it)
  bool have_data_ = false;     ///< peer_data_ holds what the peer sent
  std::vector<uint8_t> peer_data_;
  SIZE_T peer_initiator_depth_ = 0, peer_responder_resources_ = 0;
  sockaddr_in local_{}, peer_{};
  OVERLAPPED* connect_ov_ = nullptr;
  OVERLAPPED* complete_ov_ = nullptr;
  std::vector<OVERLAPPED*> notify_ovs_;  ///< NotifyDisconnect requests: all end together
  OVERLAPPED* disconnect_ov_ = nullptr;
};

class NdListen final : public Unknown<INDListen> {
 public:
  /// The agent's request callback holds this, not the listener: a request queued just as the
  /// listener goes away must not reach a deleted listener.
  struct Link {
    std::mutex mu;
    NdListen* self = nullptr;
  };

  explicit NdListen(NdAdapter* adapter) : adapter_(adapter) {
    adapter_->AddRef();
    link_->self = this;
  }
  void set_port(uint16_t port) { port_.store(port, std::memory_order_release); }
  std::shared_ptr<Link> link() const { return link_; }

  HRESULT CancelOverlappedRequests() override {
    std::deque<std::pair<NdConnector*, OVERLAPPED*>> waiting;
    {
      std::lock_guard<std::mutex> g(mu_);
      waiting.swap(waiting_);
    }
    for (auto& [c, ov] : waiting) {
      overlapped_complete(ov, ND_CANCELED);
      c->Release();
    }
    return ND_SUCCESS;
  }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) override {
    return ov ? adapter_->overlapped_wait(ov, bytes, wait) : ND_INVALID_PARAMETER;
  }

  HRESULT GetConnectionRequest(INDConnector* pc, OVERLAPPED* ov) override {
    if (!pc || !ov) return ND_INVALID_PARAMETER;
    auto* c = static_cast<NdConnector*>(pc);
    c->AddRef();
    overlapped_start(ov);
    {
      std::lock_guard<std::mutex> g(mu_);
      waiting_.push_back({c, ov});
    }
    match();
    return ND_PENDING;
  }

  /// Pairs queued requests with waiting GetConnectionRequest calls (agent thread or caller).
  void match() {
    for (;;) {
      std::pair<NdConnector*, OVERLAPPED*> w;
      cm::Request r;
      {
        std::lock_guard<std::mutex> g(mu_);
        const uint16_t port = port_.load(std::memory_order_acquire);
        if (waiting_.empty() || port == 0 || !adapter_->cm()->get_request(port, &r, 0)) return;
        w = waiting_.front();
        waiting_.pop_front();
      }
      w.first->take_request(r);
      overlapped_complete(w.second, ND_SUCCESS);
      w.first->Release();
    }
  }

 protected:
  ~NdListen() override {
    {
      std::lock_guard<std::mutex> g(link_->mu);
      link_->self = nullptr;
    }
    adapter_->cm()->unlisten(port_.load());
    CancelOverlappedRequests();
    adapter_->Release();
  }
  bool implements(REFIID riid) const override { return riid == IID_INDListen || riid == IID_INDOverlapped; }

 private:
  NdAdapter* adapter_;
  std::shared_ptr<Link> link_ = std::make_shared<Link>();
  std::atomic<uint16_t> port_{0};  ///< 0 until listen() has answered
  std::mutex mu_;
  std::deque<std::pair<NdConnector*, OVERLAPPED*>> waiting_;
};

}  // namespace

HRESULT NdAdapter::CreateConnector(INDConnector** out) {
  if (!out) return ND_INVALID_PARAMETER;
  *out = new NdConnector(this);
  return ND_SUCCESS;
}

HRESULT NdAdapter::Listen(SIZE_T backlog, INT, USHORT port, USHORT* assigned, INDListen** out) {
  if (!out) return ND_INVALID_PARAMETER;
  auto* l = new NdListen(this);
  // A request that comes before set_port() stays in the agent's queue: the next
  // GetConnectionRequest (or request) matches it. The backlog counts the requests queued
  // there, not yet handed to a GetConnectionRequest (ND v1: 0 means no limit).
  const auto on_request = [link = l->link()](uint16_t) {
    std::lock_guard<std::mutex> g(link->mu);
    if (link->self) link->self->match();
  };
  const uint16_t got = cm()->listen(ntohs(port), on_request, size_t(backlog));
  if (got == 0) {
    l->Release();
    return ND_ADDRESS_ALREADY_EXISTS;
  }
  l->set_port(got);
  if (assigned) *assigned = htons(got);
  *out = l;
  return ND_SUCCESS;
}

}  // namespace ndnic::nd
