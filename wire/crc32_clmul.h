// Private to wire/: the carry-less-multiply CRC-32 kernel behind crc32(). Only crc32.cc, the
// unit test and the benchmarks include this; everyone else calls crc32().
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndnic::wire::detail {

/// Shortest input crc32_clmul() accepts: one 128-bit block to fold.
constexpr size_t kClmulMinLen = 16;

/// zlib-compatible CRC-32 by PCLMULQDQ folding. Needs len >= kClmulMinLen and a CPU with
/// PCLMULQDQ and SSE4.1; any alignment.
uint32_t crc32_clmul(uint32_t crc, const uint8_t* p, size_t len);

}  // namespace ndnic::wire::detail
