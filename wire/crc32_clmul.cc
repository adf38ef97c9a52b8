// CRC-32 by carry-less multiplication (Gopal et al., Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", 2009): fold four 128-bit lanes 64 bytes at a time,
// fold the lanes into one, reduce 128 -> 64 bits, then Barrett-reduce to the 32-bit remainder.
//
// Layout. The CRC is reflected, so a 128-bit register loaded little-endian holds the message
// polynomial with bit k as the coefficient of x^(127-k). PCLMULQDQ of a 64-bit lane in that
// layout by a 33-bit constant whose bit j is the coefficient of x^(32-j) gives a product whose
// bit k is x^(95-k). Folding lane half H (x^127..x^64) forward by D bits therefore needs
// x^(D+32) mod P, and the other half L (x^63..x^0) needs x^(D-32) mod P. Every constant is
// computed below from the polynomial alone.
//
// Compiled for pclmul + sse4.1 by function attributes, so the rest of the build needs no -m
// flags; crc32.cc only calls in here after checking the CPU.
#include "wire/crc32_clmul.h"

#include <immintrin.h>

#include "wire/icrc.h"

namespace ndnic::wire::detail {
namespace {

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

/// floor(x^64 / P(x)), the Barrett constant; degree 32.
constexpr uint64_t x64_div_p() {
  uint64_t q = 1ull << 32;            // x^64 / x^32, the first quotient term
  uint64_t r = (kPoly & 0xffffffff) << 32;  // x^64 - x^32 * P(x), with x^64 cancelled
  for (int d = 63; d >= 32; d--) {
    if (r >> d & 1) {
      q |= 1ull << (d - 32);
      r ^= kPoly << (d - 32);
    }
  }
  return q;
}

/// Mirrors the low 33 bits: bit d <-> bit 32-d, the layout PCLMULQDQ constants need here.
constexpr uint64_t reflect33(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i <= 32; i++)
    if (v >> i & 1) r |= 1ull << (32 - i);
  return r;
}

/// The folding constant for x^e: (x^e mod P) in the reflected 33-bit layout.
constexpr uint64_t k(unsigned e) { return reflect33(x_pow_mod(e)); }

constexpr uint64_t kFold4Hi = k(4 * 128 + 32);  ///< lane half H, forward 512 bits
constexpr uint64_t kFold4Lo = k(4 * 128 - 32);  ///< lane half L, forward 512 bits
constexpr uint64_t kFold1Hi = k(128 + 32);      ///< H forward 128 bits
constexpr uint64_t kFold1Lo = k(128 - 32);      ///< L forward 128 bits; also 128 -> 96 bits
constexpr uint64_t kFold96 = k(64);             ///< 96 -> 64 bits
constexpr uint64_t kMu = reflect33(x64_div_p());
constexpr uint64_t kPolyReflected = reflect33(kPoly);

// Cross-check of the derivation above against the values printed in Intel's paper and used by
// every reflected CRC-32 PCLMULQDQ implementation; a mismatch means the layout reasoning is off.
static_assert(kFold4Hi == 0x1'5444'2bd4 && kFold4Lo == 0x1'c6e4'1596);
static_assert(kFold1Hi == 0x1'7519'97d0 && kFold1Lo == 0x0'ccaa'009e);
static_assert(kFold96 == 0x1'63cd'6124);
static_assert(kMu == 0x1'f701'1641 && kPolyReflected == 0x1'db71'0641);

#define NDNIC_CLMUL __attribute__((target("pclmul,sse4.1")))

NDNIC_CLMUL inline __m128i load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

/// Carries `acc` forward over the distance encoded in `k` and adds the block found there.
NDNIC_CLMUL inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
  __m128i h = _mm_clmulepi64_si128(acc, k, 0x00);
  __m128i l = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(h, l), next);
}

}  // namespace

NDNIC_CLMUL uint32_t crc32_clmul(uint32_t crc, const uint8_t* p, size_t len) {
  const __m128i k1 = _mm_set_epi64x(int64_t(kFold1Lo), int64_t(kFold1Hi));
  // The initial register value is added to the first 32 message bits (zlib's pre-inversion).
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(~crc)));
  if (len >= 64) {
    const __m128i k4 = _mm_set_epi64x(int64_t(kFold4Lo), int64_t(kFold4Hi));
    __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
    for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
      x0 = fold(x0, k4, load(p));
      x1 = fold(x1, k4, load(p + 16));
      x2 = fold(x2, k4, load(p + 32));
      x3 = fold(x3, k4, load(p + 48));
    }
    x0 = fold(fold(fold(x0, k1, x1), k1, x2), k1, x3);
  } else {
    p += 16;
    len -= 16;
  }
  for (; len >= 16; p += 16, len -= 16) x0 = fold(x0, k1, load(p));

  // The CRC is x0(x) * x^32 mod P. 128 -> 96 bits: H * (x^96 mod P) + L * x^32.
  const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);
  __m128i x = _mm_xor_si128(_mm_clmulepi64_si128(x0, k1, 0x10), _mm_srli_si128(x0, 8));
  // 96 -> 64 bits: the top 32 bits times (x^64 mod P), added to the low 64.
  const __m128i k96 = _mm_set_epi64x(0, int64_t(kFold96));
  x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k96, 0x00),
                    _mm_srli_si128(x, 4));
  // Barrett: q = floor(top32 * mu / x^32), remainder = low32 + q * P.
  const __m128i pm = _mm_set_epi64x(int64_t(kMu), int64_t(kPolyReflected));
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), pm, 0x10);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, mask32), pm, 0x00);
  crc = ~uint32_t(_mm_extract_epi32(_mm_xor_si128(x, q), 1));
  return len ? crc32_table(crc, p, len) : crc;
}

#undef NDNIC_CLMUL

}  // namespace ndnic::wire::detail
