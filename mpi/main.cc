// ndnic_mpi_check: an MPI program for two ranks that checks what it measures. Ping-pong
// latency and bandwidth from 1 B to the largest size (powers of 4), MPI_Allreduce of int64
// vectors, a non-blocking exchange; every message and result is checked. Rank 0 prints one
// table; the exit status is 1 when either rank saw a mismatch, 2 on bad usage.
#include <charconv>
#include <cstdio>
#include <string_view>

#include "mpi/check.h"

namespace {

constexpr int kDefaultIterations = 100;
constexpr std::size_t kDefaultLargest = std::size_t{1} << 20;
constexpr std::size_t kAllreduceLengths[] = {1, 1024, 128 * 1024};  // int64s: 8 B .. 1 MiB

constexpr const char* kUsage =
    "usage: ndnic_mpi_check [-n ITERATIONS] [-m LARGEST_BYTES] [--corrupt-one]\n"
    "  run as two ranks under mpirun; -n: timed iterations per line (default 100);\n"
    "  -m: largest ping-pong message (default 1048576); --corrupt-one: rank 1 spoils one byte\n"
    "  of one ping-pong reply, which must make the run fail (the tests' check of the checks)\n";

/// What the command line asks for.
struct Options {
  int iterations = kDefaultIterations;  ///< timed iterations per line of the table
  std::size_t largest = kDefaultLargest;  ///< largest ping-pong message, in bytes
  bool corrupt_one = false;  ///< spoil one reply on purpose
};

template <typename T>
bool parse_number(const char* text, T& value) {
  const std::string_view s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value > 0;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    const bool has_value = i + 1 < argc;
    if (a == "-n" && has_value) {
      if (!parse_number(argv[++i], o.iterations)) return false;
    } else if (a == "-m" && has_value) {
      if (!parse_number(argv[++i], o.largest) || o.largest > (std::size_t{1} << 30)) return false;
    } else if (a == "--corrupt-one") {
      o.corrupt_one = true;
    } else {
      return false;
    }
  }
  return true;
}

void print_table(const std::vector<ndnic_mpi::Row>& rows, const std::vector<std::uint64_t>& errors,
                 int iterations) {
  std::printf("ndnic_mpi_check: 2 ranks, %d timed iterations per line; pingpong's time is half a "
              "round trip; MB/s: 10^6 B/s one way, over the mean time\n", iterations);
  std::printf("%-10s %10s %10s %12s %12s %12s %10s\n", "part", "bytes", "iterations",
              "median_usec", "mean_usec", "MB/s", "mismatches");
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::printf("%-10s %10zu %10d %12.2f %12.2f %12.2f %10llu\n", rows[r].part.c_str(),
                rows[r].bytes, rows[r].iterations, rows[r].median_usec, rows[r].mean_usec,
                rows[r].mbytes_per_s, static_cast<unsigned long long>(errors[r]));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Options o;
  if (!parse(argc, argv, o) || ranks != 2) {
    if (rank == 0) std::fprintf(stderr, "%s(this run: %d ranks)\n", kUsage, ranks);
    MPI_Finalize();
    return 2;
  }

  std::vector<std::size_t> sizes;
  for (std::size_t s = 1; s <= o.largest; s *= 4) sizes.push_back(s);
  std::vector<ndnic_mpi::Row> rows;
  ndnic_mpi::pingpong(sizes, o.iterations, o.corrupt_one, rows);
  ndnic_mpi::allreduce({std::begin(kAllreduceLengths), std::end(kAllreduceLengths)}, o.iterations,
                       rows);
  ndnic_mpi::exchange(o.iterations, rows);

  // Both ranks have the same rows in the same order; rank 0 prints the sum of their mismatches.
  std::vector<std::uint64_t> mine, errors(rows.size());
  for (const auto& row : rows) mine.push_back(row.errors);
  MPI_Allreduce(mine.data(), errors.data(), static_cast<int>(rows.size()), MPI_UINT64_T, MPI_SUM,
                MPI_COMM_WORLD);
  std::uint64_t total = 0;
  for (std::uint64_t e : errors) total += e;
  if (rank == 0) {
    print_table(rows, errors, o.iterations);
    if (total == 0)
      std::printf("ndnic_mpi_check: PASS, every message and result as expected\n");
    else
      std::printf("ndnic_mpi_check: FAIL, %llu mismatches (the first of each line on stderr)\n",
                  static_cast<unsigned long long>(total));
    std::fflush(stdout);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
