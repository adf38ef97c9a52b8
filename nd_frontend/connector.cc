// INDConnector and INDListen over the CM agent: Connect/CompleteConnect, Listen/
// GetConnectionRequest/Accept/Reject, GetConnectionData, addresses, NotifyDisconnect and
// Disconnect, each finishing through the caller's OVERLAPPED (ND_PENDING from the call).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

#include "nd_frontend/cm_agent.h"
#include "nd_frontend/objects.h"
#include "nd_frontend/overlapped.h"
#include "nd_frontend/testing.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::nd {
namespace {

HRESULT connect_status(const CmEvent& e) {
  switch (e.kind) {
    case CmEventKind::kConnectResponse:
    case CmEventKind::kEstablished:
      return ND_SUCCESS;
    case CmEventKind::kRejected:
    case CmEventKind::kRefused:  // nobody listens there (REJ 8), or any other refusal
      return ND_CONNECTION_REFUSED;
    case CmEventKind::kTimeout:
      return ND_TIMEOUT;
    case CmEventKind::kUnreachable:
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
  explicit NdConnector(NdAdapter* adapter) : adapter_(adapter) { adapter_->AddRef(); }

  HRESULT CancelOverlappedRequests() override { return ND_SUCCESS; }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) override {
    return ov ? overlapped_result(ov, bytes, wait) : ND_INVALID_PARAMETER;
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
    if (data_len > kCmConnectDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    if (conn_) return ND_CONNECTION_ACTIVE;
    auto* ep = static_cast<NdEndpoint*>(pep);
    const auto* sa = reinterpret_cast<const sockaddr_in*>(addr);
    CmConnectParams p;
    p.qp = ep->qp();
    p.dest_ipv4 = ntohl(sa->sin_addr.s_addr);
    p.dest_port = ntohs(sa->sin_port);
    p.src_port = ntohs(local_port);
    p.private_data = {static_cast<const uint8_t*>(data), data_len};
    p.responder_resources = uint8_t(ep->limits().inbound_read_limit);
    p.initiator_depth = uint8_t(ep->limits().outbound_read_limit);
    p.defer_rtu = true;  // Connect finishes on the peer's answer; CompleteConnect sends the RTU
    peer_ = to_sockaddr(p.dest_ipv4, p.dest_port);
    overlapped_start(ov);
    connect_ov_ = ov;
    AddRef();  // the agent's callbacks keep us alive until the connection is over
    conn_ = agent().connect(p, [this](const CmEvent& e) { on_event(e); });
    if (!conn_) {
      connect_ov_ = nullptr;
      Release();
      return ND_INVALID_PARAMETER;
    }
    local_ = to_sockaddr(adapter_->port()->ipv4(), p.src_port);
    return ND_PENDING;
  }

  HRESULT CompleteConnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_ || !responded_) return ND_CONNECTION_INVALID;
    overlapped_start(ov);
    complete_ov_ = ov;
    if (!agent().complete_connect(conn_)) {
      complete_ov_ = nullptr;
      return ND_CONNECTION_ABORTED;
    }
    return ND_PENDING;
  }

  HRESULT Accept(INDEndpoint* pep, const void* data, SIZE_T data_len, OVERLAPPED* ov) override {
    if (!pep || !ov) return ND_INVALID_PARAMETER;
    if (data_len > kCmAcceptDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_ || !passive_) return ND_CONNECTION_INVALID;
    auto* ep = static_cast<NdEndpoint*>(pep);
    CmAcceptParams p;
    p.qp = ep->qp();
    p.private_data = {static_cast<const uint8_t*>(data), data_len};
    p.responder_resources = uint8_t(ep->limits().inbound_read_limit);
    p.initiator_depth = uint8_t(ep->limits().outbound_read_limit);
    overlapped_start(ov);
    complete_ov_ = ov;
    AddRef();
    if (!agent().accept(conn_, p, [this](const CmEvent& e) { on_event(e); })) {
      complete_ov_ = nullptr;
      Release();
      return ND_CONNECTION_ABORTED;
    }
    return ND_PENDING;
  }

