// Chooses the CRC-32 implementation once, at load time.
#include "wire/crc32_clmul.h"
#include "wire/icrc.h"

namespace ndnic::wire {
namespace {

// Below this many bytes the fold's fixed cost (reduction, plus a table tail) is no cheaper than
// slicing-by-8. Measured call latency (perf/bench_icrc, BM_crossover_*): tied at 16-31 bytes,
// the fold 1.6x faster at 32 and 2.2x at 64.
constexpr size_t kClmulCrossover = 32;
static_assert(kClmulCrossover >= detail::kClmulMinLen);

bool detect_clmul() {
  __builtin_cpu_init();  // we may run before libgcc's own constructor
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

// Dynamically initialised: a caller from another translation unit's static initialiser that
// runs first sees false and takes the table path, which is slower but equally correct.
const bool g_use_clmul = detect_clmul();

}  // namespace

uint32_t crc32(uint32_t crc, const void* data, size_t len) {
  if (g_use_clmul && len >= kClmulCrossover)
    return detail::crc32_clmul(crc, static_cast<const uint8_t*>(data), len);
  return crc32_table(crc, data, len);
}

bool crc32_uses_clmul() { return g_use_clmul; }

}  // namespace ndnic::wire
