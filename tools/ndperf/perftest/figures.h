// perftest's figures and table lines, computed the way perftest 4.5-0.17 computes them
// (print_report_bw, print_report_lat in perftest_parameters.c) from the same timestamps, so
// ndperf's rows can be set beside perftest's own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/ndperf/perftest/oob.h"

namespace ndnic::ndperf::perftest {

/// Bandwidth: when each message was posted and completed (steady clock, ns). A receiver has
/// only its first receive and its last (perftest's send_bw server has no peak: noPeak).
struct BwSamples {
  uint32_t size = 0;
  uint64_t iters = 0;
  std::vector<uint64_t> posted, completed;
  uint32_t cq_mod = 1;  ///< perftest's CQ moderation: the peak looks at every cq_mod-th completion
  bool no_peak = false;
};

/// Latency: when each iteration was posted (ns); perftest's delta is post to post.
struct LatSamples {
  uint32_t size = 0;
  std::vector<uint64_t> posted;
};

constexpr double kMbFactor = 0x100000;     ///< MB/sec as perftest means it (MiB)
constexpr double kGbFactor = 125000000;    ///< Gb/sec (10^9 bits)
constexpr uint64_t kNoPeakAbove = 20000;   ///< perftest skips the peak above this many iterations

BwReport bw_figures(const BwSamples& s, bool gbits);

struct LatFigures {
  uint32_t size = 0;
  uint64_t iters = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;
};
/// rtt_factor: 2 for the ping-pong tests (half the round trip), 1 for read_lat. Needs at
/// least 4 samples (perftest drops the two largest of iters - 1 deltas).
LatFigures lat_figures(const LatSamples& s, int rtt_factor);

/// The lines perftest prints.
extern const char* const kResultLine;
std::string bw_header(bool gbits);
std::string lat_header();
std::string bw_row(const BwReport& r, bool gbits);
std::string lat_row(const LatFigures& f);

}  // namespace ndnic::ndperf::perftest
