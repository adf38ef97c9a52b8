// CRC-32 by VPCLMULQDQ on 256-bit registers, for CPUs that have the instruction but not
// AVX-512 (AMD Zen 3, Intel Alder Lake and later client cores). The folding of crc32_clmul.cc
// (Gopal et al., Intel, 2009) with two independent 128-bit lanes per register: four registers
// fold 128 bytes a step, then collapse into one, whose two lanes collapse into the 128-bit
// remainder that takes in the last bytes and is Barrett-reduced as in crc32_clmul.cc.
//
// Why a kernel of its own: on such a CPU one VPCLMULQDQ on a ymm register costs what one
// PCLMULQDQ costs, so this folds twice the bytes per instruction of the 128-bit kernel
// (perf/bench_icrc, BM_crc32_vpclmul256 against BM_crc32_pclmul; figures in crc32.cc).
//
// As in crc32_vpclmul.cc, the same routine with a copy is crc32_copy(): each register is
// stored right after it is loaded, so a received payload is read from memory once.
//
// Compiled for AVX2 + VPCLMULQDQ by function attributes; crc32.cc only calls in here after
// checking the CPU.
#include <immintrin.h>

#include <cstring>

#include "wire/crc32_clmul.h"

namespace ndnic::wire::detail {
namespace {

// Each pair carries a 128-bit lane forward by the bits in its name (fold_const in
// crc32_clmul.h): 1024, a register over the three in flight beside it; 256 and 512, one
// register onto the next or the one after; 128, a lane onto the next.
constexpr uint64_t kFold1024Hi = fold_const::hi(1024), kFold1024Lo = fold_const::lo(1024);
constexpr uint64_t kFold512Hi = fold_const::hi(512), kFold512Lo = fold_const::lo(512);
constexpr uint64_t kFold256Hi = fold_const::hi(256), kFold256Lo = fold_const::lo(256);
constexpr uint64_t kFold128Hi = fold_const::hi(128), kFold128Lo = fold_const::lo(128);
static_assert(kFold128Hi == 0x1'7519'97d0 && kFold512Hi == 0x1'5444'2bd4);

#define NDNIC_VPCLMUL256 __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))

/// The same pair in both lanes.
NDNIC_VPCLMUL256 inline __m256i lanes(uint64_t hi, uint64_t lo) {
  return _mm256_set_epi64x(int64_t(lo), int64_t(hi), int64_t(lo), int64_t(hi));
}

/// Carries both lanes of `acc` forward over the distance encoded in `k` and adds `next`.
NDNIC_VPCLMUL256 inline __m256i fold(__m256i acc, __m256i k, __m256i next) {
  return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(acc, k, 0x00),
                                           _mm256_clmulepi64_epi128(acc, k, 0x11)),
                          next);
}

NDNIC_VPCLMUL256 inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00),
                                     _mm_clmulepi64_si128(acc, k, 0x11)),
                       next);
}

/// The input, read front to back; with kCopy every byte read is also written to dst.
template <bool kCopy>
struct Stream {
  const uint8_t* src;
  uint8_t* dst;  // unused without kCopy

  NDNIC_VPCLMUL256 __m256i next256() {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    src += 32;
    if constexpr (kCopy) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
      dst += 32;
    }
    return v;
  }

  NDNIC_VPCLMUL256 __m128i next128() {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    src += 16;
    if constexpr (kCopy) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
      dst += 16;
    }
    return v;
  }

  /// Copies the last n < 16 bytes (AVX2 has no byte-masked store).
  void copy_tail(size_t n) {
    if constexpr (kCopy) std::memcpy(dst, src, n);
  }
};

template <bool kCopy>
NDNIC_VPCLMUL256 uint32_t crc32_fold256(uint32_t crc, Stream<kCopy> in, size_t len) {
  // zlib's pre-inversion: the initial register value is added to the first 32 message bits.
  __m256i y0 = _mm256_xor_si256(in.next256(), _mm256_zextsi128_si256(_mm_cvtsi32_si128(int(~crc))));
  len -= 32;
  if (len >= 3 * 32) {
    __m256i y1 = in.next256(), y2 = in.next256(), y3 = in.next256();
    len -= 3 * 32;
    const __m256i k4 = lanes(kFold1024Hi, kFold1024Lo);
    for (; len >= 4 * 32; len -= 4 * 32) {
      y0 = fold(y0, k4, in.next256());
      y1 = fold(y1, k4, in.next256());
      y2 = fold(y2, k4, in.next256());
      y3 = fold(y3, k4, in.next256());
    }
    // In pairs, so the four collapse in two dependent steps rather than three.
    const __m256i k1 = lanes(kFold256Hi, kFold256Lo), k2 = lanes(kFold512Hi, kFold512Lo);
    y0 = fold(fold(y0, k1, y1), k2, fold(y2, k1, y3));
  }
  const __m256i k1 = lanes(kFold256Hi, kFold256Lo);
  for (; len >= 32; len -= 32) y0 = fold(y0, k1, in.next256());

  const __m128i k128 = _mm_set_epi64x(int64_t(kFold128Lo), int64_t(kFold128Hi));
  __m128i x = fold(_mm256_castsi256_si128(y0), k128, _mm256_extracti128_si256(y0, 1));
  for (; len >= 16; len -= 16) x = fold(x, k128, in.next128());

  if (len != 0) {
    in.copy_tail(len);
    x = fold_partial(x, in.src + len, len);
  }
  return reduce128(x);
}

}  // namespace

NDNIC_VPCLMUL256 uint32_t crc32_vpclmul256(uint32_t crc, const uint8_t* p, size_t len) {
  return crc32_fold256(crc, Stream<false>{p, nullptr}, len);
}

NDNIC_VPCLMUL256 uint32_t crc32_copy_vpclmul256(uint32_t crc, uint8_t* dst, const uint8_t* src,
                                                size_t len) {
  return crc32_fold256(crc, Stream<true>{src, dst}, len);
}

#undef NDNIC_VPCLMUL256

}  // namespace ndnic::wire::detail