  HRESULT Reject(const void* data, SIZE_T data_len) override {
    if (data_len > kCmRejectDataLen || (data_len && !data)) return ND_INVALID_BUFFER_SIZE;
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_ || !passive_) return ND_CONNECTION_INVALID;
    agent().reject(conn_, {static_cast<const uint8_t*>(data), data_len});
    conn_ = 0;
    return ND_SUCCESS;
  }

  HRESULT GetConnectionData(SIZE_T* in_limit, SIZE_T* out_limit, void* data, SIZE_T* data_len) override {
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_) return ND_CONNECTION_INVALID;
    // The peer's view: what it lets us read (its responder resources) and what it will read.
    if (in_limit) *in_limit = peer_initiator_depth_;
    if (out_limit) *out_limit = peer_responder_resources_;
    if (data_len) {
      const SIZE_T have = peer_data_.size();
      if (*data_len < have || (have && !data)) {
        *data_len = have;
        return ND_BUFFER_OVERFLOW;
      }
      if (have) std::memcpy(data, peer_data_.data(), have);
      *data_len = have;
    }
    return ND_SUCCESS;
  }

  HRESULT GetLocalAddress(sockaddr* out, SIZE_T* len) override {
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_) return ND_CONNECTION_INVALID;
    return put_address(local_, out, len);
  }
  HRESULT GetPeerAddress(sockaddr* out, SIZE_T* len) override {
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_) return ND_CONNECTION_INVALID;
    return put_address(peer_, out, len);
  }

  HRESULT NotifyDisconnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_) return ND_CONNECTION_INVALID;
    overlapped_start(ov);
    if (disconnected_) {
      overlapped_complete(ov, ND_SUCCESS);
      return ND_SUCCESS;
    }
    notify_ov_ = ov;
    return ND_PENDING;
  }

  HRESULT Disconnect(OVERLAPPED* ov) override {
    if (!ov) return ND_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(mu_);
    if (!conn_) return ND_CONNECTION_INVALID;
    overlapped_start(ov);
    if (disconnected_) {  // the peer went first: our QP is already in ERROR
      overlapped_complete(ov, ND_SUCCESS);
      return ND_SUCCESS;
    }
    disconnect_ov_ = ov;
    if (!agent().disconnect(conn_)) {
      disconnect_ov_ = nullptr;
      overlapped_complete(ov, ND_SUCCESS);
      return ND_SUCCESS;
    }
    return ND_PENDING;
  }

  /// The listener hands over a request (passive side).
  void take_request(const CmRequest& r) {
    std::lock_guard<std::mutex> g(mu_);
    conn_ = r.conn;
    passive_ = true;
    peer_data_ = r.private_data;
    peer_initiator_depth_ = r.initiator_depth;
    peer_responder_resources_ = r.responder_resources;
    peer_ = to_sockaddr(r.peer_ipv4, r.peer_port);
    local_ = to_sockaddr(r.local_ipv4, r.listen_port);
  }

 protected:
  ~NdConnector() override {
    if (conn_ && !disconnected_) agent().disconnect(conn_);
    adapter_->Release();
  }
  bool implements(REFIID riid) const override { return riid == IID_INDConnector || riid == IID_INDOverlapped; }

 private:
  CmAgent& agent() { return *adapter_->cm(); }

  void on_event(const CmEvent& e) {
    bool release = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      switch (e.kind) {
        case CmEventKind::kConnectResponse:
          responded_ = true;
          peer_data_ = e.private_data;
          finish(&connect_ov_, ND_SUCCESS);
          break;
        case CmEventKind::kEstablished:
          finish(&complete_ov_, ND_SUCCESS);
          break;
        case CmEventKind::kDisconnected:
          disconnected_ = true;
          finish(&notify_ov_, ND_SUCCESS);
          break;
        case CmEventKind::kDisconnectDone:
          disconnected_ = true;
          finish(&disconnect_ov_, ND_SUCCESS);
          finish(&notify_ov_, ND_SUCCESS);
          release = true;  // the connection is over: no more callbacks
          break;
        default:  // refused, rejected, timeout, unreachable, error: the attempt is over
          if (e.kind == CmEventKind::kRejected) peer_data_ = e.private_data;
          finish(&connect_ov_, connect_status(e));
          finish(&complete_ov_, connect_status(e));
          conn_ = 0;
          release = true;
          break;
      }
    }
    if (release) Release();
  }

  static void finish(OVERLAPPED** ov, HRESULT hr) {
    if (*ov) overlapped_complete(*ov, hr);
    *ov = nullptr;
  }

  NdAdapter* adapter_;
  std::mutex mu_;
  CmConnId conn_ = 0;
  bool passive_ = false;
  bool responded_ = false;
  bool disconnected_ = false;
  std::vector<uint8_t> peer_data_;
  SIZE_T peer_initiator_depth_ = 0, peer_responder_resources_ = 0;
  sockaddr_in local_{}, peer_{};
  OVERLAPPED* connect_ov_ = nullptr;
  OVERLAPPED* complete_ov_ = nullptr;
  OVERLAPPED* notify_ov_ = nullptr;
  OVERLAPPED* disconnect_ov_ = nullptr;
};

