// For ND frontend tests until connection management runs over the wire: connects two
// endpoints' QPs to each other directly (RTR/RTS with each other's QPN and address), as the
// CM handshake will.
#pragma once

#include <cstdint>

#include "nd_frontend/ndspi.h"

namespace ndnic::nd {

HRESULT connect_endpoints_for_test(INDEndpoint* a, INDEndpoint* b, uint32_t mtu = 1024);

}  // namespace ndnic::nd
