// The Toeplitz hash ndnic expects ports to compute, against the verification vectors of
// Microsoft's RSS specification (IPv4 with ports, the default key).
#include <gtest/gtest.h>

#include "pmd_glue/rss.h"

namespace ndnic::glue {
namespace {

constexpr uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) { return a << 24 | b << 16 | c << 8 | d; }

TEST(Rss, MatchesThePublishedVectors) {
  struct V {
    uint32_t src, dst;
    uint16_t sport, dport;
    uint32_t hash;
  };
  const V vectors[] = {
      {ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766, 0x51ccc178},
      {ip(199, 92, 111, 2), ip(65, 69, 140, 83), 14230, 4739, 0xc626b0ea},
      {ip(24, 19, 198, 95), ip(12, 22, 207, 184), 12898, 38024, 0x5c2b394a},
      {ip(38, 27, 205, 30), ip(209, 142, 163, 6), 48228, 2217, 0xafc7327f},
      {ip(153, 39, 163, 191), ip(202, 188, 127, 2), 44251, 1303, 0x10e828a2},
  };
  for (const V& v : vectors) EXPECT_EQ(rss_hash_ipv4_udp(v.src, v.dst, v.sport, v.dport), v.hash);
}

}  // namespace
}  // namespace ndnic::glue
