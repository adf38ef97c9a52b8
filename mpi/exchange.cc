// A non-blocking exchange: both ranks post one MPI_Irecv per message (highest tag first, so
// matching is by tag, not by order), then one MPI_Isend per message, and wait for all of them
// with MPI_Waitall. The sizes straddle the eager and rendezvous protocols, and include 0.
#include <array>
#include <string>

#include "mpi/check.h"

namespace ndnic_mpi {

namespace {
constexpr std::array<std::size_t, 8> kSizes = {0, 1, 100, 4096, 16384 + 3, 65536, 262144, 1 << 20};

std::string describe(std::size_t m, int iteration, int from) {
  return "exchange message " + std::to_string(m) + " (" + std::to_string(kSizes[m]) +
         " B), iteration " + std::to_string(iteration) + ", from rank " + std::to_string(from);
}
}  // namespace

void exchange(int iterations, std::vector<Row>& rows) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int peer = 1 - rank;
  std::array<std::vector<std::uint8_t>, kSizes.size()> out, in;
  std::size_t total = 0;
  for (std::size_t m = 0; m < kSizes.size(); ++m) {
    out[m].resize(kSizes[m]);
    in[m].resize(kSizes[m]);
    total += kSizes[m];
  }
  std::vector<double> seconds;
  std::uint64_t errors = 0;

  for (int it = 0; it < iterations; ++it) {
    for (std::size_t m = 0; m < kSizes.size(); ++m) fill_pattern(out[m], (m << 32) | it, rank);
    std::array<MPI_Request, 2 * kSizes.size()> requests;
    std::array<MPI_Status, 2 * kSizes.size()> statuses;
    MPI_Barrier(MPI_COMM_WORLD);  // both ranks start together, so the time is the exchange's
    const double t0 = MPI_Wtime();
    for (std::size_t m = kSizes.size(); m-- > 0;)
      MPI_Irecv(in[m].data(), static_cast<int>(kSizes[m]), MPI_BYTE, peer, static_cast<int>(m),
                MPI_COMM_WORLD, &requests[m]);
    for (std::size_t m = 0; m < kSizes.size(); ++m)
      MPI_Isend(out[m].data(), static_cast<int>(kSizes[m]), MPI_BYTE, peer, static_cast<int>(m),
                MPI_COMM_WORLD, &requests[kSizes.size() + m]);
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
    seconds.push_back(MPI_Wtime() - t0);
    for (std::size_t m = 0; m < kSizes.size(); ++m) {
      const std::string what = describe(m, it, peer);
      errors += check_length(statuses[m], kSizes[m], what) +
                    check_pattern(in[m], (m << 32) | it, peer, what);
    }
  }
  rows.push_back(timed_row("exchange", total, std::move(seconds), errors));
}

}  // namespace ndnic_mpi
