// Real frames, damaged: every truncation and every single-byte corruption of a golden RoCEv2
// frame must be refused with a named reason. Each damaged copy lives in a buffer of exactly its
// length, so a sanitizer build catches any read past the end.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

#include "tests/golden/golden_captures.h"

namespace ndnic::test {
namespace {

using wire::Reject;

Reject decode_exact(const uint8_t* data, size_t len) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[len ? len : 1]);
  if (len) std::memcpy(copy.get(), data, len);
  wire::RocePacket p;
  return wire::decode_frame(copy.get(), len, &p);
}

bool is_named_reject(Reject r) {
  return r != Reject::kOk && r < Reject::kCount && std::string(wire::reject_name(r)) != "invalid";
}

/// Bits that no check covers, by design, so flipping them is not an error: the UDP checksum
/// (RoCEv2 senders leave it 0 and the ICRC masks it), the BTH's resv8 (masked by the ICRC,
/// ignored on receipt) and, for IPv6, traffic class, flow label and hop limit (masked, and
/// IPv6 has no header checksum). IPv4's TOS and TTL are masked too but its checksum covers them.
bool flip_is_undetectable(const wire::RocePacket& p, size_t off, uint8_t mask) {
  const size_t l3 = l3_offset(p), bth = bth_offset(p);
  if (off == bth - 2 || off == bth - 1) return true;  // UDP checksum
  if (off == bth + 4) return true;                    // BTH resv8
  if (!p.ipv6) return false;
  if (off == l3) return (mask & 0xf0) == 0;           // version nibble is checked, TC nibble not
  return off == l3 + 1 || off == l3 + 2 || off == l3 + 3 || off == l3 + 7;
}

class GoldenMutation : public ::testing::TestWithParam<GoldenFile> {};

TEST_P(GoldenMutation, EveryTruncationIsANamedReject) {
  std::vector<DecodedFrame> frames;
  std::string error;
  ASSERT_TRUE(decode_capture(GetParam().path, &frames, &error)) << error;
  size_t tried = 0;
  for (const DecodedFrame& f : frames) {
    if (f.result != Reject::kOk) continue;
    // Stop at the end of the IP packet: bytes after it are Ethernet padding, not RoCE.
    const size_t end = wire::frame_length(f.pkt);
    for (size_t n = 0; n < end; n++) {
      const Reject r = decode_exact(f.bytes.data(), n);
      ASSERT_TRUE(is_named_reject(r)) << "frame " << f.number << " cut to " << n << " bytes: "
                                      << wire::reject_name(r);
      tried++;
    }
  }
  std::printf("%s: %zu truncations rejected\n", GetParam().path.c_str(), tried);
}

TEST_P(GoldenMutation, EveryCoveredByteFlipIsANamedReject) {
  std::vector<DecodedFrame> frames;
  std::string error;
  ASSERT_TRUE(decode_capture(GetParam().path, &frames, &error)) << error;
  // One bit at either end of the byte, and the whole byte; the ICRC (a CRC-32) catches every
  // error burst of 32 bits or less, the IPv4 checksum every single-byte change.
  constexpr uint8_t kMasks[] = {0x01, 0x80, 0xff};
  size_t tried = 0;
  std::map<std::string, size_t> reasons;
  for (const DecodedFrame& f : frames) {
    if (f.result != Reject::kOk) continue;
    std::vector<uint8_t> copy = f.bytes;
    const size_t end = wire::frame_length(f.pkt);
    for (size_t off = l3_offset(f.pkt); off < end; off++) {
      for (uint8_t mask : kMasks) {
        if (flip_is_undetectable(f.pkt, off, mask)) continue;
        copy[off] ^= mask;
        wire::RocePacket p;
        const Reject r = wire::decode_frame(copy.data(), copy.size(), &p);
        copy[off] ^= mask;
        ASSERT_TRUE(is_named_reject(r)) << "frame " << f.number << " byte " << off << " ^ 0x" << std::hex
                                        << int(mask) << " decoded as " << wire::reject_name(r);
        reasons[wire::reject_name(r)]++;
        tried++;
      }
    }
  }
  std::printf("%s: %zu corruptions rejected:", GetParam().path.c_str(), tried);
  for (const auto& [name, n] : reasons) std::printf(" %s=%zu", name.c_str(), n);
  std::printf("\n");
}

TEST_P(GoldenMutation, VariantBytesDoNotChangeTheVerdict) {
  // The other side of the exemption above: changing a masked byte must not break the ICRC.
  std::vector<DecodedFrame> frames;
  std::string error;
  ASSERT_TRUE(decode_capture(GetParam().path, &frames, &error)) << error;
  for (const DecodedFrame& f : frames) {
    if (f.result != Reject::kOk) continue;
    std::vector<uint8_t> copy = f.bytes;
    const size_t bth = bth_offset(f.pkt);
    for (size_t off : {bth - 2, bth - 1, bth + 4}) {
      copy[off] ^= 0xa5;
      wire::RocePacket p;
      EXPECT_EQ(wire::decode_frame(copy.data(), copy.size(), &p), Reject::kOk)
          << "frame " << f.number << " byte " << off;
      copy[off] ^= 0xa5;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Captures, GoldenMutation, ::testing::ValuesIn(golden_files()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ndnic::test
