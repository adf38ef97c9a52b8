// MPI_Allreduce(SUM) of an int64 vector: rank r contributes (r + 1) * (i + 1 + it) at index
// i of iteration it, so every element of the result must be (i + 1 + it) * p (p + 1) / 2
// for p ranks.
#include <cstdio>

#include "mpi/check.h"

namespace ndnic_mpi {

void allreduce(const std::vector<std::size_t>& lengths, int iterations, std::vector<Row>& rows) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::int64_t rank_sum = std::int64_t{ranks} * (ranks + 1) / 2;

  for (std::size_t length : lengths) {
    std::vector<std::int64_t> mine(length), sum(length);
    std::vector<double> seconds;
    std::uint64_t errors = 0;
    for (int it = 0; it < iterations; ++it) {
      for (std::size_t i = 0; i < length; ++i)
        mine[i] = (rank + 1) * static_cast<std::int64_t>(i + 1 + it);
      const double t0 = MPI_Wtime();
      MPI_Allreduce(mine.data(), sum.data(), static_cast<int>(length), MPI_INT64_T, MPI_SUM,
                    MPI_COMM_WORLD);
      seconds.push_back(MPI_Wtime() - t0);
      for (std::size_t i = 0; i < length; ++i) {
        const std::int64_t want = static_cast<std::int64_t>(i + 1 + it) * rank_sum;
        if (sum[i] == want) continue;
        if (errors++ == 0)
          std::fprintf(stderr, "mismatch: allreduce of %zu, iteration %d, element %zu is %lld, expected %lld\n",
                       length, it, i, static_cast<long long>(sum[i]), static_cast<long long>(want));
      }
    }
    rows.push_back(timed_row("allreduce", length * sizeof(std::int64_t), std::move(seconds), errors));
  }
}

}  // namespace ndnic_mpi
