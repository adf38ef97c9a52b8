// Chooses the CRC-32 implementation once, at load time.
#include "wire/icrc.h"

namespace ndnic::wire {

uint32_t crc32(uint32_t crc, const void* data, size_t len) { return crc32_table(crc, data, len); }

bool crc32_uses_clmul() { return false; }

}  // namespace ndnic::wire
