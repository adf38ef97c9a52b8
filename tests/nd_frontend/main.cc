// EAL once per process (lcores 1 and 2 run the two devices), then GoogleTest.
#include <gtest/gtest.h>

#include "pmd_glue/pmd_glue.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<std::string> args = {argv[0], "--lcores", "0@0,1@1,2@0", "--no-pci", "--log-level=warning", "--"};
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  ndnic::glue::EalDefaults d;
  d.memory_mb = 512;
  auto r = ndnic::glue::eal_init(int(av.size()), av.data(), d);
  if (!r.ok) {
    fprintf(stderr, "EAL: %s\n", r.error.c_str());
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  ndnic::glue::eal_cleanup();
  return rc;
}
