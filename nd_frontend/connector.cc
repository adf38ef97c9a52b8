// INDConnector: CreateEndpoint makes the endpoint's RC QP. Connection establishment over the
// wire (IB CM MADs on QP1, rdma_cm-compatible) comes with the CM agent; until then Connect,
// Accept and Listen answer ND_NOT_SUPPORTED.
#include "nd_frontend/objects.h"
#include "nd_frontend/overlapped.h"
#include "nd_frontend/testing.h"
#include "pmd_glue/pmd_glue.h"

namespace ndnic::nd {
namespace {

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
  HRESULT Connect(INDEndpoint*, const sockaddr*, SIZE_T, INT, USHORT, const void*, SIZE_T, OVERLAPPED*) override {
    return ND_NOT_SUPPORTED;
  }
  HRESULT CompleteConnect(OVERLAPPED*) override { return ND_NOT_SUPPORTED; }
  HRESULT Accept(INDEndpoint*, const void*, SIZE_T, OVERLAPPED*) override { return ND_NOT_SUPPORTED; }
  HRESULT Reject(const void*, SIZE_T) override { return ND_NOT_SUPPORTED; }
  HRESULT GetConnectionData(SIZE_T*, SIZE_T*, void*, SIZE_T*) override { return ND_CONNECTION_INVALID; }
  HRESULT GetLocalAddress(sockaddr*, SIZE_T*) override { return ND_CONNECTION_INVALID; }
  HRESULT GetPeerAddress(sockaddr*, SIZE_T*) override { return ND_CONNECTION_INVALID; }
  HRESULT NotifyDisconnect(OVERLAPPED*) override { return ND_CONNECTION_INVALID; }
  HRESULT Disconnect(OVERLAPPED*) override { return ND_CONNECTION_INVALID; }

 protected:
  ~NdConnector() override { adapter_->Release(); }
  bool implements(REFIID riid) const override { return riid == IID_INDConnector || riid == IID_INDOverlapped; }

 private:
  NdAdapter* adapter_;
};

}  // namespace

HRESULT NdAdapter::CreateConnector(INDConnector** out) {
  if (!out) return ND_INVALID_PARAMETER;
  *out = new NdConnector(this);
  return ND_SUCCESS;
}

HRESULT NdAdapter::Listen(SIZE_T, INT, USHORT, USHORT*, INDListen**) { return ND_NOT_SUPPORTED; }

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
