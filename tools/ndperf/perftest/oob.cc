#include "tools/ndperf/perftest/oob.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ndnic::ndperf::perftest {
namespace {

// KEY_PRINT_FMT_GID's fields in order with their hex widths; each is followed by ':'.
// lid, out_reads, qpn, psn, rkey, vaddr, 16 GID bytes, srqn.
constexpr int kKeyWidths[] = {4, 4, 6, 6, 8, 16, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 8};
constexpr size_t kKeyFields = sizeof kKeyWidths / sizeof kKeyWidths[0];
constexpr char kDone[kDoneBytes] = {'d', 'o', 'n', 'e', '\0'};

std::array<uint8_t, 8> be64(uint64_t v) {
  std::array<uint8_t, 8> b{};
  for (int i = 0; i < 8; i++) b[size_t(i)] = uint8_t(v >> (56 - 8 * i));
  return b;
}

uint64_t from_be64(const uint8_t* b) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | b[i];
  return v;
}

std::array<uint8_t, 8> be_double(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return be64(bits);
}

double from_be_double(const uint8_t* b) {
  const uint64_t bits = from_be64(b);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::string format_key_line(const Dest& d) {
  char msg[kKeyLineBytes];
  int n = std::snprintf(msg, sizeof msg, "%04x:%04x:%06x:%06x:%08x:%016llx:", d.lid, d.out_reads,
                        d.qpn & 0xffffff, d.psn & 0xffffff, d.rkey, static_cast<unsigned long long>(d.vaddr));
  for (uint8_t b : d.gid) n += std::snprintf(msg + n, sizeof msg - size_t(n), "%02x:", b);
  std::snprintf(msg + n, sizeof msg - size_t(n), "%08x:", d.srqn);
  return std::string(msg, kKeyLineBytes);
}

std::optional<Dest> parse_key_line(std::string_view line, std::string* error) {
  auto bad = [&](const std::string& why) -> std::optional<Dest> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (line.size() != kKeyLineBytes) return bad("hand shake line of " + std::to_string(line.size()) + " bytes");
  if (line.back() != '\0') return bad("hand shake line without its NUL");
  uint64_t values[kKeyFields];
  size_t pos = 0;
  for (size_t f = 0; f < kKeyFields; f++) {
    uint64_t v = 0;
    for (int i = 0; i < kKeyWidths[f]; i++, pos++) {
      const char c = line[pos];
      if (!is_hex(c)) {
        std::string why = "hand shake line: byte ";
        why.append(std::to_string(pos)).append(" is not a hex digit");
        return bad(why);
      }
      v = v << 4 | uint64_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (line[pos++] != ':') {
      std::string why = "hand shake line: no ':' at byte ";
      why.append(std::to_string(pos - 1));
      return bad(why);
    }
    values[f] = v;
  }
  Dest d;
  d.lid = uint16_t(values[0]);
  d.out_reads = uint16_t(values[1]);
  d.qpn = uint32_t(values[2]);
  d.psn = uint32_t(values[3]);
  d.rkey = uint32_t(values[4]);
  d.vaddr = values[5];
  for (size_t i = 0; i < 16; i++) d.gid[i] = uint8_t(values[6 + i]);
  d.srqn = uint32_t(values[22]);
  return d;
}

std::array<char, kVersionBytes> version_field(std::string_view v) {
  std::array<char, kVersionBytes> f{};
  std::memcpy(f.data(), v.data(), std::min(v.size(), kVersionBytes - 1));
  return f;
}

std::optional<double> parse_version(const char* field, size_t len) {
  const void* nul = std::memchr(field, '\0', len);
  if (!nul) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(field, &end);
  if (end == field) return std::nullopt;
  return v;
}

int mtu_code(uint32_t bytes) {
  for (int code = 1; code <= 5; code++)
    if (mtu_bytes(code) == bytes) return code;
  return 0;
}

uint32_t mtu_bytes(int code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

std::array<char, kMtuBytes> mtu_field(int code) { return {char('0' + code), '\0'}; }

std::optional<int> parse_mtu_field(const char* field, size_t len) {
  if (len != kMtuBytes || field[1] != '\0') return std::nullopt;
  char text[kMtuBytes + 1] = {field[0], field[1], '\0'};
  char* end = nullptr;
  const long code = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || mtu_bytes(int(code)) == 0) return std::nullopt;
  return int(code);
}

std::array<uint8_t, kSysDataBytes> int_field(uint32_t v) {
  return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

uint32_t parse_int_field(const uint8_t* f) {
  return uint32_t(f[0]) << 24 | uint32_t(f[1]) << 16 | uint32_t(f[2]) << 8 | f[3];
}

std::array<std::array<uint8_t, kReportFieldBytes>, kReportFields> report_fields(const BwReport& r) {
  return {be64(r.size), be64(r.iters), be_double(r.bw_peak), be_double(r.bw_avg), be_double(r.msg_rate)};
}

BwReport parse_report_fields(const std::array<std::array<uint8_t, kReportFieldBytes>, kReportFields>& f) {
  BwReport r;
  r.size = from_be64(f[0].data());
  r.iters = from_be64(f[1].data());
  r.bw_peak = from_be_double(f[2].data());
  r.bw_avg = from_be_double(f[3].data());
  r.msg_rate = from_be_double(f[4].data());
  return r;
}

// ---------------------------------------------------------------------------------------

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

bool Channel::fail(const std::string& what) {
  error_ = what;
  return false;
}

namespace {

uint32_t sockaddr_ipv4(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) return 0;
  return ntohl(sa.sin_addr.s_addr);
}

// Rounds of the device between two looks at the socket: a write_bw or read_bw server does
// all its RDMA work in here (it waits on TCP while the client moves data), so the device is
// polled flat out, and the system call only now and then.
constexpr int kIdleRoundsPerPoll = 32;

// Waits for fd to be readable, polling the device meanwhile.
bool wait_readable(int fd, const Idle& idle) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, idle ? 0 : 1);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    if (idle)
      for (int i = 0; i < kIdleRoundsPerPoll; i++) idle();
  }
}

}  // namespace

