// The figures of a table row from one part's timings.
#include <algorithm>
#include <numeric>

#include "mpi/check.h"

namespace ndnic_mpi {

Row timed_row(std::string part, std::size_t bytes, std::vector<double> seconds,
              std::uint64_t errors) {
  const std::size_t n = seconds.size();
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  std::sort(seconds.begin(), seconds.end());
  const double median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  return Row{std::move(part), bytes, static_cast<int>(n), median * 1e6, mean * 1e6,
             static_cast<double>(bytes) / mean / 1e6, errors};
}

}  // namespace ndnic_mpi
