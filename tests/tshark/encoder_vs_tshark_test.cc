// Every opcode in wire's table, encoded with random field values over IPv4, IPv6 and 802.1Q,
// with payloads that need 0..3 pad bytes and none at all, must read back in tshark with exactly
// the values that were encoded and no malformed-packet marker.
//
// The values are random but seeded: the seed is printed, and NDNIC_TEST_SEED=<n> replays a run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "tests/tshark/tshark_expect.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::test {
namespace {

constexpr uint64_t kDefaultSeed = 0x4E444E4943ull;  // "NDNIC"

struct Layout {
  const char* name;
  bool ipv6;
  bool vlan;
};
constexpr Layout kLayouts[] = {{"ipv4", false, false}, {"ipv6", true, false},
                               {"vlan+ipv4", false, true}, {"vlan+ipv6", true, true}};

/// Payload lengths worth a frame each: FIRST/MIDDLE packets must fill whole 4-byte words; the
/// others also cover zero-length and every pad count.
std::vector<uint32_t> payload_lengths(const wire::OpcodeInfo& info) {
  if (!info.has_payload) return {0};
  if (info.position == wire::Position::kFirst || info.position == wire::Position::kMiddle) return {4, 64, 1024};
  return {0, 1, 2, 3, 4, 5, 6, 7, 61, 1021};
}

struct Built {
  wire::RocePacket pkt;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> frame;
  std::string what;
};

Built build(uint8_t opcode, const Layout& layout, uint32_t payload_len, std::mt19937_64& rng) {
  Built b;
  wire::RocePacket& p = b.pkt;
  for (int i = 0; i < 6; i++) {
    p.eth.dst[i] = uint8_t(rng());
    p.eth.src[i] = uint8_t(rng());
  }
  p.eth.dst[0] &= 0xfe;  // unicast
  p.eth.src[0] &= 0xfe;
  p.eth.has_vlan = layout.vlan;
  p.eth.vlan_tci = layout.vlan ? uint16_t(rng()) : 0;
  p.ipv6 = layout.ipv6;
  p.ip4.src = uint32_t(rng());
  p.ip4.dst = uint32_t(rng());
  p.ip4.tos = uint8_t(rng());
  p.ip4.ttl = uint8_t(1 + rng() % 255);
  p.ip4.id = uint16_t(rng());
  p.ip4.frag = (rng() & 1) ? 0x4000 : 0;
  for (int i = 0; i < 16; i++) {
    p.ip6.src[i] = uint8_t(rng());
    p.ip6.dst[i] = uint8_t(rng());
  }
  p.ip6.src[0] = p.ip6.dst[0] = 0x20;  // global unicast, not multicast
  p.ip6.traffic_class = uint8_t(rng());
  p.ip6.flow_label = uint32_t(rng() & 0xfffff);
  p.ip6.hop_limit = uint8_t(1 + rng() % 255);
  // Above 4791, so Wireshark picks the dissector by the destination port.
  p.udp.src_port = uint16_t(0xC000 | (rng() & 0x3fff));
  p.bth.opcode = opcode;
  p.bth.se = rng() & 1;
  p.bth.mig = rng() & 1;
  p.bth.pkey = uint16_t(rng());
  // QP 0 and 1 carry MADs, which Wireshark dissects as such; every other QP carries data.
  p.bth.dest_qp = uint32_t(2 + rng() % (wire::kPsnMask - 1));
  p.bth.ack_req = rng() & 1;
  p.bth.psn = uint32_t(rng() & wire::kPsnMask);
  p.reth = {rng(), uint32_t(rng()), uint32_t(rng())};
  p.aeth = {uint8_t(rng()), uint32_t(rng() & wire::kPsnMask)};
  p.ieth_rkey = uint32_t(rng());
  p.imm = uint32_t(rng());
  p.atomic = {rng() & ~7ull, uint32_t(rng()), rng(), rng()};
  p.atomic_ack.orig = rng();
  p.deth = {uint32_t(rng()), uint32_t(2 + rng() % (wire::kPsnMask - 1))};
  b.payload.resize(payload_len);
  for (auto& c : b.payload) c = uint8_t(rng());
  p.payload = b.payload.data();
  p.payload_len = payload_len;
  p.bth.pad = wire::pad_for(payload_len);
  b.frame.resize(wire::frame_length(p));
  b.frame.resize(wire::encode_frame(p, b.frame.data(), b.frame.size()));
  // What the comparison reads comes from the frame, through the decoder (ICRC included).
  p.icrc = uint32_t(b.frame[b.frame.size() - 4]) | uint32_t(b.frame[b.frame.size() - 3]) << 8 |
           uint32_t(b.frame[b.frame.size() - 2]) << 16 | uint32_t(b.frame[b.frame.size() - 1]) << 24;
  b.what = std::string(wire::opcode_info(opcode).name) + " " + layout.name + " payload " +
           std::to_string(payload_len);
  return b;
}

uint64_t seed_from_env() {
  const char* env = std::getenv("NDNIC_TEST_SEED");
  return env && *env ? std::strtoull(env, nullptr, 0) : kDefaultSeed;
}

TEST(EncoderVsTshark, EveryOpcodeEveryLayoutReadsBackAsEncoded) {
  const std::string tshark = find_tshark();
  ASSERT_FALSE(tshark.empty()) << "tshark not found: this test needs it (make test installs it; "
                                  "apt-get install tshark)";
  const uint64_t seed = seed_from_env();
  std::printf("seed %#llx (replay with NDNIC_TEST_SEED=%#llx)\n", (unsigned long long)seed,
              (unsigned long long)seed);
  std::mt19937_64 rng(seed);

  std::vector<Built> built;
  size_t opcodes = 0;
  for (unsigned op = 0; op < 256; op++) {
    if (!wire::opcode_known(uint8_t(op))) continue;
    opcodes++;
    for (const Layout& layout : kLayouts)
      for (uint32_t len : payload_lengths(wire::opcode_info(uint8_t(op))))
        built.push_back(build(uint8_t(op), layout, len, rng));
  }
  ASSERT_GT(opcodes, 0u);

  const std::string pcap = ::testing::TempDir() + "ndnic_encoder_vs_tshark_" + std::to_string(getpid()) + ".pcap";
  {
    wire::PcapWriter writer;
    ASSERT_TRUE(writer.open(pcap)) << pcap;
    uint64_t ts = 1'700'000'000'000'000'000ull;
    for (const Built& b : built) {
      // The frames must be valid to ndnic itself before tshark's opinion means anything.
      wire::RocePacket back;
      ASSERT_EQ(wire::decode_frame(b.frame.data(), b.frame.size(), &back), wire::Reject::kOk) << b.what;
      ASSERT_EQ(back.icrc, b.pkt.icrc) << b.what;
      ASSERT_TRUE(writer.write(b.frame.data(), uint32_t(b.frame.size()), ts += 1000));
    }
  }

  std::vector<TsharkRow> rows;
  std::string error;
  ASSERT_TRUE(run_tshark_fields(tshark, pcap, tshark_roce_fields(), &rows, &error)) << error;
  ASSERT_EQ(rows.size(), built.size());
  size_t bad = 0;
  for (size_t i = 0; i < built.size(); i++) {
    const std::vector<std::string> diffs = tshark_mismatches(built[i].pkt, rows[i]);
    for (const std::string& d : diffs) ADD_FAILURE() << "frame " << i + 1 << " (" << built[i].what << "): " << d;
    bad += !diffs.empty();
  }
  std::printf("%zu frames (%zu opcodes x %zu layouts x payload sizes) checked against %s, %zu differ\n",
              built.size(), opcodes, std::size(kLayouts), tshark.c_str(), bad);
  if (bad == 0) std::remove(pcap.c_str());  // kept for a look with Wireshark when something differs
}

}  // namespace
}  // namespace ndnic::test
