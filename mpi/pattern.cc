// What every part checks: a message's length, and its contents, which follow splitmix64 of (key, sender, word), so
// neighbouring offsets, keys and senders give unrelated bytes.
#include <cstdio>

#include "mpi/check.h"

namespace ndnic_mpi {

namespace {
std::uint64_t pattern_word(std::uint64_t key, int sender, std::size_t word) {
  std::uint64_t z = key * 0x100000001b3ULL + static_cast<std::uint64_t>(sender) +
                    0x9e3779b97f4a7c15ULL * (word + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint8_t pattern_byte(std::uint64_t word_value, std::size_t offset) {
  return static_cast<std::uint8_t>(word_value >> (8 * (offset % 8)));
}
}  // namespace

void fill_pattern(std::span<std::uint8_t> buf, std::uint64_t key, int sender) {
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < buf.size(); ++i) {
    if (i % 8 == 0) w = pattern_word(key, sender, i / 8);
    buf[i] = pattern_byte(w, i);
  }
}

std::uint64_t check_pattern(std::span<const std::uint8_t> buf, std::uint64_t key, int sender,
                            const std::string& what) {
  std::uint64_t w = 0, bad = 0;
  for (std::size_t i = 0; i < buf.size(); ++i) {
    if (i % 8 == 0) w = pattern_word(key, sender, i / 8);
    const std::uint8_t want = pattern_byte(w, i);
    if (buf[i] == want) continue;
    if (bad++ == 0)
      std::fprintf(stderr, "mismatch: %s, byte %zu of %zu is 0x%02x, expected 0x%02x\n",
                   what.c_str(), i, buf.size(), buf[i], want);
  }
  return bad;
}

std::uint64_t check_length(const MPI_Status& status, std::size_t bytes, const std::string& what) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (static_cast<std::size_t>(count) == bytes) return 0;
  std::fprintf(stderr, "mismatch: %s is %d bytes long, expected %zu\n", what.c_str(), count, bytes);
  return 1;
}

}  // namespace ndnic_mpi
