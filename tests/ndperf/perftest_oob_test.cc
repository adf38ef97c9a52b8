// ndperf's perftest protocol (tools/ndperf/perftest/oob.h) against the byte layouts of perftest
// 4.5-0.17's source (perftest_communication.{c,h}: KEY_PRINT_FMT_GID, KEY_MSG_SIZE_GID,
// MAX_VERSION, check_sys_data, check_mtu, xchg_bw_reports, ctx_close_connection), and a TCP
// peer that speaks perftest's side byte for byte, well and badly. Plus perftest's figures
// (tools/ndperf/perftest/figures.h) on timestamps whose answer is known.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tools/ndperf/perftest/figures.h"
#include "tools/ndperf/perftest/oob.h"

namespace ndnic::ndperf::perftest {
namespace {

Dest sample_dest() {
  Dest d;
  d.lid = 0;
  d.out_reads = 0x80;
  d.qpn = 0x000011;
  d.psn = 0xabcdef;
  d.rkey = 0x1234abcd;
  d.vaddr = 0x00007f00deadbeefULL;
  d.gid = raw_qp::ipv4_mapped_gid(0xc6120002);  // 198.18.0.2
  d.srqn = 0;
  return d;
}

// What perftest's sprintf(KEY_PRINT_FMT_GID, ...) writes for sample_dest(), by hand.
const std::string kSampleLine =
    "0000:0080:000011:abcdef:1234abcd:00007f00deadbeef:"
    "00:00:00:00:00:00:00:00:00:00:ff:ff:c6:12:00:02:00000000:";

TEST(PerftestKeyLine, FormatIsPerftestsLayout) {
  const std::string line = format_key_line(sample_dest());
  ASSERT_EQ(line.size(), 108u);  // KEY_MSG_SIZE_GID
  EXPECT_EQ(line.back(), '\0');
  EXPECT_EQ(std::string(line.c_str()), kSampleLine);
  EXPECT_EQ(kSampleLine.size() + 1, kKeyLineBytes);
}

TEST(PerftestKeyLine, ParsesPerftestsLine) {
  std::string wire = kSampleLine;
  wire.push_back('\0');
  std::string why;
  const std::optional<Dest> d = parse_key_line(wire, &why);
  ASSERT_TRUE(d) << why;
  EXPECT_EQ(*d, sample_dest());
  EXPECT_EQ(raw_qp::gid_ipv4(d->gid), 0xc6120002u);
}

TEST(PerftestKeyLine, RoundTripsFieldExtremes) {
  Dest d;
  d.lid = 0xffff;
  d.out_reads = 0xffff;
  d.qpn = 0xffffff;
  d.psn = 0xffffff;
  d.rkey = 0xffffffff;
  d.vaddr = ~0ull;
  d.gid.fill(0xab);
  d.srqn = 0xffffffff;
  std::string why;
  const std::optional<Dest> back = parse_key_line(format_key_line(d), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(*back, d);
}

TEST(PerftestKeyLine, RefusesWhatIsNotTheLayout) {
  std::string good = format_key_line(sample_dest());
  std::string why;
  // 59 bytes: the line without a GID (KEY_MSG_SIZE), what perftest sends without a GID index.
  EXPECT_FALSE(parse_key_line(good.substr(0, 59), &why));
  EXPECT_NE(why.find("59 bytes"), std::string::npos) << why;
  std::string no_nul = good;
  no_nul.back() = ':';
  EXPECT_FALSE(parse_key_line(no_nul, &why));
  EXPECT_NE(why.find("NUL"), std::string::npos) << why;
  std::string not_hex = good;
  not_hex[7] = 'g';
  EXPECT_FALSE(parse_key_line(not_hex, &why));
  EXPECT_NE(why.find("byte 7 is not a hex digit"), std::string::npos) << why;
  std::string shifted = good;
  shifted[4] = '0';  // the colon after the LID
  EXPECT_FALSE(parse_key_line(shifted, &why));
  EXPECT_NE(why.find("no ':' at byte 4"), std::string::npos) << why;
}

TEST(PerftestFields, VersionIsSixteenNulPaddedBytes) {
  const auto f = version_field(kVersion);
  ASSERT_EQ(f.size(), 16u);  // MAX_VERSION
  EXPECT_EQ(std::string(f.data()), "6.06");
  for (size_t i = 4; i < f.size(); i++) EXPECT_EQ(f[i], '\0') << i;
  EXPECT_DOUBLE_EQ(*parse_version(f.data(), f.size()), 6.06);
  const char old[16] = "5.60";
  EXPECT_LT(*parse_version(old, sizeof old), kMinPeerVersion);
  const char junk[16] = {'x', 'y'};
  EXPECT_FALSE(parse_version(junk, sizeof junk));
  char unterminated[16];
  std::memset(unterminated, '6', sizeof unterminated);
  EXPECT_FALSE(parse_version(unterminated, sizeof unterminated));
}

TEST(PerftestFields, MtuIsTheIbvMtuCodeAsTwoChars) {
  EXPECT_EQ(mtu_code(256), 1);
  EXPECT_EQ(mtu_code(1024), 3);
  EXPECT_EQ(mtu_code(4096), 5);
  EXPECT_EQ(mtu_code(1500), 0);
  EXPECT_EQ(mtu_bytes(3), 1024u);
  const auto f = mtu_field(3);
  ASSERT_EQ(f.size(), 2u);  // sizeof(char[2]) for peers from 5.31 on
  EXPECT_EQ(f[0], '3');
  EXPECT_EQ(f[1], '\0');
  EXPECT_EQ(parse_mtu_field(f.data(), f.size()), 3);
  const char six[2] = {'6', '\0'}, none[2] = {'x', '\0'}, long_one[2] = {'1', '0'};
  EXPECT_FALSE(parse_mtu_field(six, 2));
  EXPECT_FALSE(parse_mtu_field(none, 2));
  EXPECT_FALSE(parse_mtu_field(long_one, 2));
}

TEST(PerftestFields, SystemDataIsANetworkOrderInt) {
  const auto f = int_field(4096);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 0);
  EXPECT_EQ(f[1], 0);
  EXPECT_EQ(f[2], 0x10);
  EXPECT_EQ(f[3], 0);
  EXPECT_EQ(parse_int_field(f.data()), 4096u);
}

TEST(PerftestFields, ReportIsFiveBigEndianEightByteFields) {
  BwReport r;
  r.size = 65536;
  r.iters = 5000;
  r.bw_peak = 1.0;
  r.bw_avg = -2.0;
  r.msg_rate = 0.5;
  const auto f = report_fields(r);
  ASSERT_EQ(f.size(), 5u);
  const std::array<uint8_t, 8> size_be = {0, 0, 0, 0, 0, 1, 0, 0};
  const std::array<uint8_t, 8> iters_be = {0, 0, 0, 0, 0, 0, 0x13, 0x88};
  const std::array<uint8_t, 8> one_be = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};    // IEEE 754 1.0
  const std::array<uint8_t, 8> minus2_be = {0xc0, 0, 0, 0, 0, 0, 0, 0};    // -2.0
  const std::array<uint8_t, 8> half_be = {0x3f, 0xe0, 0, 0, 0, 0, 0, 0};   // 0.5
  EXPECT_EQ(f[0], size_be);
  EXPECT_EQ(f[1], iters_be);
  EXPECT_EQ(f[2], one_be);
  EXPECT_EQ(f[3], minus2_be);
  EXPECT_EQ(f[4], half_be);
  const BwReport back = parse_report_fields(f);
  EXPECT_EQ(back.size, r.size);
  EXPECT_EQ(back.iters, r.iters);
  EXPECT_EQ(back.bw_avg, r.bw_avg);
}

// ---------------------------------------------------------------------------------------
// A perftest server on the other end of a real TCP connection, scripted byte for byte: it
// reads what ctx_xchg_data_ethernet's server reads and writes what it writes.

class FakePerftestServer {
 public:
  explicit FakePerftestServer(std::function<void(int fd)> script) {
    ls_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(ls_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    socklen_t len = sizeof sa;
    getsockname(ls_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    listen(ls_, 1);
    thread_ = std::thread([this, script] {
      const int fd = accept(ls_, nullptr, nullptr);
      if (fd >= 0) {
        script(fd);
        ::close(fd);
      }
    });
  }
  ~FakePerftestServer() {
    thread_.join();
    ::close(ls_);
  }
  uint16_t port() const { return port_; }

 private:
  int ls_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

std::string read_n(int fd, size_t n) {
  std::string s(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::read(fd, s.data() + got, n - got);
    if (k <= 0) return s.substr(0, got);
    got += size_t(k);
  }
  return s;
}

void write_s(int fd, const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), ssize_t(s.size())); }

std::string padded_version(const std::string& v) { return v + std::string(16 - v.size(), '\0'); }

// The server half of version, system data and MTU, recording what the client sent.
void serve_setup(int fd, const std::string& version, std::vector<std::string>* got, char mtu = '3') {
  got->push_back(read_n(fd, 16));
  write_s(fd, padded_version(version));
  if (version < "5.70") return;  // perftest's client exits here; ours must too
  got->push_back(read_n(fd, 4));
  write_s(fd, std::string("\0\0\x20\0", 4));  // cycle buffer 8192
  got->push_back(read_n(fd, 4));
  write_s(fd, std::string("\0\0\0\x80", 4));  // cache line 128
  got->push_back(read_n(fd, 2));
  write_s(fd, std::string{mtu, '\0'});
}

/// `ch` connected to the fake server, and its setup (MTU 1024) agreed in `a`.
void set_up(Channel& ch, FakePerftestServer& peer, Channel::Agreed* a) {
  ASSERT_TRUE(ch.connect("127.0.0.1", peer.port(), 0, nullptr)) << ch.error();
  ASSERT_TRUE(ch.setup(1024, a)) << ch.error();
}

/// A setup (MTU 1024) against the fake server that must fail: its error.
std::string refused_setup(FakePerftestServer& peer) {
  Channel ch;
  if (!ch.connect("127.0.0.1", peer.port(), 0, nullptr)) {
    ADD_FAILURE() << ch.error();
    return ch.error();
  }
  Channel::Agreed a;
  EXPECT_FALSE(ch.setup(1024, &a));
  return ch.error();
}

TEST(PerftestChannel, SetupSpeaksPerftestsBytesAndAgrees) {
  std::vector<std::string> got;
  {
    FakePerftestServer peer([&](int fd) { serve_setup(fd, "6.06", &got, '2'); });
    Channel ch;
    Channel::Agreed a;
    ASSERT_NO_FATAL_FAILURE(set_up(ch, peer, &a));
    EXPECT_DOUBLE_EQ(a.peer_version, 6.06);
    EXPECT_EQ(a.cycle_buffer, 8192u);  // the larger of 4096 and the peer's
    EXPECT_EQ(a.cache_line, 128u);
    EXPECT_EQ(a.mtu, 512u);  // the smaller code: the peer's 2
  }  // the peer's script has ended: what it read can be looked at
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], padded_version("6.06"));
  EXPECT_EQ(got[1], std::string("\0\0\x10\0", 4));
  EXPECT_EQ(got[2], std::string("\0\0\0\x40", 4));
  EXPECT_EQ(got[3], std::string("3\0", 2));
}