bool Channel::connect(const std::string& host, uint16_t port, unsigned retry_s, const Idle& idle) {
  client_ = true;
  idle_ = idle;
  addrinfo hints{};
  hints.ai_family = AF_INET;  // as perftest's ethernet_client_connect
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); e != 0) {
    std::string why = "cannot resolve ";
    why.append(host).append(": ").append(gai_strerror(e));
    return fail(why);
  }
  auto try_once = [&] {
    for (const addrinfo* ai = res; ai; ai = ai->ai_next) {
      const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
      ::close(fd);
    }
    return -1;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(retry_s);
  fd_ = try_once();
  while (fd_ < 0 && std::chrono::steady_clock::now() < deadline) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < next)
      if (idle_) idle_();
    fd_ = try_once();
  }
  freeaddrinfo(res);
  if (fd_ < 0) {
    std::string why = "couldn't connect to ";
    why.append(host).append(":").append(std::to_string(port));
    return fail(why);
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  peer_ipv4_ = sockaddr_ipv4(fd_);
  return true;
}

bool Channel::accept(uint16_t port, const Idle& idle) {
  client_ = false;
  idle_ = idle;
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(ls, 1) != 0) {
    if (ls >= 0) ::close(ls);
    std::string why = "couldn't listen to TCP port ";
    why.append(std::to_string(port)).append(": ").append(std::strerror(errno));
    return fail(why);
  }
  if (wait_readable(ls, idle_)) fd_ = ::accept(ls, nullptr, nullptr);
  ::close(ls);
  if (fd_ < 0) return fail("accept() failed");
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  peer_ipv4_ = sockaddr_ipv4(fd_);
  return true;
}

bool Channel::write_all(const void* p, size_t n, const char* step) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = ::send(fd_, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      std::string why = "perftest peer: cannot send the ";
      why.append(step).append(": ").append(std::strerror(errno));
      return fail(why);
    }
    b += k;
    n -= size_t(k);
  }
  return true;
}

bool Channel::read_all(void* p, size_t n, const char* step) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    if (!wait_readable(fd_, idle_)) return fail(std::string("poll failed while waiting for the ") + step);
    const ssize_t k = ::read(fd_, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      std::string why = "perftest peer closed the connection where the ";
      why.append(step).append(" was expected (is it running the same test?)");
      return fail(why);
    }
    b += k;
    n -= size_t(k);
  }
  return true;
}

