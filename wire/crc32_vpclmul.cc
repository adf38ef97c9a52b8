// CRC-32 by VPCLMULQDQ: the folding of crc32_clmul.cc (Gopal et al., Intel, "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction", 2009) on 512-bit registers,
// each four independent 128-bit lanes that one instruction multiplies at once. Four registers
// fold 256 bytes a step; then the four fold into one, its lanes into one 128-bit remainder, which
// takes in the last bytes and is Barrett-reduced as in crc32_clmul.cc.
//
// The same routine, instantiated with a copy, is crc32_copy(): the receive path copies a
// payload into the application's buffer and must check its ICRC, and storing each register
// right after loading it reads the payload from memory once instead of twice.
//
// Compiled for AVX-512 by function attributes, so the rest of the build keeps its -march;
// crc32.cc only calls in here after checking the CPU.
#include <immintrin.h>

#include "wire/crc32_clmul.h"
#include "wire/prefetch.h"

namespace ndnic::wire::detail {
namespace {

// Each constant pair carries a 128-bit lane forward by the number of bits in its name
// (fold_const in crc32_clmul.h says how). 2048: a register over the three in flight beside it;
// 512 and 1024: one register onto the next, or the one after; 384/256/128: a register's lanes
// onto its last.
constexpr uint64_t kFold2048Hi = fold_const::hi(2048), kFold2048Lo = fold_const::lo(2048);
constexpr uint64_t kFold1024Hi = fold_const::hi(1024), kFold1024Lo = fold_const::lo(1024);
constexpr uint64_t kFold512Hi = fold_const::hi(512), kFold512Lo = fold_const::lo(512);
constexpr uint64_t kFold384Hi = fold_const::hi(384), kFold384Lo = fold_const::lo(384);
constexpr uint64_t kFold256Hi = fold_const::hi(256), kFold256Lo = fold_const::lo(256);
constexpr uint64_t kFold128Hi = fold_const::hi(128), kFold128Lo = fold_const::lo(128);

// Published values (Intel's paper for 128 and 512; zlib-ng's 512-bit kernel for 2048), so a
// slip in the derivation fails the build rather than a test.
static_assert(kFold128Hi == 0x1'7519'97d0 && kFold128Lo == 0x0'ccaa'009e);
static_assert(kFold512Hi == 0x1'5444'2bd4 && kFold512Lo == 0x1'c6e4'1596);
static_assert(kFold2048Hi == 0x1'1542'778a && kFold2048Lo == 0x1'322d'1430);

#define NDNIC_VPCLMUL \
  __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1")))

/// The same pair in all four lanes.
NDNIC_VPCLMUL inline __m512i lanes(uint64_t hi, uint64_t lo) {
  return _mm512_set_epi64(int64_t(lo), int64_t(hi), int64_t(lo), int64_t(hi), int64_t(lo),
                          int64_t(hi), int64_t(lo), int64_t(hi));
}

/// Carries every lane of `acc` forward over the distance encoded in `k` and adds `next`.
NDNIC_VPCLMUL inline __m512i fold(__m512i acc, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00),
                                   _mm512_clmulepi64_epi128(acc, k, 0x11), next, 0x96);
}

NDNIC_VPCLMUL inline __m128i fold(__m128i acc, __m128i k, __m128i next) {
  return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(acc, k, 0x00),
                                _mm_clmulepi64_si128(acc, k, 0x11), next, 0x96);
}

/// The input, read front to back; with kCopy every byte read is also written to dst.
template <bool kCopy>
struct Stream {
  const uint8_t* src;
  uint8_t* dst;  // unused without kCopy

  NDNIC_VPCLMUL __m512i next512() {
    const __m512i v = _mm512_loadu_si512(src);
    src += 64;
    if constexpr (kCopy) {
      _mm512_storeu_si512(dst, v);
      dst += 64;
    }
    return v;
  }

