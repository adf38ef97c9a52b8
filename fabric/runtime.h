// The process's one ndnic NIC under libfabric: EAL, the DPDK port named by FI_NDNIC_DEV with the
// address FI_NDNIC_IP, the engine (nic::Device) and the CM agent on it. Brought up once, by the
// first fi_getinfo that needs it (so that a wrong setting fails fi_getinfo with a clear message),
// shared by every fabric, and taken down by the provider's cleanup.
#pragma once

#include <rdma/providers/fi_prov.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cm/agent.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"

namespace ndnic::fabric {

/// The provider's descriptor: its name, getinfo, fabric and cleanup (fabric.cc).
extern fi_provider g_prov;

/// The settings read from FI_NDNIC_* (fi_param), checked.
struct Settings {
  std::string device;          ///< FI_NDNIC_DEV: the DPDK port (devargs, name or number)
  uint32_t ipv4 = 0;           ///< FI_NDNIC_IP, host order
  std::string eal_args;        ///< FI_NDNIC_EAL_ARGS, split on blanks
  uint32_t path_mtu = 1024;    ///< FI_NDNIC_MTU: RoCE path MTU (256 .. 4096)
  int lcore = -1;              ///< FI_NDNIC_LCORE: a worker lcore runs the engine; -1: the application's calls do
  uint8_t rnr_retry = 7;       ///< FI_NDNIC_RNR_RETRY: RNR retries asked of peers sending to us (7: no limit)
};

/// Declares the FI_NDNIC_* parameters (fi_info -e lists them).
void define_params();

struct Runtime {
  Settings settings;
  glue::Port port;
  nic::Device dev;
  std::unique_ptr<cm::Agent> agent;
  /// The engine's progress on the calling thread when no worker lcore runs it.
  void progress() {
    if (app_driven) dev.progress();
  }
  bool app_driven = true;
};

/// The runtime, brought up on first use; nullptr (with the reason on stderr and in the log,
/// once) when the settings are missing or wrong or the port does not open.
Runtime* runtime();
/// Takes it down (the provider's cleanup).
void shutdown_runtime();

}  // namespace ndnic::fabric
