// Chooses the CRC-32 implementation once, at load time.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>

#include "wire/crc32_clmul.h"
#include "wire/icrc.h"

namespace ndnic::wire {
namespace detail {
namespace {

// Below this many bytes the fold's fixed cost (reduction, plus a table tail) is no cheaper than
// slicing-by-8. Measured call latency (perf/bench_icrc, BM_crossover_*): tied at 16-31 bytes,
// the fold 1.6x faster at 32 and 2.2x at 64.
constexpr size_t kClmulCrossover = 32;
static_assert(kClmulCrossover >= kClmulMinLen);

// The 512-bit fold is ahead of the 128-bit one from the shortest input it takes. Measured on an
// AMD EPYC with AVX-512 (perf/bench_icrc): call latency (BM_crossover_vpclmul against
// BM_crossover_wide_clmul) 14.1 vs 14.6 ns at 64 bytes, 18.4 vs 20.2 at 256, 21.2 vs 36.2 at
// 512; throughput (BM_crc32_vpclmul, BM_crc32_pclmul) 5.3 vs 6.0 ns at 64, 9.2 vs 18.8 at 256.
constexpr size_t kVpclmulCrossover = kVpclmulMinLen;

// The 256-bit fold (CPUs with VPCLMULQDQ but not AVX-512) against the 128-bit one, measured on
// an AMD EPYC without AVX-512 (perf/bench_icrc): call latency (BM_crossover_vpclmul256 against
// BM_crossover_ymm_clmul) 12.8 vs 12.4 ns at 32 bytes, 15.2 vs 14.3 at 48, 14.7 vs 16.5 at 64,
// 20.0 vs 24.3 at 256; throughput (BM_crc32_vpclmul256, BM_crc32_pclmul) 22.5 vs 41.5 ns at
// 512, 162 vs 323 at 4096. The fused copies: 7.2 vs 7.8 ns at 64 bytes, 24.8 vs 47.7 at 512.
constexpr size_t kVpclmul256Crossover = 64;
static_assert(kVpclmul256Crossover >= kVpclmul256MinLen);

// The fused copies against memcpy followed by the same CRC kernel (BM_crossover_copy_*, calls
// back to back): the 128-bit one 5.5 vs 11.7 ns at 32 bytes, 28.8 vs 33.2 at 256; the 512-bit
// one 5.5 vs 5.8 ns at 64, 14.5 vs 16.2 at 512. Below 32 bytes the table keeps the lower
// latency, as for crc32().
constexpr size_t kCopyClmulCrossover = kClmulCrossover;
constexpr size_t kCopyVpclmulCrossover = kVpclmulCrossover;
constexpr size_t kCopyVpclmul256Crossover = kVpclmul256Crossover;

constexpr std::pair<const char*, CrcPath> kPathNames[] = {
    {"table", CrcPath::kTable}, {"pclmul", CrcPath::kPclmul},
    {"vpclmul256", CrcPath::kVpclmul256}, {"vpclmul", CrcPath::kVpclmul}};

CrcPath choose_at_start() {
  const char* env = std::getenv("NDNIC_CRC");
  const CrcPath best = crc_path_best();
  // A typo would otherwise silently test or time the default path.
  if (env != nullptr && *env != '\0' &&
      std::none_of(std::begin(kPathNames), std::end(kPathNames),
                   [env](const auto& n) { return std::strcmp(n.first, env) == 0; }))
    std::fprintf(stderr, "ndnic: NDNIC_CRC=%s is none of table, pclmul, vpclmul256, vpclmul; ignored\n", env);
  return crc_path_choose(env, best);
}

// Inlined into crc32() as well as crc32_on(): calling through crc32_on() cost crc32() 0.3 ns.
inline uint32_t crc32_with(CrcPath path, uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (path == CrcPath::kVpclmul && len >= kVpclmulCrossover) return crc32_vpclmul(crc, p, len);
  if (path == CrcPath::kVpclmul256 && len >= kVpclmul256Crossover)
    return crc32_vpclmul256(crc, p, len);
  if (path != CrcPath::kTable && len >= kClmulCrossover) return crc32_clmul(crc, p, len);
  return crc32_table(crc, p, len);
}

inline uint32_t crc32_copy_with(CrcPath path, uint32_t crc, void* dst, const void* src,
                                size_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  if (path == CrcPath::kVpclmul && len >= kCopyVpclmulCrossover)
    return crc32_copy_vpclmul(crc, d, s, len);
  if (path == CrcPath::kVpclmul256 && len >= kCopyVpclmul256Crossover)
    return crc32_copy_vpclmul256(crc, d, s, len);
  if (path != CrcPath::kTable && len >= kCopyClmulCrossover)
    return crc32_copy_clmul(crc, d, s, len);
  if (len != 0) std::memcpy(d, s, len);  // callers may pass null with nothing to copy
  return crc32_with(path, crc, s, len);
}

// Dynamically initialised: a caller from another translation unit's static initialiser that
// runs first sees kTable (zero), which is slower but equally correct.
const CrcPath g_path = choose_at_start();

}  // namespace

CrcPath crc_path_best() {
  __builtin_cpu_init();  // we may run before libgcc's own constructor
  if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
    return CrcPath::kTable;
  // libgcc reports the AVX-512 features only where the OS saves the zmm and mask registers.
  if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return CrcPath::kVpclmul;
  // AVX2 likewise only where the OS saves the ymm registers.
  if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2"))
    return CrcPath::kVpclmul256;
  return CrcPath::kPclmul;
}

CrcPath crc_path_choose(const char* env, CrcPath best) {
  if (env == nullptr) return best;
  for (const auto& [name, path] : kPathNames)
    if (std::strcmp(name, env) == 0) return std::min(path, best);  // a CPU has every narrower path
  return best;
}

uint32_t crc32_on(CrcPath path, uint32_t crc, const void* data, size_t len) {
  return crc32_with(path, crc, data, len);
}

uint32_t crc32_copy_on(CrcPath path, uint32_t crc, void* dst, const void* src, size_t len) {
  return crc32_copy_with(path, crc, dst, src, len);
}

}  // namespace detail

uint32_t crc32_nonempty(uint32_t crc, const void* data, size_t len) {
  return detail::crc32_with(detail::g_path, crc, data, len);
}

uint32_t crc32_copy(uint32_t crc, void* dst, const void* src, size_t len) {
  return detail::crc32_copy_with(detail::g_path, crc, dst, src, len);
}

bool crc32_uses_clmul() { return detail::g_path != detail::CrcPath::kTable; }

const char* crc32_path() {
  switch (detail::g_path) {
    case detail::CrcPath::kVpclmul: return "vpclmulqdq";
    case detail::CrcPath::kVpclmul256: return "vpclmulqdq-256";
    case detail::CrcPath::kPclmul: return "pclmulqdq";
    case detail::CrcPath::kTable: break;
  }
  return "table";
}

}  // namespace ndnic::wire