TEST(PerftestChannel, RefusesAnOldPeer) {
  std::vector<std::string> got;
  FakePerftestServer peer([&](int fd) { serve_setup(fd, "5.60", &got); });
  const std::string error = refused_setup(peer);
  EXPECT_NE(error.find("5.60 is older than 5.70"), std::string::npos) << error;
}

TEST(PerftestChannel, RefusesAnInvalidMtu) {
  std::vector<std::string> got;
  FakePerftestServer peer([&](int fd) { serve_setup(fd, "6.06", &got, '7'); });
  const std::string error = refused_setup(peer);
  EXPECT_NE(error.find("invalid MTU"), std::string::npos) << error;
}

TEST(PerftestChannel, HandShakesBarriersReportAndClose) {
  std::vector<std::string> got;
  Dest server_dest = sample_dest();
  std::string server_line = format_key_line(server_dest);
  BwReport server_report;
  server_report.size = 4096;
  Dest mine;
  mine.qpn = 0x42;
  mine.psn = 0x123456;
  mine.gid = raw_qp::ipv4_mapped_gid(0xc6120003);
  {
  FakePerftestServer peer([&](int fd) {
    serve_setup(fd, "6.06", &got);
    for (int i = 0; i < 3; i++) {  // the first hand shake and two barriers: client writes first
      got.push_back(read_n(fd, 108));
      write_s(fd, server_line);
    }
    for (const auto& field : report_fields(server_report)) {
      got.push_back(read_n(fd, 8));
      write_s(fd, std::string(field.begin(), field.end()));
    }
    got.push_back(read_n(fd, 108));  // ctx_close_connection
    write_s(fd, server_line);
    got.push_back(read_n(fd, 5));
    write_s(fd, std::string("done", 5));
  });
  Channel ch;
  Channel::Agreed a;
  ASSERT_NO_FATAL_FAILURE(set_up(ch, peer, &a));
  Dest theirs;
  for (int i = 0; i < 3; i++) ASSERT_TRUE(ch.hand_shake(mine, &theirs, "test hand shake")) << ch.error();
  EXPECT_EQ(theirs, server_dest);
  BwReport mine_report, their_report;
  mine_report.size = 8192;
  mine_report.iters = 200;
  mine_report.bw_avg = 12.5;
  ASSERT_TRUE(ch.exchange_report(mine_report, &their_report)) << ch.error();
  EXPECT_EQ(their_report.size, 4096u);
  ASSERT_TRUE(ch.close_connection(mine)) << ch.error();
  }  // the peer's script has ended
  ASSERT_EQ(got.size(), 4u + 3 + 5 + 2);
  for (int i = 4; i < 7; i++) EXPECT_EQ(got[size_t(i)], format_key_line(mine));
  std::array<std::array<uint8_t, 8>, 5> sent{};
  for (size_t i = 0; i < 5; i++) std::memcpy(sent[i].data(), got[7 + i].data(), 8);
  EXPECT_EQ(parse_report_fields(sent).size, 8192u);
  EXPECT_EQ(parse_report_fields(sent).iters, 200u);
  EXPECT_EQ(parse_report_fields(sent).bw_avg, 12.5);
  EXPECT_EQ(got[12], format_key_line(mine));
  EXPECT_EQ(got[13], std::string("done", 5));
}

