// crc32_copy() for CPUs with PCLMULQDQ but not VPCLMULQDQ: crc32_clmul.cc's four-lane fold,
// storing each 16-byte block to the destination right after loading it, so a received payload
// is read from memory once rather than once for the copy and again for its ICRC.
#include <immintrin.h>

#include <cstring>

#include "wire/crc32_clmul.h"

namespace ndnic::wire::detail {
namespace {

// Lane distances as in crc32_vpclmul.cc: 512 bits over the three lanes in flight beside it, 128
// onto the next lane.
constexpr uint64_t kFold512Hi = fold_const::hi(512), kFold512Lo = fold_const::lo(512);
constexpr uint64_t kFold128Hi = fold_const::hi(128), kFold128Lo = fold_const::lo(128);
static_assert(kFold512Hi == 0x1'5444'2bd4 && kFold128Lo == 0x0'ccaa'009e);

#define NDNIC_CLMUL __attribute__((target("pclmul,sse4.1")))

/// Loads 16 bytes, stores them to dst and advances both.
NDNIC_CLMUL inline __m128i take(const uint8_t*& src, uint8_t*& dst) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
  src += 16;
  dst += 16;
  return v;
}

NDNIC_CLMUL inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00),
                                     _mm_clmulepi64_si128(acc, k, 0x11)),
                       next);
}

}  // namespace

NDNIC_CLMUL uint32_t crc32_copy_clmul(uint32_t crc, uint8_t* dst, const uint8_t* src,
                                      size_t len) {
  const __m128i k1 = _mm_set_epi64x(int64_t(kFold128Lo), int64_t(kFold128Hi));
  __m128i x0 = _mm_xor_si128(take(src, dst), _mm_cvtsi32_si128(int(~crc)));
  len -= 16;
  if (len >= 48) {
    __m128i x1 = take(src, dst), x2 = take(src, dst), x3 = take(src, dst);
    len -= 48;
    const __m128i k4 = _mm_set_epi64x(int64_t(kFold512Lo), int64_t(kFold512Hi));
    for (; len >= 64; len -= 64) {
      x0 = fold(x0, k4, take(src, dst));
      x1 = fold(x1, k4, take(src, dst));
      x2 = fold(x2, k4, take(src, dst));
      x3 = fold(x3, k4, take(src, dst));
    }
    x0 = fold(fold(fold(x0, k1, x1), k1, x2), k1, x3);
  }
  for (; len >= 16; len -= 16) x0 = fold(x0, k1, take(src, dst));

  if (len != 0) {
    std::memcpy(dst, src, len);
    x0 = fold_partial(x0, src + len, len);
  }
  return reduce128(x0);
}

#undef NDNIC_CLMUL

}  // namespace ndnic::wire::detail
