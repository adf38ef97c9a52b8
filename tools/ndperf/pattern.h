// The bytes every data message carries, so the receiving end can check that they landed where
// they belong. A byte depends on its offset in the message and on a seed (the test and the
// direction), not on the message size: a message of any size is a prefix of the same pattern,
// so one fill of the send area serves a whole sweep. Between sizes the receiving area is
// zeroed, so a message that did not arrive (or arrived short) shows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tools/ndperf/catalog.h"

namespace ndnic::ndperf {

enum class Direction : uint8_t { kToServer, kToClient };

uint8_t pattern_seed(Test t, Direction d);
uint8_t pattern_byte(size_t offset, uint8_t seed);
void fill_pattern(uint8_t* buf, size_t len, uint8_t seed);
/// The offset of the first byte that differs from the pattern, or -1.
int64_t check_pattern(const uint8_t* buf, size_t len, uint8_t seed);

}  // namespace ndnic::ndperf