TEST(PerftestChannel, RefusesAMalformedHandShakeLine) {
  std::vector<std::string> got;
  FakePerftestServer peer([&](int fd) {
    serve_setup(fd, "6.06", &got);
    got.push_back(read_n(fd, 108));
    std::string bad = format_key_line(sample_dest());
    bad[20] = 'z';
    write_s(fd, bad);
  });
  Channel ch;
  Channel::Agreed a;
  ASSERT_NO_FATAL_FAILURE(set_up(ch, peer, &a));
  Dest theirs;
  EXPECT_FALSE(ch.hand_shake(Dest{}, &theirs, "first hand shake"));
  EXPECT_NE(ch.error().find("first hand shake: malformed hand shake line: byte 20"), std::string::npos) << ch.error();
}

TEST(PerftestChannel, NoticesAPeerOutOfStep) {
  std::vector<std::string> got;
  FakePerftestServer peer([&](int fd) {
    serve_setup(fd, "6.06", &got);
    got.push_back(read_n(fd, 108));
    write_s(fd, format_key_line(sample_dest()));
    got.push_back(read_n(fd, 108));
    Dest other = sample_dest();
    other.psn ^= 1;
    write_s(fd, format_key_line(other));
  });
  Channel ch;
  Channel::Agreed a;
  ASSERT_NO_FATAL_FAILURE(set_up(ch, peer, &a));
  Dest theirs;
  ASSERT_TRUE(ch.hand_shake(Dest{}, &theirs, "first")) << ch.error();
  EXPECT_FALSE(ch.hand_shake(Dest{}, &theirs, "barrier"));
  EXPECT_NE(ch.error().find("not in step"), std::string::npos) << ch.error();
}

