// The payload every data message carries. It depends on the message's size and direction and
// on each byte's offset, not on the message's sequence number: the SDK's receives all land in
// one buffer, so a later message of the same size may overwrite an earlier one while it is
// being checked, and must then write the same bytes. A byte at the wrong offset, a truncated
// message or a stale one (from another size or the other direction) still shows.
#pragma once

#include <cstdint>

namespace ndnic::ndping {

enum class Direction : uint8_t { kToServer, kToClient };

void fill_pattern(uint8_t* buf, uint32_t len, Direction d);

/// The offset of the first byte that differs from the pattern, or -1 when all match.
int64_t check_pattern(const uint8_t* buf, uint32_t len, Direction d);

}  // namespace ndnic::ndping
