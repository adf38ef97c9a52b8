// CRC-32 by carry-less multiplication (Gopal et al., Intel, "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", 2009): fold four 128-bit lanes 64 bytes at a time,
// fold the lanes into one, reduce 128 -> 64 bits, then Barrett-reduce to the 32-bit remainder.
//
// Layout. The CRC is reflected, so a 128-bit register loaded little-endian holds the message
// polynomial with bit k as the coefficient of x^(127-k). PCLMULQDQ of a 64-bit lane in that
// layout by a 33-bit constant whose bit j is the coefficient of x^(32-j) gives a product whose
// bit k is x^(95-k). Folding lane half H (x^127..x^64) forward by D bits therefore needs
// x^(D+32) mod P, and the other half L (x^63..x^0) needs x^(D-32) mod P. Every constant is
// computed from the polynomial alone (fold_const in crc32_clmul.h, which the wide kernels share).
//
// Compiled for pclmul + sse4.1 by function attributes, so the rest of the build needs no -m
// flags; crc32.cc only calls in here after checking the CPU.
#include "wire/crc32_clmul.h"

#include <immintrin.h>

#include "wire/icrc.h"

namespace ndnic::wire::detail {
namespace {

// The fold constants (crc32_clmul.h derives them from the polynomial).
constexpr uint64_t kFold4Hi = fold_const::hi(4 * 128);  ///< lane half H, forward 512 bits
constexpr uint64_t kFold4Lo = fold_const::lo(4 * 128);  ///< lane half L, forward 512 bits
constexpr uint64_t kFold1Hi = fold_const::hi(128);      ///< H forward 128 bits
constexpr uint64_t kFold1Lo = fold_const::lo(128);      ///< L forward 128 bits

// Cross-check of the derivation against the values printed in Intel's paper and used by
// every reflected CRC-32 PCLMULQDQ implementation; a mismatch means the layout reasoning is off.
static_assert(kFold4Hi == 0x1'5444'2bd4 && kFold4Lo == 0x1'c6e4'1596);
static_assert(kFold1Hi == 0x1'7519'97d0 && kFold1Lo == 0x0'ccaa'009e);

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

  crc = reduce128(x0);
  return len ? crc32_table(crc, p, len) : crc;
}

#undef NDNIC_CLMUL

}  // namespace ndnic::wire::detail