TEST(PerftestChannel, SaysWhenThePeerHangsUp) {
  std::vector<std::string> got;
  FakePerftestServer peer([&](int fd) { serve_setup(fd, "6.06", &got); });
  Channel ch;
  Channel::Agreed a;
  ASSERT_NO_FATAL_FAILURE(set_up(ch, peer, &a));
  Dest theirs;
  EXPECT_FALSE(ch.hand_shake(Dest{}, &theirs, "first hand shake"));
  EXPECT_NE(ch.error().find("closed the connection where the first hand shake was expected"), std::string::npos)
      << ch.error();
}

// ---------------------------------------------------------------------------------------

TEST(PerftestFigures, LatencyAsPrintReportLat) {
  // Post-to-post deltas of 1, 2, ..., 10 us (the order shuffled): the two largest (9, 10)
  // do not count; median of 1..8 is 4.5, average 4.5; min 1; "max" is delta[8] = 9.
  std::vector<uint64_t> deltas_us = {3, 7, 1, 10, 5, 2, 9, 4, 8, 6};
  LatSamples s;
  s.size = 64;
  uint64_t t = 1000000;
  s.posted.push_back(t);
  for (uint64_t d : deltas_us) s.posted.push_back(t += d * 1000);
  const LatFigures ping = lat_figures(s, 2);
  EXPECT_EQ(ping.iters, 11u);
  EXPECT_DOUBLE_EQ(ping.t_min, 0.5);
  EXPECT_DOUBLE_EQ(ping.t_typical, 2.25);
  EXPECT_DOUBLE_EQ(ping.t_avg, 2.25);
  EXPECT_DOUBLE_EQ(ping.t_max, 4.5);
  const LatFigures read = lat_figures(s, 1);
  EXPECT_DOUBLE_EQ(read.t_typical, 4.5);
  EXPECT_DOUBLE_EQ(read.p99, 9.0);  // delta[ceil(8 * 0.99)] = delta[8]
  EXPECT_NE(lat_row(read).find(" 64      11 "), std::string::npos) << lat_row(read);
}

