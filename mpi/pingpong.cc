// Ping-pong latency and bandwidth between ranks 0 and 1: rank 0 sends, rank 1 answers with a
// message of the same size; half the round trip is the latency. Each side fills its next
// message before the timed window and checks what it received after it.
#include <algorithm>
#include <string>

#include "mpi/check.h"

namespace ndnic_mpi {

namespace {
constexpr int kTag = 1;
constexpr int kWarmup = 5;  // untimed round trips per size (connection setup, caches)

std::string describe(std::size_t bytes, int iteration, int from) {
  return "pingpong " + std::to_string(bytes) + " B, iteration " + std::to_string(iteration) +
         ", from rank " + std::to_string(from);
}
}  // namespace

void pingpong(const std::vector<std::size_t>& sizes, int iterations, bool corrupt_one,
              std::vector<Row>& rows) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int peer = 1 - rank;
  std::size_t largest = 0;
  for (std::size_t s : sizes) largest = std::max(largest, s);
  std::vector<std::uint8_t> out(largest), in(largest);

  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t bytes = sizes[k];
    const int count = static_cast<int>(bytes);
    std::vector<double> half_trips;
    std::uint64_t errors = 0;
    for (int it = -kWarmup; it < iterations; ++it) {
      const std::uint64_t key = (k << 32) | static_cast<std::uint32_t>(it);
      const std::span<std::uint8_t> msg(out.data(), bytes), got(in.data(), bytes);
      fill_pattern(msg, key, rank);
      if (corrupt_one && rank == 1 && bytes > 0 && k == sizes.size() / 2 && it == iterations - 1)
        msg[bytes / 2] ^= 0x01;
      MPI_Status status;
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(out.data(), count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
        MPI_Recv(in.data(), count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &status);
      } else {
        MPI_Recv(in.data(), count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, &status);
        MPI_Send(out.data(), count, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
      }
      // Rank 0's times are the round trips the table shows; rank 1's include its wait.
      if (it >= 0) half_trips.push_back((MPI_Wtime() - t0) / 2);
      const std::string what = describe(bytes, it, peer);
      errors += check_length(status, bytes, what) + check_pattern(got, key, peer, what);
    }
    rows.push_back(timed_row("pingpong", bytes, std::move(half_trips), errors));
  }
}

}  // namespace ndnic_mpi
