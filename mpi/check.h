// The parts of ndnic_mpi_check, each run by both ranks of MPI_COMM_WORLD (ranks 0 and 1): each
// adds its rows to the table, with the mismatches this rank saw; main sums them over the ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

namespace ndnic_mpi {

/// One line of the table rank 0 prints.
struct Row {
  std::string part;      ///< which part measured it: pingpong, allreduce, exchange
  std::size_t bytes;     ///< bytes per message (allreduce: the vector; exchange: all messages one way)
  int iterations;        ///< how many times it was timed
  double median_usec;    ///< the typical time of one: pingpong half a round trip, else one operation
  double mean_usec;      ///< the mean of the same times
  double mbytes_per_s;   ///< bytes over the mean time, in 10^6 B/s (one way)
  std::uint64_t errors;  ///< mismatches (bytes, elements, lengths) this rank saw
};

/// The row of a part that moved bytes in each of the timed seconds (one entry per iteration);
/// the median keeps a machine's scheduling stalls out of the typical figure, the mean does not.
Row timed_row(std::string part, std::size_t bytes, std::vector<double> seconds,
              std::uint64_t errors);

/// Fills a message with the pattern of (key, sender, offset): a message of another iteration,
/// size or direction, or shifted, does not pass check_pattern.
void fill_pattern(std::span<std::uint8_t> buf, std::uint64_t key, int sender);

/// Counts the bytes of buf that differ from fill_pattern(key, sender) and reports the first
/// one on stderr, naming the message with what.
std::uint64_t check_pattern(std::span<const std::uint8_t> buf, std::uint64_t key, int sender,
                            const std::string& what);

/// 1 when the message received with status is not bytes long (reported on stderr), else 0.
std::uint64_t check_length(const MPI_Status& status, std::size_t bytes, const std::string& what);

/// Ping-pong between ranks 0 and 1 at each size, iterations timed round trips each (after a
/// few untimed ones), every message's length and contents checked; one row per size.
/// corrupt_one: rank 1 spoils one byte of one reply (the tests' proof that a mismatch fails).
void pingpong(const std::vector<std::size_t>& sizes, int iterations, bool corrupt_one,
              std::vector<Row>& rows);

/// MPI_Allreduce(SUM) of int64 vectors of each length, iterations times, every element of
/// every result checked against its closed form; one row per length.
void allreduce(const std::vector<std::size_t>& lengths, int iterations, std::vector<Row>& rows);

/// Both ranks post receives (in reverse tag order) and sends of messages of several sizes to
/// each other with MPI_Irecv/MPI_Isend, then MPI_Waitall, iterations times; every message
/// checked; one row.
void exchange(int iterations, std::vector<Row>& rows);

}  // namespace ndnic_mpi
