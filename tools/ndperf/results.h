// What a run measured: one row per test and message size, with the fields of the JSON schema
// (the console, JSON, CSV and the plot all print from these).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/ndperf/catalog.h"
#include "tools/ndperf/options.h"

namespace ndnic::ndperf {

struct Row {
  uint32_t bytes = 0;
  uint64_t iterations = 0;
  // Kind::kBandwidth (and kCopy: bw_avg_gbps only)
  double bw_peak_gbps = 0, bw_avg_gbps = 0, msg_rate_mpps = 0;
  // Kind::kLatency, microseconds
  double t_min_us = 0, t_max_us = 0, t_typical_us = 0, t_avg_us = 0, t_stdev_us = 0, p99_us = 0, p999_us = 0;
  // Kind::kCycles
  double cycles_per_sec = 0;
};

struct TestResult {
  Test test;
  std::vector<Row> rows;
};

struct RunReport {
  Role mode = Role::kEmbedded;
  Drive drive = Drive::kWorkers;  ///< who moved the devices
  bool events = false;            ///< completions waited for with Notify
  std::vector<TestResult> tests;
};

}  // namespace ndnic::ndperf
