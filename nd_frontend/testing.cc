// Test support, built into its own library (nd_frontend_testing_dep) and never into the
// frontend that applications link: see testing.h.
#include "nd_frontend/testing.h"

#include "nd_frontend/objects.h"
#include "ndnic/port.h"

namespace ndnic::nd {

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

uint64_t cq_fd_signals_for_test(INDCompletionQueue* cq) { return static_cast<NdCq*>(cq)->cq()->fd_signals(); }

uint32_t cq_watchers_for_test(INDCompletionQueue* cq) { return static_cast<NdCq*>(cq)->cq()->watchers(); }

uint32_t cq_sleepers_for_test(INDCompletionQueue* cq) { return static_cast<NdCq*>(cq)->cq()->sleepers(); }

}  // namespace ndnic::nd
