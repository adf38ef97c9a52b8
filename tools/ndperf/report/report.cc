#include "tools/ndperf/report/report.h"

#include <cinttypes>
#include <cstdio>

namespace ndnic::ndperf {
namespace {

// perftest's RESULT_LINE and column headers (perftest_parameters.h), character for character.
constexpr const char* kResultLine =
    "---------------------------------------------------------------------------------------\n";
constexpr const char* kBwHeader =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
constexpr const char* kLatHeader =
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
    "   99% percentile[usec]   99.9% percentile[usec] \n";
constexpr const char* kCyclesHeader = " #bytes     #iterations    Cycles/sec\n";
constexpr const char* kCopyHeader = " #bytes     #iterations    BW average[Gb/sec]\n";
/// perftest prints six decimals instead of two when the average is below this many Gb/s.
constexpr double kFineBelowGbps = 0.1;

const char* transport(Test t) {
  if (info(t).rdma) return "ndnic RoCEv2 RC, Network Direct v1";
  return t == Test::kMemcpy ? "none (memory to memory)" : "raw UDP/IPv4 frames (no RDMA)";
}

}  // namespace

void print_banner(Test t, const BannerInfo& b) {
  std::printf("%s", kResultLine);
  std::printf("                    %s Test\n", info(t).title);
  if (t != Test::kMemcpy) {
    std::printf(" Number of qps   : %u\t\tTransport type : %s\n", b.qps, transport(t));
    if (info(t).rdma) std::printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
    if (b.depth) std::printf(" TX depth        : %u\n", b.depth);
    if (b.cq_moderation) std::printf(" CQ Moderation   : %u\n", b.cq_moderation);
    std::printf(" Mtu             : %u[B]\n", b.mtu);
    std::printf(" Link type       : Ethernet, %s\n", b.link.c_str());
    if (info(t).rdma) std::printf(" Completions     : %s\n", b.events ? "Notify (events)" : "polled");
    if (info(t).rdma && b.progress) std::printf(" Progress        : %s\n", b.progress);
    if (!b.note.empty()) std::printf(" Note            : %s\n", b.note.c_str());
  } else {
    std::printf(" Buffers         : the RDMA tests' registered buffers, one core\n");
  }
  std::printf("%s", kResultLine);
  switch (info(t).kind) {
    case Kind::kBandwidth: std::printf("%s", kBwHeader); break;
    case Kind::kLatency: std::printf("%s", kLatHeader); break;
    case Kind::kCycles: std::printf("%s", kCyclesHeader); break;
    case Kind::kCopy: std::printf("%s", kCopyHeader); break;
  }
  std::fflush(stdout);
}

void print_row(Test t, const Row& r) {
  const unsigned long bytes = r.bytes;
  const uint64_t n = r.iterations;
  switch (info(t).kind) {
    case Kind::kBandwidth:
      // perftest's REPORT_FMT, or REPORT_FMT_EXT for small figures.
      if (r.bw_avg_gbps < kFineBelowGbps)
        std::printf(" %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf\n", bytes, n,
                    r.bw_peak_gbps, r.bw_avg_gbps, r.msg_rate_mpps);
      else
        std::printf(" %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t     %-7.6lf\n", bytes, n,
                    r.bw_peak_gbps, r.bw_avg_gbps, r.msg_rate_mpps);
      break;
    case Kind::kLatency:  // REPORT_FMT_LAT
      std::printf(" %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f"
                  "\t\t%-7.2f \t\t%-7.2f\n",
                  bytes, n, r.t_min_us, r.t_max_us, r.t_typical_us, r.t_avg_us, r.t_stdev_us, r.p99_us, r.p999_us);
      break;
    case Kind::kCycles:
      std::printf(" %-7lu    %-10" PRIu64 "       %-7.2f\n", bytes, n, r.cycles_per_sec);
      break;
    case Kind::kCopy:
      std::printf(" %-7lu    %-10" PRIu64 "       %-7.2lf\n", bytes, n, r.bw_avg_gbps);
      break;
  }
  std::fflush(stdout);
}

void print_end() {
  std::printf("%s", kResultLine);
  std::fflush(stdout);
}

}  // namespace ndnic::ndperf
