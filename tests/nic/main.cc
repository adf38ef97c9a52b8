// EAL once per process, then GoogleTest.
#include <gtest/gtest.h>

#include "pmd_glue/pmd_glue.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string prog = argv[0];
  std::vector<std::string> args = {prog, "-l", "0", "--no-pci", "--log-level=warning", "--"};
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
