// Private to wire/: the carry-less-multiply CRC-32 kernels behind crc32() and crc32_copy(), the
// fold constants and finishing steps they share, and the choice between them. Only
// wire/crc32*.cc, the unit test and the benchmarks include this; everyone else calls crc32() or
// crc32_copy().
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace ndnic::wire::detail {

/// Shortest input crc32_clmul() and crc32_copy_clmul() accept: one 128-bit block to fold.
constexpr size_t kClmulMinLen = 16;

/// zlib-compatible CRC-32 by PCLMULQDQ folding. Needs len >= kClmulMinLen and a CPU with
/// PCLMULQDQ and SSE4.1; any alignment.
uint32_t crc32_clmul(uint32_t crc, const uint8_t* p, size_t len);

/// Shortest input the 256-bit kernels accept: one 32-byte register to fold.
constexpr size_t kVpclmul256MinLen = 32;

/// zlib-compatible CRC-32 by VPCLMULQDQ folding on 256-bit registers. Needs
/// len >= kVpclmul256MinLen and a CPU with AVX2 and VPCLMULQDQ; any alignment.
uint32_t crc32_vpclmul256(uint32_t crc, const uint8_t* p, size_t len);

/// Shortest input the 512-bit kernels accept: one 64-byte register to fold.
constexpr size_t kVpclmulMinLen = 64;

/// zlib-compatible CRC-32 by VPCLMULQDQ folding on 512-bit registers. Needs
/// len >= kVpclmulMinLen and a CPU with AVX-512F/BW/VL and VPCLMULQDQ; any alignment.
uint32_t crc32_vpclmul(uint32_t crc, const uint8_t* p, size_t len);

/// Copies len bytes from src to dst (which must not overlap) and returns crc32(crc, src, len),
/// loading each byte once. Same length and CPU requirements as the matching CRC kernel.
uint32_t crc32_copy_vpclmul(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t len);
uint32_t crc32_copy_vpclmul256(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t len);
uint32_t crc32_copy_clmul(uint32_t crc, uint8_t* dst, const uint8_t* src, size_t len);

/// The implementations crc32() can run, widest last; a CPU that has one has those before it.
enum class CrcPath : uint8_t { kTable, kPclmul, kVpclmul256, kVpclmul };

/// The widest path this CPU (and its OS, for the AVX and AVX-512 register state) supports.
CrcPath crc_path_best();

/// The path for an NDNIC_CRC value ("table", "pclmul", "vpclmul256", "vpclmul"; null or empty:
/// none) on a CPU whose widest path is `best`: a path the CPU lacks, or an unknown name, gives
/// `best`.
CrcPath crc_path_choose(const char* env, CrcPath best);

/// crc32() and crc32_copy() as they behave when `path` is the one chosen: any length, with the
/// same crossovers to narrower kernels for short inputs. `path` must be one the CPU supports.
uint32_t crc32_on(CrcPath path, uint32_t crc, const void* data, size_t len);
uint32_t crc32_copy_on(CrcPath path, uint32_t crc, void* dst, const void* src, size_t len);

/// The fold constants, derived from the polynomial at compile time. The layout (explained in
/// crc32_clmul.cc): a 128-bit lane loaded
/// little-endian holds x^127 (bit 0) .. x^0 (bit 127), and carrying it D bits further along the
/// message multiplies its high half by x^(D+32) mod P and its low half by x^(D-32) mod P, each
/// mirrored into 33 bits. Intel's paper writes the same numbers as (x^(D+32) mod P)' << 1 and
/// (x^(D-32) mod P)' << 1, ' being 32-bit reflection; its x^(D+64) and x^D are for the
/// unreflected CRC. E.g. the 4 x 512-bit loop (D = 2048) uses x^2080 and x^2016 mod P.
namespace fold_const {

constexpr uint64_t kPoly = 0x1'04C1'1DB7;  ///< P(x), bit d = coefficient of x^d

/// x^e mod P(x), bit d = coefficient of x^d.
constexpr uint64_t x_pow_mod(unsigned e) {
  uint64_t r = 1;
  for (unsigned i = 0; i < e; i++) {
    r <<= 1;
    if (r >> 32) r ^= kPoly;
  }
  return r;
}

/// Mirrors the low 33 bits: bit d <-> bit 32-d.
constexpr uint64_t reflect33(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i <= 32; i++)
    if (v >> i & 1) r |= 1ull << (32 - i);
  return r;
}

/// floor(x^64 / P(x)), the Barrett constant; degree 32.
constexpr uint64_t x64_div_p() {
  uint64_t q = 1ull << 32;                  // x^64 / x^32, the first quotient term
  uint64_t r = (kPoly & 0xffffffff) << 32;  // x^64 - x^32 * P(x), with x^64 cancelled
  for (int d = 63; d >= 32; d--) {
    if (r >> d & 1) {
      q |= 1ull << (d - 32);
      r ^= kPoly << (d - 32);
    }
  }
  return q;
}

/// x^e mod P in the 33-bit PCLMULQDQ layout.
constexpr uint64_t xpow(unsigned e) { return reflect33(x_pow_mod(e)); }
/// The multiplier for a lane's high half (bytes 0-7), carried `bits` forward.
constexpr uint64_t hi(unsigned bits) { return xpow(bits + 32); }
/// The multiplier for a lane's low half (bytes 8-15), carried `bits` forward.
constexpr uint64_t lo(unsigned bits) { return xpow(bits - 32); }

constexpr uint64_t kMu = reflect33(x64_div_p());
constexpr uint64_t kPolyReflected = reflect33(kPoly);
// The values Intel's paper prints; a mismatch means the derivation above is off.
static_assert(kMu == 0x1'f701'1641 && kPolyReflected == 0x1'db71'0641);
static_assert(xpow(64) == 0x1'63cd'6124 && xpow(96) == 0x0'ccaa'009e);

/// pshufb controls: 16 bytes from kShift + 16 + n move every byte n places down (towards byte
/// 0), from kShift + n move them 16 - n places up; 0x80 zeroes the bytes shifted in.
inline constexpr uint8_t kShift[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

}  // namespace fold_const

// The finishing steps every kernel shares. Compiled for pclmul + sse4.1 only, so they inline into any kernel built for more.
#define NDNIC_CLMUL_FINISH __attribute__((target("pclmul,sse4.1"))) inline

/// Adds the last n (1..15) message bytes, which end at `end`, to the 128-bit remainder x of
/// everything before them, giving the remainder of the whole message. Reads the 16 bytes
/// before `end`, so the message must be at least 16 bytes long.
NDNIC_CLMUL_FINISH __m128i fold_partial(__m128i x, const uint8_t* end, size_t n) {
  using fold_const::kShift;
  const __m128i down = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShift + 16 + n));
  const __m128i up = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShift + n));
  // x's first n bytes still need carrying 128 bits forward: those are what lands past the
  // end of the block made of x's other 16 - n bytes followed by the n new ones.
  const __m128i head = _mm_shuffle_epi8(x, up);
  const __m128i last = _mm_loadu_si128(reinterpret_cast<const __m128i*>(end - 16));
  // down's 0x80 bytes (its top n) select the new bytes; the rest is x moved down.
  const __m128i block = _mm_blendv_epi8(_mm_shuffle_epi8(x, down), last, down);
  const __m128i k = _mm_set_epi64x(int64_t(fold_const::lo(128)), int64_t(fold_const::hi(128)));
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(head, k, 0x00),
                                     _mm_clmulepi64_si128(head, k, 0x11)),
                       block);
}

