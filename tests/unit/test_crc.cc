// CRC-32 (dispatching, table and PCLMULQDQ kernels) against zlib, and the RoCEv2 ICRC against
// an independent construction of the recipe in shared/notes/roce-wire-facts.md.
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/crc32_clmul.h"
#include "wire/icrc.h"
#include "wire/packet.h"

namespace ndnic::wire {
namespace {

constexpr size_t kMaxLen = 2048;
constexpr size_t kMaxAlign = 16;
constexpr size_t kLargeLen = 1 << 20;

uint32_t zlib_crc(uint32_t crc, const uint8_t* p, size_t len) {
  return uint32_t(::crc32(crc, p, uInt(len)));
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

bool cpu_has_clmul() {
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

TEST(Crc32, CheckValue) {
  // The catalogued check value of CRC-32/ISO-HDLC (zlib's CRC) over "123456789".
  const auto* s = reinterpret_cast<const uint8_t*>("123456789");
  EXPECT_EQ(crc32(0, s, 9), 0xCBF43926u);
  EXPECT_EQ(crc32_table(0, s, 9), 0xCBF43926u);
}

// The kernel's own view of the CPU, independent of the compiler's cpuid wrapper.
bool cpuinfo_has_clmul() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    line += ' ';
    return line.find(" pclmulqdq ") != std::string::npos && line.find(" sse4_1 ") != std::string::npos;
  }
  return false;
}

TEST(Crc32, UsesClmulWhenCpuHasIt) {
  EXPECT_EQ(crc32_uses_clmul(), cpu_has_clmul());
  EXPECT_EQ(crc32_uses_clmul(), cpuinfo_has_clmul());
}

// Every length at every alignment, from a zero and a non-zero starting CRC.
TEST(Crc32, EveryLengthAndAlignmentMatchesZlib) {
  const auto buf = random_bytes(kMaxLen + kMaxAlign, 1);
  for (size_t align = 0; align < kMaxAlign; align++) {
    const uint8_t* p = buf.data() + align;
    for (size_t len = 0; len <= kMaxLen; len++) {
      for (uint32_t seed : {0u, 0x9E3779B9u}) {
        const uint32_t want = zlib_crc(seed, p, len);
        ASSERT_EQ(crc32(seed, p, len), want) << "align " << align << " len " << len;
        ASSERT_EQ(crc32_table(seed, p, len), want) << "align " << align << " len " << len;
        // The kernel itself, below the dispatcher's crossover too.
        if (cpu_has_clmul() && len >= detail::kClmulMinLen) {
          ASSERT_EQ(detail::crc32_clmul(seed, p, len), want) << "align " << align << " len " << len;
        }
      }
    }
  }
}

TEST(Crc32, ChainedAtRandomSplitsMatchesZlib) {
  const auto buf = random_bytes(kMaxLen * 4, 2);
  std::mt19937 rng(3);
  for (int iter = 0; iter < 2000; iter++) {
    const size_t len = rng() % buf.size();
    const size_t start = rng() % (buf.size() - len + 1);
    const uint8_t* p = buf.data() + start;
    uint32_t c = 0;
    for (size_t done = 0; done < len;) {
      const size_t piece = std::min<size_t>(len - done, rng() % 600);
      c = crc32(c, p + done, piece);
      done += piece;
    }
    ASSERT_EQ(c, zlib_crc(0, p, len)) << "start " << start << " len " << len;
  }
}

TEST(Crc32, LargeBuffersMatchZlib) {
  for (uint32_t seed = 10; seed < 13; seed++) {
    const auto buf = random_bytes(kLargeLen + 7, seed);
    for (size_t off : {0, 3, 7}) {
      const size_t len = kLargeLen - off;
      EXPECT_EQ(crc32(0, buf.data() + off, len), zlib_crc(0, buf.data() + off, len));
      EXPECT_EQ(crc32_table(0, buf.data() + off, len), zlib_crc(0, buf.data() + off, len));
    }
  }
  // Long runs of a constant byte exercise the fold with little entropy.
  std::vector<uint8_t> ones(kLargeLen, 0xff), zeros(kLargeLen, 0);
  EXPECT_EQ(crc32(0, ones.data(), ones.size()), zlib_crc(0, ones.data(), ones.size()));
  EXPECT_EQ(crc32(0, zeros.data(), zeros.size()), zlib_crc(0, zeros.data(), zeros.size()));
}

// ---- ICRC -------------------------------------------------------------------------------

RocePacket sample_packet(bool ipv6, uint8_t opcode, const std::vector<uint8_t>& payload) {
  RocePacket p;
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x02}, src[6] = {0x02, 0, 0, 0, 0, 0x01};
  std::memcpy(p.eth.dst, dst, 6);
  std::memcpy(p.eth.src, src, 6);
  p.ipv6 = ipv6;
  // Non-zero values in every masked field, so a missing mask changes the result.
  p.ip4 = {.src = 0x0a000001, .dst = 0x0a000002, .tos = 0xb9, .ttl = 61, .id = 0x1234};
  for (int i = 0; i < 16; i++) {
    p.ip6.src[i] = uint8_t(0x20 + i);
    p.ip6.dst[i] = uint8_t(0x40 + i);
  }
  p.ip6.traffic_class = 0xb9;
  p.ip6.flow_label = 0xabcde;
  p.ip6.hop_limit = 61;
  p.udp = {.src_port = 0xc001, .dst_port = kRoceV2Port, .checksum = 0x5a5a};
  p.bth.opcode = opcode;
  p.bth.dest_qp = 0x000123;
  p.bth.psn = 0x456789;
  p.bth.ack_req = true;
  p.reth = {.va = 0x1122334455667788, .rkey = 0xdeadbeef, .dma_len = uint32_t(payload.size())};
  p.payload = payload.data();
  p.payload_len = uint32_t(payload.size());
  return p;
}

// The recipe, written out independently of wire/icrc.cc: 8 x 0xff, then the IP header, UDP
// header and BTH with their variant fields set to ones, then the rest up to the ICRC.
uint32_t reference_icrc(const uint8_t* l3, bool ipv6, size_t ib_len) {
  const size_t ip_len = ipv6 ? 40 : size_t(l3[0] & 0x0f) * 4;
  const size_t covered = ip_len + 8 + ib_len;  // IP + UDP + IB packet up to the ICRC
  std::vector<uint8_t> m(8 + covered, 0xff);
  std::memcpy(m.data() + 8, l3, covered);
  uint8_t* ip = m.data() + 8;
  if (ipv6) {
    ip[0] |= 0x0f;  // traffic class high nibble
    ip[1] = ip[2] = ip[3] = 0xff;  // traffic class low nibble, flow label
    ip[7] = 0xff;  // hop limit
  } else {
    ip[1] = 0xff;  // TOS
    ip[8] = 0xff;  // TTL
    ip[10] = ip[11] = 0xff;  // header checksum
  }
  uint8_t* udp = ip + ip_len;
  udp[6] = udp[7] = 0xff;  // UDP checksum
  udp[8 + 4] = 0xff;       // BTH resv8
  return zlib_crc(0, m.data(), m.size());
}

void check_icrc(bool ipv6, uint8_t opcode, size_t payload_len) {
  const auto payload = random_bytes(payload_len, uint32_t(payload_len));
  const RocePacket p = sample_packet(ipv6, opcode, payload);
  std::vector<uint8_t> frame(frame_length(p));
  ASSERT_EQ(encode_frame(p, frame.data(), frame.size()), frame.size());
  const uint8_t* l3 = frame.data() + kEthHdrLen;
  const size_t ib_off = kEthHdrLen + (ipv6 ? kIpv6HdrLen : kIpv4HdrLen) + kUdpHdrLen;
  const size_t ib_len = frame.size() - ib_off - kIcrcLen;

  const uint32_t want = reference_icrc(l3, ipv6, ib_len);
  EXPECT_EQ(icrc_compute(l3, ipv6, ib_len), want);
  const uint8_t* t = frame.data() + frame.size() - kIcrcLen;
  EXPECT_EQ(uint32_t(t[0] | t[1] << 8 | t[2] << 16 | uint32_t(t[3]) << 24), want)
      << "ICRC is stored little-endian";

  RocePacket d;
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), &d), Reject::kOk);
  EXPECT_EQ(d.icrc, want);
}

