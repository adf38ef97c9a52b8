// For ND frontend tests and benchmarks that want two endpoints connected without the CM:
// connects their QPs to each other directly (RTR/RTS with each other's QPN and address), as
// the CM handshake does. Test support only: it lives in nd_frontend_testing_dep, apart from
// the frontend's own library. Also what tests look at inside a frontend object.
#pragma once

#include <cstdint>

#include "ndnic/ndspi.h"

namespace ndnic::nd {

HRESULT connect_endpoints_for_test(INDEndpoint* a, INDEndpoint* b, uint32_t mtu = 1024);
/// The CQ's signals that went through its event fd (nic::Cq::fd_signals).
uint64_t cq_fd_signals_for_test(INDCompletionQueue* cq);
/// Waiters that watch the CQ themselves now (a Notify wait), and those of them asleep.
uint32_t cq_watchers_for_test(INDCompletionQueue* cq);
uint32_t cq_sleepers_for_test(INDCompletionQueue* cq);

}  // namespace ndnic::nd