/// The CRC of a message whose 128-bit remainder is x (zlib's pre-inversion already added):
/// x(x) * x^32 mod P, post-inverted.
NDNIC_CLMUL_FINISH uint32_t reduce128(__m128i x) {
  using namespace fold_const;
  const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);
  // 128 -> 96 bits: the high half times (x^96 mod P), plus the low half times x^32.
  x = _mm_xor_si128(_mm_clmulepi64_si128(x, _mm_cvtsi64_si128(int64_t(xpow(96))), 0x00),
                    _mm_srli_si128(x, 8));
  // 96 -> 64 bits: the top 32 bits times (x^64 mod P), added to the low 64.
  x = _mm_xor_si128(
      _mm_clmulepi64_si128(_mm_and_si128(x, mask32), _mm_cvtsi64_si128(int64_t(xpow(64))), 0x00),
      _mm_srli_si128(x, 4));
  // Barrett: q = floor(top32 * mu / x^32), remainder = low32 + q * P.
  const __m128i pm = _mm_set_epi64x(int64_t(kMu), int64_t(kPolyReflected));
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), pm, 0x10);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, mask32), pm, 0x00);
  return ~uint32_t(_mm_extract_epi32(_mm_xor_si128(x, q), 1));
}

#undef NDNIC_CLMUL_FINISH

}  // namespace ndnic::wire::detail
