// perftest's out-of-band protocol (linux-rdma/perftest 4.5-0.17, the version Debian 12 ships as
// perftest 4.5+0.17-1; its configure.ac says VERSION 6.06): what ib_send_bw and its siblings
// say over TCP when they run without rdma_cm (no -R). Everything is an "exchange" of a fixed
// number of bytes: the client writes its bytes then reads the server's, the server reads then
// writes (ctx_xchg_data_ethernet). perftest reads each exchange with one read() of exactly that
// size, so ours go out in one write() each.
//
// In order (perftest_communication.c):
//   version        16 bytes: the version string, NUL-padded (exchange_versions); a peer below
//                  5.70 is refused (check_version_compatibility)
//   system data    4 bytes: the cycle buffer (page size), then 4 bytes: the cache line size,
//                  each a network-order int; both sides take the larger (check_sys_data)
//   MTU            2 bytes: "%d" of the ibv_mtu code (1 = 256 .. 5 = 4096) and its NUL; both
//                  take the smaller valid code (check_mtu)
//   hand shakes    108 bytes: "lid:out_reads:qpn:psn:rkey:vaddr:gid[16]:srqn:" in hex with fixed
//                  widths and a NUL (KEY_PRINT_FMT_GID; ctx_hand_shake). The first carries the
//                  QP's address; the later ones carry the same line again and serve as barriers.
//   bw report      5 exchanges of 8 bytes, byte-swapped to big-endian: size, iterations
//                  (64-bit since 5.33), BW peak, BW average, message rate (doubles; xchg_bw_reports)
//   close          a hand shake, then each side writes "done" with its NUL (ctx_close_connection)
// Which hand shakes and reports a test has, and when, is in flow.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tools/raw_qp/gid.h"

namespace ndnic::ndperf::perftest {

constexpr size_t kVersionBytes = 16;        ///< MAX_VERSION
constexpr std::string_view kVersion = "6.06";  ///< what perftest 4.5-0.17 sends
constexpr double kMinPeerVersion = 5.70;     ///< check_version_compatibility
constexpr size_t kSysDataBytes = 4;          ///< sizeof(int), each of the two values
constexpr size_t kMtuBytes = 2;              ///< sizeof(char[2]) for peers from 5.31 on
constexpr size_t kKeyLineBytes = 108;        ///< KEY_MSG_SIZE_GID, NUL included
constexpr size_t kDoneBytes = 5;             ///< sizeof "done"
constexpr size_t kReportFieldBytes = 8;      ///< each bw report field
constexpr size_t kReportFields = 5;          ///< size, iters, bw_peak, bw_avg, msgRate_avg
constexpr uint32_t kDefaultCycleBuffer = 4096;  ///< sysconf(_SC_PAGESIZE) on x86-64
constexpr uint32_t kDefaultCacheLine = 64;      ///< DEF_CACHE_LINE_SIZE

/// One QP's address as a hand shake carries it (struct pingpong_dest's exchanged fields).
struct Dest {
  uint16_t lid = 0;
  uint16_t out_reads = 0;
  uint32_t qpn = 0;    ///< 24 bits
  uint32_t psn = 0;    ///< 24 bits
  uint32_t rkey = 0;
  uint64_t vaddr = 0;
  raw_qp::Gid gid{};
  uint32_t srqn = 0;
  bool operator==(const Dest&) const = default;
};

/// The 108-byte line, NUL included, exactly as perftest's sprintf writes it.
std::string format_key_line(const Dest& d);
/// The line back, or a description of what is wrong with it (perftest's own parser would
/// read garbage from a short or shifted line; we refuse anything but the exact layout).
std::optional<Dest> parse_key_line(std::string_view line, std::string* error);

/// The version field: the string, NUL-padded to 16 bytes.
std::array<char, kVersionBytes> version_field(std::string_view v);
/// What perftest makes of a peer's version field (atof of the text before the first NUL);
/// nothing when the field holds no number or no NUL.
std::optional<double> parse_version(const char* field, size_t len);

/// ibv_mtu codes: 1 = 256 .. 5 = 4096; 0 for any other byte count.
int mtu_code(uint32_t bytes);
uint32_t mtu_bytes(int code);
/// The 2-byte MTU field: one digit and a NUL.
std::array<char, kMtuBytes> mtu_field(int code);
/// The peer's code (strtol, as perftest), or nothing when it is not a valid code.
std::optional<int> parse_mtu_field(const char* field, size_t len);

/// A network-order int (the system data) and back.
std::array<uint8_t, kSysDataBytes> int_field(uint32_t v);
uint32_t parse_int_field(const uint8_t* field);

/// One bw report: what the client measured, sent after its last size.
struct BwReport {
  uint64_t size = 0;
  uint64_t iters = 0;
  double bw_peak = 0, bw_avg = 0, msg_rate = 0;
};
/// Its five 8-byte fields in exchange order, each big-endian (hton_64 / hton_double).
std::array<std::array<uint8_t, kReportFieldBytes>, kReportFields> report_fields(const BwReport& r);
BwReport parse_report_fields(const std::array<std::array<uint8_t, kReportFieldBytes>, kReportFields>& f);

/// Called while a wait on TCP goes on: the RDMA device must keep answering (ARP, ACKs,
/// READ responses) while the program waits for its peer on the side channel.
using Idle = std::function<void()>;

/// The TCP connection with a perftest peer, speaking the exchanges above. Errors are kept
/// (error()) with the step that failed.
class Channel {
 public:
  Channel() = default;
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// Client: connects to host:port, trying again for up to retry_s seconds while nobody listens.
  bool connect(const std::string& host, uint16_t port, unsigned retry_s, const Idle& idle);
  /// Server: waits for one client on port (any address), as perftest's server does.
  bool accept(uint16_t port, const Idle& idle);
  bool is_client() const { return client_; }
  /// The peer's IPv4 address (host order), for when its GID is not IPv4-mapped.
  uint32_t peer_ipv4() const { return peer_ipv4_; }

  /// One exchange of n bytes each way; `step` names it in errors.
  bool exchange(const void* mine, void* theirs, size_t n, const char* step);
  /// The version, system data and MTU exchanges. Fills the agreed values; refuses an old or
  /// malformed version and an invalid MTU code.
  struct Agreed {
    double peer_version = 0;
    uint32_t cycle_buffer = 0, cache_line = 0;
    uint32_t mtu = 0;  ///< bytes
  };
  bool setup(uint32_t mtu, Agreed* out);
  /// A hand shake: our line out, the peer's in. The first fills *theirs; every later one must
  /// carry the same line (it is a barrier), or the two sides are not in step.
  bool hand_shake(const Dest& mine, Dest* theirs, const char* step);
  /// The bw report exchange.
  bool exchange_report(const BwReport& mine, BwReport* theirs);
  /// ctx_close_connection: a hand shake, then "done" each way.
  bool close_connection(const Dest& mine);
  const std::string& error() const { return error_; }

 private:
  bool write_all(const void* p, size_t n, const char* step);
  bool read_all(void* p, size_t n, const char* step);
  bool fail(const std::string& what);

  int fd_ = -1;
  bool client_ = false;
  uint32_t peer_ipv4_ = 0;
  Idle idle_;
  std::optional<Dest> peer_line_;  ///< the first hand shake's line
  std::string error_;
};

}  // namespace ndnic::ndperf::perftest