  NDNIC_VPCLMUL __m128i next128() {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    src += 16;
    if constexpr (kCopy) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
      dst += 16;
    }
    return v;
  }

  /// Asks for the destination's lines kClaimAhead..kClaimAhead+3 ahead for writing, while at
  /// least that much is left to copy. A transmit buffer was last read by the core that received
  /// it, so each store would otherwise wait for that core to give its line up, one line at a
  /// time: ndperf write_bw 64 KiB +15% where the two cores sit far apart, no change (and none
  /// in bench_icrc) where they are near.
  NDNIC_VPCLMUL void claim_ahead(size_t left) {
    if constexpr (kCopy) {
      constexpr size_t kClaimAhead = 8;
      if (left < (kClaimAhead + 4) * 64) return;
      for (size_t l = kClaimAhead; l < kClaimAhead + 4; l++) prefetch_to_write(dst + l * 64);
    }
  }

  /// Copies the last n < 16 bytes. Masked, so nothing past them is touched.
  NDNIC_VPCLMUL void copy_tail(size_t n) {
    if constexpr (kCopy) {
      const __mmask16 m = __mmask16((1u << n) - 1);
      _mm_mask_storeu_epi8(dst, m, _mm_maskz_loadu_epi8(m, src));
    }
  }
};

/// One 128-bit remainder congruent to the 512 bits in z: lanes 0-2 carried onto lane 3.
NDNIC_VPCLMUL inline __m128i reduce512(__m512i z) {
  const __m512i k = _mm512_set_epi64(0, 0, int64_t(kFold128Lo), int64_t(kFold128Hi),
                                     int64_t(kFold256Lo), int64_t(kFold256Hi),
                                     int64_t(kFold384Lo), int64_t(kFold384Hi));
  // Lane 3's constants are zero, so its products vanish and it is added as it is.
  const __m512i t = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
                                              _mm512_clmulepi64_epi128(z, k, 0x11),
                                              _mm512_maskz_mov_epi64(0xc0, z), 0x96);
  // The maskz forms: GCC 12 warns about the undefined upper bits the unmasked ones start from.
  const __m256i h = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xff, t, 0),
                                     _mm512_maskz_extracti64x4_epi64(0xff, t, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

template <bool kCopy>
NDNIC_VPCLMUL uint32_t crc32_fold512(uint32_t crc, Stream<kCopy> in, size_t len) {
  // zlib's pre-inversion: the initial register value is added to the first 32 message bits.
  __m512i z0 = _mm512_xor_si512(in.next512(), _mm512_maskz_set1_epi32(1, int(~crc)));
  len -= 64;
  if (len >= 3 * 64) {
    __m512i z1 = in.next512(), z2 = in.next512(), z3 = in.next512();
    len -= 3 * 64;
    const __m512i k4 = lanes(kFold2048Hi, kFold2048Lo);
    for (; len >= 4 * 64; len -= 4 * 64) {
      in.claim_ahead(len);
      z0 = fold(z0, k4, in.next512());
      z1 = fold(z1, k4, in.next512());
      z2 = fold(z2, k4, in.next512());
      z3 = fold(z3, k4, in.next512());
    }
    // In pairs, so the four collapse in two dependent steps rather than three.
    const __m512i k1 = lanes(kFold512Hi, kFold512Lo), k2 = lanes(kFold1024Hi, kFold1024Lo);
    z0 = fold(fold(z0, k1, z1), k2, fold(z2, k1, z3));
  }
  const __m512i k1 = lanes(kFold512Hi, kFold512Lo);
  for (; len >= 64; len -= 64) z0 = fold(z0, k1, in.next512());

  __m128i x = reduce512(z0);
  const __m128i k128 = _mm_set_epi64x(int64_t(kFold128Lo), int64_t(kFold128Hi));
  for (; len >= 16; len -= 16) x = fold(x, k128, in.next128());

  if (len != 0) {
    in.copy_tail(len);
    x = fold_partial(x, in.src + len, len);
  }
  return reduce128(x);
}

}  // namespace

NDNIC_VPCLMUL uint32_t crc32_vpclmul(uint32_t crc, const uint8_t* p, size_t len) {
  return crc32_fold512(crc, Stream<false>{p, nullptr}, len);
}

NDNIC_VPCLMUL uint32_t crc32_copy_vpclmul(uint32_t crc, uint8_t* dst, const uint8_t* src,
                                          size_t len) {
  return crc32_fold512(crc, Stream<true>{src, dst}, len);
}

#undef NDNIC_VPCLMUL

}  // namespace ndnic::wire::detail
