#include "tools/ndperf/perftest/figures.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace ndnic::ndperf::perftest {

const char* const kResultLine =
    "---------------------------------------------------------------------------------------\n";

BwReport bw_figures(const BwSamples& s, bool gbits) {
  BwReport r;
  r.size = s.size;
  r.iters = s.iters;
  const double factor = gbits ? kGbFactor : kMbFactor;
  const uint64_t n = s.iters;
  if (n == 0 || s.posted.empty() || s.completed.empty()) return r;
  const double total_s = double(s.completed.back() - s.posted.front()) / 1e9;
  if (total_s <= 0) return r;
  r.bw_avg = double(s.size) * double(n) / (total_s * factor);
  r.msg_rate = double(n) / (total_s * 1e6);
  if (s.no_peak || n > kNoPeakAbove || s.posted.size() != n || s.completed.size() != n) return r;
  // The fastest stretch from any post to a later moderated completion, per message, as
  // perftest's loop over tposted[i] and tcompleted[j] (j on the cq_mod grid, and the last).
  const uint64_t mod = std::max<uint32_t>(1, s.cq_mod);
  double best = double(s.completed[n - 1] - s.posted[0]);
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t first = (i + 1 + mod - 1) / mod * mod - 1;
    for (uint64_t j = first; j < n; j += mod)
      best = std::min(best, double(s.completed[j] - s.posted[i]) / double(j - i + 1));
    if (n % mod) best = std::min(best, double(s.completed[n - 1] - s.posted[i]) / double(n - i));
  }
  if (best > 0) r.bw_peak = double(s.size) / (best / 1e9 * factor);
  return r;
}

LatFigures lat_figures(const LatSamples& s, int rtt_factor) {
  LatFigures f;
  f.size = s.size;
  f.iters = s.posted.size();
  if (s.posted.size() < 5) return f;
  std::vector<double> delta;  // microseconds
  for (size_t i = 0; i + 1 < s.posted.size(); i++)
    delta.push_back(double(s.posted[i + 1] - s.posted[i]) / 1000.0 / rtt_factor);
  std::sort(delta.begin(), delta.end());
  const size_t m = delta.size() - 2;  // LAT_MEASURE_TAIL: the two largest do not count
  f.t_typical = (m - 1) % 2 ? (delta[m / 2] + delta[m / 2 - 1]) / 2 : delta[m / 2];
  double sum = 0;
  for (size_t i = 0; i < m; i++) sum += delta[i];
  f.t_avg = sum / double(m);
  // perftest squares whole microseconds (its temp_var is an int): kept, so the column means
  // the same on both sides of a run.
  double var = 0;
  for (size_t i = 0; i < m; i++) {
    const int d = int(f.t_avg - delta[i]);
    var += double(d * d);
  }
  f.t_stdev = std::sqrt(var / double(m));
  f.t_min = delta[0];
  f.t_max = delta[m];
  f.p99 = delta[size_t(std::ceil(double(m) * 0.99))];
  f.p999 = delta[size_t(std::ceil(double(m) * 0.999))];
  return f;
}

std::string bw_header(bool gbits) {
  std::string h(gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
                      : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]");
  h.push_back('\n');
  return h;
}

std::string lat_header() {
  return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
         "99% percentile[usec]   99.9% percentile[usec] \n";
}

std::string bw_row(const BwReport& r, bool gbits) {
  char b[256];
  // REPORT_FMT, or REPORT_FMT_EXT (six decimals) below 0.1 Gb/sec.
  if (gbits && r.bw_avg < 0.1)
    std::snprintf(b, sizeof b, " %-7" PRIu64 "    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf\n",
                  r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate);
  else
    std::snprintf(b, sizeof b, " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n",
                  r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate);
  return b;
}

std::string lat_row(const LatFigures& f) {
  char b[256];
  std::snprintf(b, sizeof b,
                " %-7u %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f "
                "\t\t%-7.2f\n",
                f.size, f.iters, f.t_min, f.t_max, f.t_typical, f.t_avg, f.t_stdev, f.p99, f.p999);
  return b;
}

}  // namespace ndnic::ndperf::perftest
