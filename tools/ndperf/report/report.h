// The console tables, in perftest's layout: a dashed banner naming the test and its settings,
// the column header, one row per size as it is measured, a closing dashed line. The figures
// are perftest's units: Gb/sec (10^9 bits), Mpps, usec.
#pragma once

#include <string>

#include "tools/ndperf/catalog.h"
#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

struct BannerInfo {
  uint32_t qps = 1;
  uint32_t depth = 0;         ///< 0: not shown
  uint32_t cq_moderation = 0; ///< 0: not shown
  uint32_t mtu = 0;
  std::string link;           ///< "net_ring pair (embedded)", the --dev devargs
  bool events = false;        ///< completions waited for with Notify
  const char* progress = nullptr;  ///< who moved the devices (RDMA tests)
  std::string note;           ///< one more line, when set
};

void print_banner(Test t, const BannerInfo& b);
void print_row(Test t, const Row& r);
void print_end();

}  // namespace ndnic::ndperf
