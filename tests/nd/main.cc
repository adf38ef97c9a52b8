// EAL once per process, then GoogleTest. Lcores 1-4 are workers for the sharded tests; they
// sleep in EAL until a test launches them, and share the machine's two CPUs.
#include <gtest/gtest.h>

#include "pmd_glue/pmd_glue.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string prog = argv[0];
  std::vector<std::string> args = {prog, "--lcores", "0@0,1@1,2@0,3@1,4@1", "--no-pci", "--log-level=warning", "--"};
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  ndnic::glue::EalDefaults d;
  d.memory_mb = 512;
  auto r = ndnic::glue::eal_init(int(av.size()), av.data(), d);
  if (!r.ok) {
    fprintf(stderr, "EAL: %s\n", r.error.c_str());
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  ndnic::glue::eal_cleanup();
  return rc;
}