TEST(PerftestFigures, BandwidthAverageAndPeak) {
  // 10 messages of 1 MiB, all posted at 0, completed 1 ms apart from 1 ms: the whole run is
  // 10 MiB in 10 ms = 1000 MB/sec (MiB); the fastest stretch is the same 1 ms a message.
  BwSamples s;
  s.size = 1 << 20;
  s.iters = 10;
  s.cq_mod = 1;
  for (int i = 0; i < 10; i++) {
    s.posted.push_back(0);
    s.completed.push_back(uint64_t(i + 1) * 1000000);
  }
  const BwReport mb = bw_figures(s, false);
  EXPECT_NEAR(mb.bw_avg, 1000.0, 1e-9);
  EXPECT_NEAR(mb.bw_peak, 1000.0, 1e-9);
  EXPECT_NEAR(mb.msg_rate, 0.001, 1e-12);
  const BwReport gb = bw_figures(s, true);
  EXPECT_NEAR(gb.bw_avg, 1048576.0 * 1000 * 8 / 1e9, 1e-9);
  s.no_peak = true;
  EXPECT_EQ(bw_figures(s, false).bw_peak, 0.0);
  EXPECT_NE(bw_row(mb, false).find("1048576"), std::string::npos);
}

}  // namespace
}  // namespace ndnic::ndperf::perftest
