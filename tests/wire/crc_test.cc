// CRC-32 (dispatching, table, PCLMULQDQ and VPCLMULQDQ kernels, and the fused copy) against
// zlib, and the RoCEv2 ICRC against an independent construction of the recipe in
// shared/notes/roce-wire-facts.md.
#include <sys/wait.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire/crc32_clmul.h"
#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

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
bool cpuinfo_has(std::initializer_list<const char*> flags) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    line += ' ';
    for (const char* flag : flags)
      if (line.find(' ' + std::string(flag) + ' ') == std::string::npos) return false;
    return true;
  }
  return false;
}

bool cpuinfo_has_clmul() { return cpuinfo_has({"pclmulqdq", "sse4_1"}); }
bool cpuinfo_has_vpclmul() {
  return cpuinfo_has({"pclmulqdq", "sse4_1", "vpclmulqdq", "avx512f", "avx512bw", "avx512vl"});
}
bool cpuinfo_has_vpclmul256() { return cpuinfo_has({"pclmulqdq", "sse4_1", "vpclmulqdq", "avx2"}); }

TEST(Crc32, UsesClmulWhenCpuHasIt) {
  if (std::getenv("NDNIC_CRC")) GTEST_SKIP() << "NDNIC_CRC chooses the path";
  EXPECT_EQ(crc32_uses_clmul(), cpu_has_clmul());
  EXPECT_EQ(crc32_uses_clmul(), cpuinfo_has_clmul());
}

