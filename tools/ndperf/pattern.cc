#include "tools/ndperf/pattern.h"

#include <algorithm>

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
  // By blocks of 256 offsets, over which the higher offset bits are one constant: a branch-free
  // OR of differences the compiler vectorizes, and the exact offset only where a block differs.
  // Byte by byte with an early exit it took 60% of sendinv's client thread (a 4 KiB check per
  // cycle).
  for (size_t base = 0; base < len; base += 256) {
    const size_t n = std::min<size_t>(256, len - base);
    const uint8_t high = uint8_t((base >> 8) ^ (base >> 16) ^ (base >> 24));
    const uint8_t* b = buf + base;
    uint8_t diff = 0;
    for (size_t j = 0; j < n; j++) diff |= uint8_t(b[j] ^ uint8_t(uint8_t(j ^ high) + seed));
    if (diff == 0) continue;
    for (size_t j = 0; j < n; j++)
      if (b[j] != pattern_byte(base + j, seed)) return int64_t(base + j);
  }
  return -1;
}

}  // namespace ndnic::ndperf
