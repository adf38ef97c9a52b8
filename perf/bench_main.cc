// main() of the benchmarks that need DPDK: EAL once per process, then Google Benchmark. Each
// binary names its lcore map (NDNIC_BENCH_LCORES), as the tests do with NDNIC_TEST_LCORES.
// Arguments Google Benchmark does not take are EAL's, so `bench_x --benchmark_filter=y --no-huge`
// works; without a memory option ndnic picks hugepages or --no-huge itself.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "ndnic/port.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // takes its --benchmark_* flags out of argv
  std::vector<std::string> args(argv, argv + argc);
  args.emplace_back("--");
  std::vector<char*> av;
  for (auto& s : args) av.push_back(s.data());
  ndnic::glue::EalDefaults defaults;
  defaults.options = {{"--lcores", NDNIC_BENCH_LCORES}, {"--no-pci", ""}, {"--log-level", "warning"}};
  defaults.memory_mb = 512;
  const auto eal = ndnic::glue::eal_init(int(av.size()), av.data(), defaults);
  if (!eal.ok) {
    fprintf(stderr, "EAL: %s\n", eal.error.c_str());
    return 1;
  }
  // The benchmarks keep their devices and ports in function-local statics, built on first use.
  // Those are destroyed at exit in reverse order of construction, and after an atexit handler
  // registered before they were built: so EAL is released only after every device and port.
  std::atexit([] { ndnic::glue::eal_cleanup(); });
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