TEST(Crc32, PathIsTheWidestTheCpuHas) {
  const bool vpclmul = cpuinfo_has_vpclmul(), ymm = cpuinfo_has_vpclmul256(), clmul = cpuinfo_has_clmul();
  EXPECT_EQ(detail::crc_path_best(), vpclmul ? detail::CrcPath::kVpclmul
                                     : ymm   ? detail::CrcPath::kVpclmul256
                                     : clmul ? detail::CrcPath::kPclmul
                                             : detail::CrcPath::kTable);
  if (std::getenv("NDNIC_CRC")) GTEST_SKIP() << "NDNIC_CRC chooses the path";
  EXPECT_STREQ(crc32_path(), vpclmul ? "vpclmulqdq" : ymm ? "vpclmulqdq-256" : clmul ? "pclmulqdq" : "table");
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

TEST(Crc32, FourBytesMatchZlib) {
  const auto buf = random_bytes(4 * 1000, 4);
  std::mt19937 rng(5);
  for (size_t i = 0; i < buf.size(); i += 4) {
    const uint32_t seed = i == 0 ? 0 : uint32_t(rng());
    ASSERT_EQ(crc32_4(seed, buf.data() + i), zlib_crc(seed, buf.data() + i, 4)) << "at " << i;
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

// ---- Each path forced, and the fused copy -------------------------------------------------

using detail::CrcPath;

constexpr size_t kPathMaxLen = 1024;
constexpr size_t kMaxOffset = 64;           // starts 0..63 bytes past a 64-byte boundary
constexpr uint8_t kCanary = 0xa5;

/// A test buffer, 64-byte aligned, so offset k starts k bytes past a boundary
/// (a std::vector's data() only promises 16).
class Aligned {
 public:
  Aligned(size_t n, uint32_t seed) : Aligned(random_bytes(n + 64, seed)) {}
  explicit Aligned(size_t n) : Aligned(std::vector<uint8_t>(n + 64)) {}
  uint8_t* at(size_t off) { return base_ + off; }

 private:
  explicit Aligned(std::vector<uint8_t> v) : v_(std::move(v)) {
    const auto a = reinterpret_cast<uintptr_t>(v_.data());
    base_ = v_.data() + ((64 - a % 64) % 64);
  }

  std::vector<uint8_t> v_;
  uint8_t* base_;
};

/// A path's own kernels, called directly at every length they accept, and the shortest such.
struct Kernels {
  uint32_t (*crc)(uint32_t, const uint8_t*, size_t);
  uint32_t (*copy)(uint32_t, uint8_t*, const uint8_t*, size_t);
  size_t min_len;
};

uint32_t table_kernel(uint32_t c, const uint8_t* p, size_t n) { return crc32_table(c, p, n); }
uint32_t table_copy(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
  return detail::crc32_copy_on(CrcPath::kTable, c, d, s, n);
}

Kernels kernels(CrcPath path) {
  switch (path) {
    case CrcPath::kVpclmul:
      return {detail::crc32_vpclmul, detail::crc32_copy_vpclmul, detail::kVpclmulMinLen};
    case CrcPath::kVpclmul256:
      return {detail::crc32_vpclmul256, detail::crc32_copy_vpclmul256, detail::kVpclmul256MinLen};
    case CrcPath::kPclmul:
      return {detail::crc32_clmul, detail::crc32_copy_clmul, detail::kClmulMinLen};
    case CrcPath::kTable: break;
  }
  return {table_kernel, table_copy, 0};
}

class Crc32Path : public testing::TestWithParam<CrcPath> {
 protected:
  void SetUp() override {
    if (GetParam() > detail::crc_path_best()) GTEST_SKIP() << "this CPU lacks the path";
  }
  uint32_t crc(uint32_t c, const uint8_t* p, size_t n) { return detail::crc32_on(GetParam(), c, p, n); }
  uint32_t copy(uint32_t c, uint8_t* d, const uint8_t* s, size_t n) {
    return detail::crc32_copy_on(GetParam(), c, d, s, n);
  }
  const Kernels k = kernels(GetParam());
};

std::string path_name(const testing::TestParamInfo<CrcPath>& info) {
  switch (info.param) {
    case CrcPath::kVpclmul: return "vpclmul";
    case CrcPath::kVpclmul256: return "vpclmul256";
    case CrcPath::kPclmul: return "pclmul";
    case CrcPath::kTable: break;
  }
  return "table";
}

INSTANTIATE_TEST_SUITE_P(, Crc32Path,
                         testing::Values(CrcPath::kTable, CrcPath::kPclmul, CrcPath::kVpclmul256,
                                         CrcPath::kVpclmul),
                         path_name);

// Every length 0..1024 from every start within a cache line, from a zero and a non-zero CRC:
// the dispatcher as it runs with this path chosen, and the path's kernel where it applies.
TEST_P(Crc32Path, EveryLengthAndOffsetMatchesZlib) {
  Aligned buf(kPathMaxLen + kMaxOffset, 5);
  for (size_t off = 0; off < kMaxOffset; off++) {
    const uint8_t* p = buf.at(off);
    for (size_t len = 0; len <= kPathMaxLen; len++) {
      for (uint32_t seed : {0u, 0x9E3779B9u}) {
        const uint32_t want = zlib_crc(seed, p, len);
        ASSERT_EQ(crc(seed, p, len), want) << "offset " << off << " len " << len;
        if (len >= k.min_len) {
          ASSERT_EQ(k.crc(seed, p, len), want) << "offset " << off << " len " << len;
        }
      }
    }
  }
}

TEST_P(Crc32Path, LargeLengthsMatchZlib) {
  for (size_t len : {size_t(4096), size_t(4096 + 63), size_t(65536 + 13), size_t(1 << 20)}) {
    Aligned buf(len + kMaxOffset, uint32_t(len));
    for (size_t off : {0, 1, 17, 63}) {
      const uint32_t want = zlib_crc(0, buf.at(off), len);
      EXPECT_EQ(crc(0, buf.at(off), len), want) << "offset " << off << " len " << len;
      EXPECT_EQ(k.crc(0, buf.at(off), len), want) << "offset " << off << " len " << len;
    }
  }
}

// crc(crc(0, a), b) == crc(0, a||b) at every split of a message long enough for the 256-byte
// loop on both sides, through the dispatcher and through the kernel where both parts allow it.
TEST_P(Crc32Path, ChainedAtEverySplitMatchesZlib) {
  constexpr size_t kLen = 700;
  Aligned buf(kLen + kMaxOffset, 6);
  for (size_t off : {0, 3}) {
    const uint8_t* p = buf.at(off);
    const uint32_t want = zlib_crc(0, p, kLen);
    for (size_t split = 0; split <= kLen; split++) {
      ASSERT_EQ(crc(crc(0, p, split), p + split, kLen - split), want) << "split " << split;
      if (split >= k.min_len && kLen - split >= k.min_len) {
        ASSERT_EQ(k.crc(k.crc(0, p, split), p + split, kLen - split), want) << "split " << split;
      }
    }
  }
}

TEST_P(Crc32Path, ChainedAtRandomSplitsMatchesZlib) {
  Aligned buf(kPathMaxLen * 8, 7);
  std::mt19937 rng(8);
  for (int iter = 0; iter < 500; iter++) {
    const size_t len = rng() % (kPathMaxLen * 8);
    const uint8_t* p = buf.at(rng() % (kPathMaxLen * 8 - len + 1));
    uint32_t c = 0;
    for (size_t done = 0; done < len;) {
      const size_t piece = std::min<size_t>(len - done, rng() % 1200);
      c = crc(c, p + done, piece);
      done += piece;
    }
    ASSERT_EQ(c, zlib_crc(0, p, len)) << "len " << len;
  }
}

/// Runs `copy` from src into a fresh destination at dst_off past a 64-byte boundary, with
/// canary bytes a cache line either side, and checks the copy, the canaries and the CRC.
template <typename Copy>
testing::AssertionResult copies_exactly(Copy copy, uint32_t seed, const uint8_t* src, size_t len,
                                        size_t dst_off) {
  Aligned dst(64 + kMaxOffset + len + 64);
  uint8_t* const lo = dst.at(0);
  const size_t span = 64 + kMaxOffset + len + 64;
  std::memset(lo, kCanary, span);
  uint8_t* const d = lo + 64 + dst_off;
  const uint32_t got = copy(seed, d, src, len);
  const uint32_t want = zlib_crc(seed, src, len);
  if (got != want) return testing::AssertionFailure() << "CRC " << got << ", zlib " << want;
  if (std::memcmp(d, src, len) != 0) return testing::AssertionFailure() << "copy differs";
  for (uint8_t* q = lo; q < lo + span; q++) {
    if ((q < d || q >= d + len) && *q != kCanary)
      return testing::AssertionFailure() << "wrote byte " << (q - d) << " of " << len;
  }
  return testing::AssertionSuccess();
}

TEST_P(Crc32Path, CopyEveryLengthAndOffset) {
  Aligned buf(kPathMaxLen + kMaxOffset, 9);
  for (size_t off = 0; off < kMaxOffset; off++) {
    const size_t dst_off = (off * 37 + 5) % kMaxOffset;  // unrelated to the source's
    for (size_t len = 0; len <= kPathMaxLen; len++) {
      const uint32_t seed = uint32_t(len) * 0x9E3779B9u;
      ASSERT_TRUE(copies_exactly([&](auto... a) { return copy(a...); }, seed, buf.at(off), len,
                                 dst_off))
          << "offset " << off << " dst offset " << dst_off << " len " << len;
      if (len >= k.min_len) {
        ASSERT_TRUE(copies_exactly(k.copy, seed, buf.at(off), len, dst_off))
            << "kernel, offset " << off << " dst offset " << dst_off << " len " << len;
      }
    }
  }
}

TEST_P(Crc32Path, CopyLargeLengths) {
  for (size_t len : {size_t(4096), size_t(65536 + 13)}) {
    Aligned buf(len + kMaxOffset, uint32_t(len));
    for (size_t off : {0, 1, 63}) {
      EXPECT_TRUE(copies_exactly([&](auto... a) { return copy(a...); }, 0, buf.at(off), len, 7));
      EXPECT_TRUE(copies_exactly(k.copy, 0, buf.at(off), len, 0));
    }
  }
}

TEST_P(Crc32Path, CopyChainedMatchesZlib) {
  constexpr size_t kLen = 1500;  // a full-MTU payload received in two segments
  Aligned src(kLen + kMaxOffset, 10), dst(kLen + kMaxOffset, 11);
  for (size_t split = 0; split <= kLen; split += 7) {
    const uint32_t c = copy(0, dst.at(1), src.at(2), split);
    ASSERT_EQ(copy(c, dst.at(1) + split, src.at(2) + split, kLen - split), zlib_crc(0, src.at(2), kLen))
        << "split " << split;
    ASSERT_EQ(std::memcmp(dst.at(1), src.at(2), kLen), 0);
  }
}

TEST(Crc32Copy, DispatchedMatchesZlib) {
  Aligned src(kPathMaxLen + kMaxOffset, 12);
  for (size_t len = 0; len <= kPathMaxLen; len++) {
    ASSERT_TRUE(copies_exactly([](auto... a) { return crc32_copy(a...); }, 1, src.at(len % 64), len,
                               len % 13))
        << "len " << len;
  }
  EXPECT_EQ(crc32_copy(0x1234, nullptr, nullptr, 0), 0x1234u);
}

// ---- The choice of path -----------------------------------------------------------------

TEST(Crc32Choice, EnvironmentNamesAPathTheCpuHas) {
  using detail::crc_path_choose;
  for (CrcPath best : {CrcPath::kTable, CrcPath::kPclmul, CrcPath::kVpclmul256, CrcPath::kVpclmul}) {
    EXPECT_EQ(crc_path_choose(nullptr, best), best);
    EXPECT_EQ(crc_path_choose("", best), best);
    EXPECT_EQ(crc_path_choose("fastest", best), best);
    EXPECT_EQ(crc_path_choose("table", best), CrcPath::kTable);
  }
  EXPECT_EQ(crc_path_choose("pclmul", CrcPath::kVpclmul), CrcPath::kPclmul);
  EXPECT_EQ(crc_path_choose("pclmul", CrcPath::kTable), CrcPath::kTable);
  EXPECT_EQ(crc_path_choose("vpclmul", CrcPath::kVpclmul), CrcPath::kVpclmul);
  EXPECT_EQ(crc_path_choose("vpclmul", CrcPath::kVpclmul256), CrcPath::kVpclmul256);
  EXPECT_EQ(crc_path_choose("vpclmul256", CrcPath::kVpclmul), CrcPath::kVpclmul256);
  EXPECT_EQ(crc_path_choose("vpclmul256", CrcPath::kVpclmul256), CrcPath::kVpclmul256);
  EXPECT_EQ(crc_path_choose("vpclmul256", CrcPath::kPclmul), CrcPath::kPclmul);
  EXPECT_EQ(crc_path_choose("pclmul", CrcPath::kVpclmul256), CrcPath::kPclmul);
  EXPECT_EQ(crc_path_choose("vpclmul", CrcPath::kPclmul), CrcPath::kPclmul);
  EXPECT_EQ(crc_path_choose("vpclmul", CrcPath::kTable), CrcPath::kTable);
}

// What a process started with NDNIC_CRC set runs: this test binary again, running only the
// disabled test below, which checks crc32_path() and the CRCs in that process.
TEST(Crc32Choice, EnvironmentIsReadAtStart) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const bool pclmul = cpuinfo_has_clmul(), ymm = cpuinfo_has_vpclmul256(), vpclmul = cpuinfo_has_vpclmul();
  const char* const widest = vpclmul ? "vpclmulqdq" : ymm ? "vpclmulqdq-256" : pclmul ? "pclmulqdq" : "table";
  const std::pair<const char*, const char*> cases[] = {
      {"table", "table"},
      {"pclmul", pclmul ? "pclmulqdq" : "table"},
      {"vpclmul256", ymm ? "vpclmulqdq-256" : pclmul ? "pclmulqdq" : "table"},
      {"vpclmul", widest},
  };
  for (const auto& [env, want] : cases) {
    const std::string cmd = std::string("NDNIC_CRC=") + env + " NDNIC_CRC_WANT=" + want + " '" +
                            self + "' --gtest_also_run_disabled_tests" +
                            " --gtest_filter=Crc32Choice.DISABLED_ChildSeesForcedPath 2>&1";
    FILE* child = popen(cmd.c_str(), "r");
    ASSERT_NE(child, nullptr) << cmd;
    std::string out;
    char chunk[4096];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, child)) > 0;) out.append(chunk, n);
    const int status = pclose(child);
    // Passing and having run the test: a filter that matched nothing would also exit 0.
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                out.find("[  PASSED  ] 1 test.") != std::string::npos)
        << cmd << "\n" << out;
  }
}

TEST(Crc32Choice, DISABLED_ChildSeesForcedPath) {
  const char* want = std::getenv("NDNIC_CRC_WANT");
  ASSERT_NE(want, nullptr) << "run by EnvironmentIsReadAtStart";
  EXPECT_STREQ(crc32_path(), want);
  Aligned src(kPathMaxLen + kMaxOffset, 13);
  for (size_t len = 0; len <= kPathMaxLen; len += 3) {
    ASSERT_EQ(crc32(0, src.at(1), len), zlib_crc(0, src.at(1), len)) << "len " << len;
    ASSERT_TRUE(copies_exactly([](auto... a) { return crc32_copy(a...); }, 0, src.at(1), len, 3));
  }
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
