// ndnic as an ND v1 provider. An application that runs an ndnic device (a nic::Device on a
// glue::Port, started on worker lcores) registers it; ND code then opens it by the port's IPv4
// address with NdOpenV1Adapter, as with any ND provider.
#pragma once

#include "ndnic/cm_config.h"
#include "ndnic/ndspi.h"

namespace ndnic::nic {
class Device;
}
namespace ndnic::glue {
class Port;
}

namespace ndnic::nd {

/// Makes `dev` reachable through NdOpenV1Adapter at `port`'s IPv4 address and starts its
/// connection manager on QP1 (rdma_cm's defaults unless `cm` says otherwise). The device runs
/// on its worker lcores, or, opened without any (run to completion), on the application's
/// threads: ND calls drive it (GetResults, the posts, every wait), and the connection manager's
/// thread does every millisecond while none does.
bool register_adapter(nic::Device* dev, glue::Port* port, const cm::Config* cm = nullptr);
/// Stops the device's connection manager; every adapter opened on it must be released first.
void unregister_adapter(glue::Port* port);

}  // namespace ndnic::nd

/// ndsupport.h's helper: opens the ND v1 adapter that owns `pAddress` (IPv4).
HRESULT NdOpenV1Adapter(const sockaddr* pAddress, SIZE_T AddressLength, INDAdapter** ppAdapter);