class NdListen final : public Unknown<INDListen> {
 public:
  explicit NdListen(NdAdapter* adapter) : adapter_(adapter) { adapter_->AddRef(); }
  void set_port(uint16_t port) { port_.store(port, std::memory_order_release); }

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
    return ov ? overlapped_result(ov, bytes, wait) : ND_INVALID_PARAMETER;
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
      CmRequest r;
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
    adapter_->cm()->unlisten(port_.load());
    CancelOverlappedRequests();
    adapter_->Release();
  }
  bool implements(REFIID riid) const override { return riid == IID_INDListen || riid == IID_INDOverlapped; }

 private:
  NdAdapter* adapter_;
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

HRESULT NdAdapter::Listen(SIZE_T, INT, USHORT port, USHORT* assigned, INDListen** out) {
  if (!out) return ND_INVALID_PARAMETER;
  auto* l = new NdListen(this);
  // A request that comes before set_port() stays in the agent's queue: the next
  // GetConnectionRequest (or request) matches it.
  const uint16_t got = cm()->listen(ntohs(port), [l](uint16_t) { l->match(); });
  if (got == 0) {
    l->Release();
    return ND_ADDRESS_ALREADY_EXISTS;
  }
  l->set_port(got);
  if (assigned) *assigned = htons(got);
  *out = l;
  return ND_SUCCESS;
}

HRESULT connect_endpoints_for_test(INDEndpoint* a, INDEndpoint* b, uint32_t mtu) {
  auto* ea = static_cast<NdEndpoint*>(a);
  auto* eb = static_cast<NdEndpoint*>(b);
  for (auto [me, peer] : {std::pair{ea, eb}, std::pair{eb, ea}}) {
    nic::QpAttr at;
    at.remote_qpn = peer->qp()->qpn();
    at.dest_ipv4 = peer->adapter()->port()->ipv4();
    at.path_mtu = mtu;
    at.rq_psn = at.sq_psn = 0x1000;
    at.timeout = 12;
    at.rnr_retry = 6;        // ND: a Send with no receive posted ends in an error, never a hang
    at.min_rnr_timer = 10;   // 0.32 ms between tries
    at.max_rd_atomic = uint8_t(me->limits().outbound_read_limit ? me->limits().outbound_read_limit : 1);
    at.max_dest_rd_atomic = uint8_t(me->limits().inbound_read_limit ? me->limits().inbound_read_limit : 1);
    if (!me->qp()->modify(nic::QpState::kRtr, at) || !me->qp()->modify(nic::QpState::kRts, at))
      return ND_INVALID_DEVICE_STATE;
  }
  return ND_SUCCESS;
}

}  // namespace ndnic::nd
