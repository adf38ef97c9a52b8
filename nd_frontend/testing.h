// For ND frontend tests and benchmarks that want two endpoints connected without the CM:
// connects their QPs to each other directly (RTR/RTS with each other's QPN and address), as
// the CM handshake does. Test support only: it lives in nd_frontend_testing_dep, apart from
// the frontend's own library.
#pragma once

#include <cstdint>

#include "ndnic/ndspi.h"

namespace ndnic::nd {

HRESULT connect_endpoints_for_test(INDEndpoint* a, INDEndpoint* b, uint32_t mtu = 1024);

}  // namespace ndnic::nd