bool Channel::exchange(const void* mine, void* theirs, size_t n, const char* step) {
  if (client_) return write_all(mine, n, step) && read_all(theirs, n, step);
  return read_all(theirs, n, step) && write_all(mine, n, step);
}

bool Channel::setup(uint32_t mtu, Agreed* out) {
  const auto mine = version_field(kVersion);
  char theirs[kVersionBytes];
  if (!exchange(mine.data(), theirs, kVersionBytes, "version")) return false;
  const std::optional<double> v = parse_version(theirs, kVersionBytes);
  if (!v) return fail("perftest peer sent no version number (is it perftest, without -R?)");
  if (*v < kMinPeerVersion) {
    char why[160];
    std::snprintf(why, sizeof why, "perftest peer's version %.2f is older than %.2f, the oldest this protocol speaks to",
                  *v, kMinPeerVersion);
    return fail(why);
  }
  out->peer_version = *v;
  uint8_t peer[kSysDataBytes];
  if (!exchange(int_field(kDefaultCycleBuffer).data(), peer, kSysDataBytes, "cycle buffer size")) return false;
  out->cycle_buffer = std::max(kDefaultCycleBuffer, parse_int_field(peer));
  if (!exchange(int_field(kDefaultCacheLine).data(), peer, kSysDataBytes, "cache line size")) return false;
  out->cache_line = std::max(kDefaultCacheLine, parse_int_field(peer));
  // Sizes we will allocate from: refuse nonsense rather than allocate it.
  if (out->cycle_buffer > (64u << 20) || out->cache_line > 4096) {
    char why[120];
    std::snprintf(why, sizeof why, "perftest peer's cycle buffer %u or cache line %u is out of range",
                  out->cycle_buffer, out->cache_line);
    return fail(why);
  }
  const int code = mtu_code(mtu);
  char peer_mtu[kMtuBytes];
  if (!exchange(mtu_field(code).data(), peer_mtu, kMtuBytes, "MTU")) return false;
  const std::optional<int> pc = parse_mtu_field(peer_mtu, kMtuBytes);
  if (!pc) return fail("perftest peer sent an invalid MTU code");
  out->mtu = mtu_bytes(std::min(code, *pc));
  return true;
}

bool Channel::hand_shake(const Dest& mine, Dest* theirs, const char* step) {
  const std::string line = format_key_line(mine);
  char in[kKeyLineBytes];
  if (!exchange(line.data(), in, kKeyLineBytes, step)) return false;
  std::string why;
  const std::optional<Dest> d = parse_key_line(std::string_view(in, kKeyLineBytes), &why);
  if (!d) {
    std::string what = "perftest peer, ";
    what.append(step).append(": malformed ").append(why);
    return fail(what);
  }
  if (peer_line_ && !(*d == *peer_line_)) {
    std::string what = "perftest peer, ";
    what.append(step).append(": its address line changed; the two sides are not in step (same test on both?)");
    return fail(what);
  }
  peer_line_ = *d;
  if (theirs) *theirs = *d;
  return true;
}

bool Channel::exchange_report(const BwReport& mine, BwReport* theirs) {
  const auto out = report_fields(mine);
  std::array<std::array<uint8_t, kReportFieldBytes>, kReportFields> in{};
  static const char* const kStep[kReportFields] = {"report's size", "report's iterations", "report's BW peak",
                                                   "report's BW average", "report's message rate"};
  for (size_t i = 0; i < kReportFields; i++)
    if (!exchange(out[i].data(), in[i].data(), kReportFieldBytes, kStep[i])) return false;
  *theirs = parse_report_fields(in);
  return true;
}

bool Channel::close_connection(const Dest& mine) {
  if (!hand_shake(mine, nullptr, "closing hand shake")) return false;
  // Both sides write "done"; perftest never reads it. We do, so a peer that wrote anything
  // else there is noticed.
  char in[kDoneBytes];
  if (!write_all(kDone, kDoneBytes, "final \"done\"") || !read_all(in, kDoneBytes, "final \"done\"")) return false;
  if (std::memcmp(in, kDone, kDoneBytes) != 0) return fail("perftest peer ended with something other than \"done\"");
  return true;
}

}  // namespace ndnic::ndperf::perftest
