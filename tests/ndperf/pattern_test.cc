// ndperf's data pattern (tools/ndperf/pattern.h): check_pattern finds the first byte that
// differs from the pattern, at any offset and length (its blockwise check against the byte-by-
// byte definition), and passes an intact message of any length.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tools/ndperf/pattern.h"

namespace ndnic::ndperf {
namespace {

TEST(Pattern, CheckFindsTheFirstDamagedByteAtAnyOffset) {
  for (const uint8_t seed : {uint8_t(0x11), uint8_t(0xEF)}) {
    for (const size_t len : {size_t(0), size_t(1), size_t(255), size_t(256), size_t(257), size_t(4096),
                             size_t(70000)}) {
      std::vector<uint8_t> buf(len);
      fill_pattern(buf.data(), len, seed);
      for (size_t i = 0; i < len; i++) ASSERT_EQ(buf[i], pattern_byte(i, seed));
      EXPECT_EQ(check_pattern(buf.data(), len, seed), -1) << len;
      for (size_t at = 0; at < len; at += (len > 5000 ? 97 : 1)) {
        buf[at] ^= 0x20;
        if (at + 300 < len) buf[at + 300] ^= 1;  // a second one after it: the first is reported
        ASSERT_EQ(check_pattern(buf.data(), len, seed), int64_t(at)) << "len " << len;
        buf[at] ^= 0x20;
        if (at + 300 < len) buf[at + 300] ^= 1;
      }
    }
  }
  // A block that landed 256 bytes off is caught.
  std::vector<uint8_t> buf(1024);
  fill_pattern(buf.data(), 1024, 0x33);
  EXPECT_EQ(check_pattern(buf.data(), 1024, 0x33), -1);
  std::copy(buf.begin(), buf.begin() + 256, buf.begin() + 256);  // offsets 0..255's bytes at 256..511
  EXPECT_EQ(check_pattern(buf.data(), 1024, 0x33), 256);
}

}  // namespace
}  // namespace ndnic::ndperf
