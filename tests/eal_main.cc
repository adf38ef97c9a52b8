// main() of the tests that need DPDK: EAL once per process, then GoogleTest. Each test binary
// names its lcore map (NDNIC_TEST_LCORES): lcore 0 runs the tests, the others are workers for
// devices that poll on their own lcores; they sleep in EAL until launched and share the CPUs.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ndnic/port.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<std::string> args = {argv[0], "--lcores", NDNIC_TEST_LCORES, "--no-pci", "--log-level=warning", "--"};
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  ndnic::glue::EalDefaults defaults;
  defaults.memory_mb = 512;
  const auto eal = ndnic::glue::eal_init(int(av.size()), av.data(), defaults);
  if (!eal.ok) {
    fprintf(stderr, "EAL: %s\n", eal.error.c_str());
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  ndnic::glue::eal_cleanup();
  return rc;
}
