// Sorting received frames: classify(), which recognises the usual RoCEv2 frame in place, gives
// every frame the verdict of classify_full(), which reads header by header: RoCEv2 frames,
// each one damaged in any bit of its headers, cut short, split across two segments, with and
// without a VLAN tag, over IPv6, for a port promiscuous or not, with an address or without.
#include <gtest/gtest.h>

#include <rte_mbuf.h>

#include <cstring>
#include <random>
#include <vector>

#include "pmd_glue/classify.h"
#include "tests/fixtures/packet_builder.h"

namespace ndnic::glue {
namespace {

/// A frame as a port hands it over: one segment, or two split at `split` (0: one).
struct Frame {
  std::vector<uint8_t> bytes;
  rte_mbuf head{}, tail{};

  Frame(std::vector<uint8_t> b, size_t split, size_t pkt_len) : bytes(std::move(b)) {
    const size_t first = split ? split : bytes.size();
    head.buf_addr = bytes.data();
    head.data_len = uint16_t(first);
    head.pkt_len = uint32_t(pkt_len);
    head.nb_segs = 1;
    if (split) {
      tail.buf_addr = bytes.data() + split;
      tail.data_len = uint16_t(bytes.size() - split);
      tail.pkt_len = tail.data_len;
      tail.nb_segs = 1;
      head.next = &tail;
      head.nb_segs = 2;
    }
  }
};

bool same(const Classified& a, const Classified& b) {
  return a.verdict == b.verdict && (a.verdict != Verdict::kDrop || a.drop == b.drop);
}

TEST(Classify, InPlaceGivesTheFullVerdict) {
  std::mt19937_64 rng(21);
  const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x00, 0x02};  // build_packet's destination
  Identity us{};
  std::memcpy(us.mac.addr_bytes, mac, 6);
  int roce = 0, dropped = 0;
  std::vector<int> reasons(size_t(Drop::kCount));
  for (int i = 0; i < 20000; i++) {
    us.ipv4 = i % 11 == 0 ? 0 : 0xC6120002;  // build_packet's destination address
    us.promiscuous = i % 13 == 0;
    auto b = wire::testing::build_packet(wire::kRcSendOnly, uint32_t(rng() % 200), rng,
                                         /*ipv6=*/i % 17 == 0, /*vlan=*/i % 19 == 0);
    std::vector<uint8_t> f = b.frame;
    size_t pkt_len = f.size();
    switch (i % 4) {
      case 0: break;  // intact
      case 1: f[rng() % 44] ^= uint8_t(1 << (rng() % 8)); break;  // one bit of the headers
      case 2: f[rng() % 44] = uint8_t(rng()); break;               // one byte of them
      case 3: pkt_len = rng() % (f.size() + 1); f.resize(pkt_len); break;  // cut short
    }
    const size_t split = i % 3 == 0 && f.size() > 1 ? 1 + rng() % (f.size() - 1) : 0;
    Frame fr(std::move(f), split, pkt_len);
    const Classified fast = classify(&fr.head, us), full = classify_full(&fr.head, us);
    ASSERT_TRUE(same(fast, full)) << "frame " << i << ": " << int(fast.verdict) << "/" << int(fast.drop)
                                  << " against " << int(full.verdict) << "/" << int(full.drop);
    roce += full.verdict == Verdict::kRoce;
    if (full.verdict == Verdict::kDrop) {
      dropped++;
      reasons[size_t(full.drop)]++;
    }
  }
  // Both ways were taken, and the drops came for many reasons.
  EXPECT_GT(roce, 5000);
  EXPECT_GT(dropped, 2000);
  for (Drop d : {Drop::kNotOurMac, Drop::kIpv6, Drop::kVlan, Drop::kIpHeader, Drop::kIpFragment, Drop::kNotUdp,
                 Drop::kNotRocePort, Drop::kNotOurIp, Drop::kRuntFrame})
    EXPECT_GT(reasons[size_t(d)], 0) << "no frame dropped for reason " << int(d);
}

}  // namespace
}  // namespace ndnic::glue