TEST(Icrc, Ipv4MatchesIndependentRecipe) {
  for (size_t len : {0, 1, 3, 64, 100, 1024, 4096}) {
    SCOPED_TRACE(len);
    check_icrc(false, kRcSendOnly, len);
    check_icrc(false, kRcWriteOnly, len);
  }
  check_icrc(false, kRcAck, 0);
}

TEST(Icrc, Ipv6MatchesIndependentRecipe) {
  for (size_t len : {0, 1, 3, 64, 100, 1024, 4096}) {
    SCOPED_TRACE(len);
    check_icrc(true, kRcSendOnly, len);
    check_icrc(true, kRcWriteOnly, len);
  }
  check_icrc(true, kRcAck, 0);
}

TEST(Icrc, MaskedFieldsDoNotChangeIt) {
  const auto payload = random_bytes(200, 4);
  RocePacket a = sample_packet(false, kRcSendOnly, payload), b = a;
  b.ip4.tos = 0;
  b.ip4.ttl = 1;
  b.udp.checksum = 0;
  std::vector<uint8_t> fa(frame_length(a)), fb(frame_length(b));
  encode_frame(a, fa.data(), fa.size());
  encode_frame(b, fb.data(), fb.size());
  EXPECT_NE(fa, fb);
  EXPECT_TRUE(std::equal(fa.end() - kIcrcLen, fa.end(), fb.end() - kIcrcLen));
}

}  // namespace
}  // namespace ndnic::wire
