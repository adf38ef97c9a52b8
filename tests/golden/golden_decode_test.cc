// Every frame of every golden capture: RoCEv2 frames decode with their ICRC checked and
// re-encode byte for byte; everything else is rejected as "not RoCE", never as broken RoCE.
// The counts are then checked against what MANIFEST.md says about the capture.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/golden/golden_captures.h"
#include "tests/golden/manifest.h"

namespace ndnic::test {
namespace {

using wire::Reject;

// Linux pads frames shorter than the Ethernet minimum (60 bytes without FCS) on some paths; a
// capture may then hold bytes after the IP packet that no encoder field describes.
constexpr size_t kEthMinFrame = 60;

class GoldenDecode : public ::testing::TestWithParam<GoldenFile> {};

TEST_P(GoldenDecode, RoceFramesDecodeCheckIcrcAndReencodeByteForByte) {
  const GoldenFile& file = GetParam();
  std::vector<DecodedFrame> frames;
  std::string error;
  ASSERT_TRUE(decode_capture(file.path, &frames, &error)) << file.path << ": " << error;
  ASSERT_FALSE(frames.empty()) << file.path << " holds no frame";

  wire::RejectCounters outcomes;
  std::map<unsigned, uint64_t> opcodes;
  std::map<std::string, uint64_t> aeth;
  for (const DecodedFrame& f : frames) {
    SCOPED_TRACE(file.name + " frame " + std::to_string(f.number));
    outcomes.add(f.result);
    EXPECT_EQ(f.bytes.size(), f.orig_len) << "golden frames must be captured whole";
    if (is_non_roce_reject(f.result)) continue;
    ASSERT_EQ(f.result, Reject::kOk) << "RoCE frame rejected: " << wire::reject_name(f.result);

    const wire::RocePacket& p = f.pkt;
    opcodes[p.bth.opcode]++;
    if (wire::opcode_info(p.bth.opcode).ext & wire::kHdrAeth) aeth[aeth_class_name(p.aeth.syndrome)]++;
    EXPECT_EQ(p.bth.pad, wire::pad_for(p.payload_len));

    std::vector<uint8_t> out(wire::frame_length(p));
    EXPECT_EQ(p.frame_len, out.size()) << "decode's frame_len";
    ASSERT_EQ(wire::encode_frame(p, out.data(), out.size()), out.size());
    ASSERT_LE(out.size(), f.bytes.size()) << "re-encoded frame is longer than the original";
    if (out.size() < f.bytes.size()) {
      EXPECT_TRUE(f.bytes.size() <= kEthMinFrame + wire::kVlanTagLen && out.size() < kEthMinFrame)
          << f.bytes.size() - out.size() << " bytes after the IP packet of a frame that needs no padding";
    }
    for (size_t i = 0; i < out.size(); i++)
      ASSERT_EQ(out[i], f.bytes[i]) << "re-encoding differs first at byte " << i << " of " << out.size();
  }

  const uint64_t roce = outcomes[Reject::kOk];
  std::printf("%s: %zu frames, %llu RoCEv2 (ICRC ok), %llu not IP, %llu not UDP, %llu other UDP\n",
              file.path.c_str(), frames.size(), (unsigned long long)roce,
              (unsigned long long)outcomes[Reject::kNotIp], (unsigned long long)outcomes[Reject::kNotUdp],
              (unsigned long long)outcomes[Reject::kNotRoceV2Port]);

  const auto manifest = load_manifest(file.dir);
  auto it = manifest.find(file.name);
  if (it == manifest.end()) {
    std::printf("%s: no MANIFEST.md section, counts not cross-checked\n", file.path.c_str());
    return;
  }
  const ManifestEntry& m = it->second;
  if (m.roce_packets) {
    EXPECT_EQ(roce, *m.roce_packets) << "RoCEv2 packet count per MANIFEST.md";
  }
  if (m.icrc_good) {
    EXPECT_EQ(roce, *m.icrc_good) << "ICRC-good count per MANIFEST.md";
  }
  if (m.icrc_bad) {
    EXPECT_EQ(*m.icrc_bad, 0u) << "the golden set should hold no bad ICRC";
  }
  if (m.non_roce_frames) {
    EXPECT_EQ(frames.size() - roce, *m.non_roce_frames) << "non-RoCE frames per MANIFEST.md";
  }
  if (!m.opcodes.empty()) {
    EXPECT_EQ(opcodes, m.opcodes) << "opcode table per MANIFEST.md";
  }
  if (!m.aeth.empty()) {
    uint64_t stated = 0, decoded = 0;
    for (const auto& [name, n] : m.aeth) {
      stated += n;
      EXPECT_EQ(aeth[name], n) << "AETH syndromes of class " << name << " per MANIFEST.md";
    }
    for (const auto& [name, n] : aeth) decoded += n;
    EXPECT_EQ(decoded, stated) << "packets with an AETH per MANIFEST.md";
  }
}

INSTANTIATE_TEST_SUITE_P(Captures, GoldenDecode, ::testing::ValuesIn(golden_files()),
                         [](const auto& info) { return info.param.label; });

TEST(Manifest, ParsesTheSectionsItsTestsRelyOn) {
  const auto m = parse_manifest(
      "# title\n## a.pcap - x\nSize 1. RoCEv2 packets: 7  ICRC good=7 bad=0. AETH syndromes: "
      "{'ACK': 3, 'NAK_REMOTE_ACCESS_ERR': 2}.\n| count | op | name |\n|---:|---:|---|\n"
      "| 5 | 17 | ACKNOWLEDGE |\n| 2 | 100 | UD |\n| 9 | (blank) | non-RoCE |\n## general notes\n| 4 | 1 | x |\n");
  ASSERT_EQ(m.size(), 1u);
  const ManifestEntry& e = m.at("a.pcap");
  EXPECT_EQ(e.roce_packets, 7u);
  EXPECT_EQ(e.icrc_good, 7u);
  EXPECT_EQ(e.icrc_bad, 0u);
  EXPECT_EQ(e.aeth, (std::map<std::string, uint64_t>{{"ACK", 3}, {"NAK_REMOTE_ACCESS_ERR", 2}}));
  EXPECT_EQ(e.opcodes, (std::map<unsigned, uint64_t>{{17, 5}, {100, 2}}));
  EXPECT_EQ(e.non_roce_frames, 9u);
}

TEST(Manifest, AethClassNames) {
  EXPECT_EQ(aeth_class_name(0x1f), "ACK");
  EXPECT_EQ(aeth_class_name(0x00), "ACK");
  EXPECT_EQ(aeth_class_name(0x2e), "RNR_NAK");
  EXPECT_EQ(aeth_class_name(0x60), "NAK_PSN_SEQ_ERR");
  EXPECT_EQ(aeth_class_name(0x62), "NAK_REMOTE_ACCESS_ERR");
}

}  // namespace
}  // namespace ndnic::test
