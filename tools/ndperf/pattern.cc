#include "tools/ndperf/pattern.h"

namespace ndnic::ndperf {

uint8_t pattern_seed(Test t, Direction d) {
  // Odd, so never 0: the first byte of any message is non-zero and a zeroed area never passes.
  return uint8_t(0x11 + uint8_t(t) * 0x16 + (d == Direction::kToClient ? 0x5A : 0)) | 1;
}

uint8_t pattern_byte(size_t i, uint8_t seed) {
  // Folding the higher offset bits in keeps the pattern from repeating every 256 bytes, so a
  // block that lands 256 bytes (or 64 KiB) off is caught too.
  return uint8_t(uint8_t(i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24)) + seed);
}

void fill_pattern(uint8_t* buf, size_t len, uint8_t seed) {
  for (size_t i = 0; i < len; i++) buf[i] = pattern_byte(i, seed);
}

int64_t check_pattern(const uint8_t* buf, size_t len, uint8_t seed) {
  for (size_t i = 0; i < len; i++)
    if (buf[i] != pattern_byte(i, seed)) return int64_t(i);
  return -1;
}

}  // namespace ndnic::ndperf
