#include "tools/ndping/pattern.h"

namespace ndnic::ndping {
namespace {

// Golden-ratio hashing of the size: each power of two gets its own top byte.
constexpr uint32_t kSizeHash = 0x9E3779B1;
constexpr uint8_t kToClientSalt = 0x5A;

uint8_t salt(uint32_t len, Direction d) {
  return uint8_t((len * kSizeHash) >> 24) ^ (d == Direction::kToClient ? kToClientSalt : 0);
}

// Folding in the higher offset bits keeps the pattern from repeating every 256 bytes, so a
// block that lands 256 (or 64 Ki) bytes off is caught too.
uint8_t byte_at(uint32_t i, uint8_t s) { return uint8_t(i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24)) + s; }

}  // namespace

void fill_pattern(uint8_t* buf, uint32_t len, Direction d) {
  const uint8_t s = salt(len, d);
  for (uint32_t i = 0; i < len; i++) buf[i] = byte_at(i, s);
}

int64_t check_pattern(const uint8_t* buf, uint32_t len, Direction d) {
  const uint8_t s = salt(len, d);
  for (uint32_t i = 0; i < len; i++)
    if (buf[i] != byte_at(i, s)) return i;
  return -1;
}

}  // namespace ndnic::ndping
