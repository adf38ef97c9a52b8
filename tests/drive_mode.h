// Which way the devices of an ND test run: on worker lcores (the default), or, with
// NDNIC_TEST_DRIVE=thread in the environment, run to completion: no worker lcore, the test's
// ND calls and each adapter's connection-manager thread drive them. meson runs the ND suites
// both ways (tests/nd_frontend/meson.build).
#pragma once

#include <cstdlib>
#include <cstring>
#include <vector>

namespace ndnic::testing {

inline bool run_to_completion() {
  const char* v = std::getenv("NDNIC_TEST_DRIVE");
  return v && std::strcmp(v, "thread") == 0;
}

/// DeviceConfig::lcores for the next device: `lcore` (then the next one), or none.
inline std::vector<unsigned> device_lcores(unsigned* lcore) {
  if (run_to_completion()) return {};
  return {(*lcore)++};
}

}  // namespace ndnic::testing
