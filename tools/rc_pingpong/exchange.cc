#include "tools/rc_pingpong/exchange.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ndnic::rc_pingpong {
namespace {

// sizeof "0000:000000:000000:" plus 32 hex digits: what both sides write and expect.
constexpr size_t kMsgLen = 52;
constexpr char kDone[] = "done";  // written with its NUL, as the original does

// Closes the descriptor when the exchange returns, whichever way.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const void* p, size_t n) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = ::write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

// Polls `idle` until fd is ready; a millisecond's wait between rounds keeps ARP answers quick.
bool wait_readable(int fd, const Idle& idle) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 1);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
    idle();
  }
}

// TCP may split a message; the original reads once and is lucky on a LAN, we loop.
bool read_all(int fd, void* p, size_t n, const Idle& idle) {
  auto* b = static_cast<char*>(p);
  while (n > 0) {
    if (!wait_readable(fd, idle)) return false;
    const ssize_t k = ::read(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

uint32_t peer_ipv4(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) return 0;
  return ntohl(sa.sin_addr.s_addr);
}

int connect_once(const addrinfo* ai) {
  for (; ai; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
    ::close(fd);
  }
  return -1;
}

}  // namespace

std::string to_wire(const Dest& d) {
  char msg[kMsgLen];
  int n = std::snprintf(msg, sizeof msg, "%04x:%06x:%06x:", d.lid, d.qpn, d.psn);
  // The GID as four big-endian 32-bit words: in effect its 16 bytes in order.
  for (uint8_t b : d.gid) n += std::snprintf(msg + n, sizeof msg - size_t(n), "%02x", b);
  return std::string(msg, kMsgLen);
}

std::optional<Dest> from_wire(const char* msg, size_t len) {
  if (len != kMsgLen || msg[kMsgLen - 1] != '\0') return std::nullopt;
  unsigned lid, qpn, psn;
  char hex[33] = {};
  if (std::sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, hex) != 4 || std::strlen(hex) != 32)
    return std::nullopt;
  Dest d;
  d.lid = uint16_t(lid);
  d.qpn = qpn & 0xffffff;
  d.psn = psn & 0xffffff;
  for (int i = 0; i < 16; i++) {
    unsigned b;
    if (std::sscanf(hex + 2 * i, "%2x", &b) != 1) return std::nullopt;
    d.gid[i] = uint8_t(b);
  }
  return d;
}

std::optional<Peer> client_exchange(const std::string& host, uint16_t port, const Dest& mine,
                                    unsigned retry_s, const Idle& idle) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // ndnic speaks RoCEv2 over IPv4, and so does its side channel
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); e != 0) {
    std::fprintf(stderr, "%s for %s:%u\n", gai_strerror(e), host.c_str(), port);
    return std::nullopt;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(retry_s);
  Fd s{connect_once(res)};
  auto next_try = std::chrono::steady_clock::now();
  while (s.fd < 0 && next_try < deadline) {
    next_try += std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < next_try) idle();
    s.fd = connect_once(res);
  }
  freeaddrinfo(res);
  if (s.fd < 0) {
    std::fprintf(stderr, "Couldn't connect to %s:%u\n", host.c_str(), port);
    return std::nullopt;
  }
  const std::string msg = to_wire(mine);
  if (!write_all(s.fd, msg.data(), msg.size())) {
    std::fprintf(stderr, "Couldn't send local address\n");
    return std::nullopt;
  }
  char in[kMsgLen];
  if (!read_all(s.fd, in, sizeof in, idle) || !write_all(s.fd, kDone, sizeof kDone)) {
    std::fprintf(stderr, "Couldn't read/write remote address\n");
    return std::nullopt;
  }
  const std::optional<Dest> d = from_wire(in, sizeof in);
  if (!d) {
    std::fprintf(stderr, "Malformed remote address\n");
    return std::nullopt;
  }
  return Peer{*d, peer_ipv4(s.fd)};
}

std::optional<Peer> server_exchange(uint16_t port, const Dest& mine,
                                    const std::function<bool(const Peer&)>& connect, const Idle& idle) {
  Fd ls{socket(AF_INET, SOCK_STREAM, 0)};
  const int one = 1;
  setsockopt(ls.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (ls.fd < 0 || bind(ls.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(ls.fd, 1) != 0) {
    std::fprintf(stderr, "Couldn't listen to port %u\n", port);
    return std::nullopt;
  }
  Fd c;
  if (wait_readable(ls.fd, idle)) c.fd = accept(ls.fd, nullptr, nullptr);
  if (c.fd < 0) {
    std::fprintf(stderr, "accept() failed\n");
    return std::nullopt;
  }
  ::close(ls.fd);
  ls.fd = -1;
  char in[kMsgLen];
  const std::optional<Dest> d = read_all(c.fd, in, sizeof in, idle) ? from_wire(in, sizeof in) : std::nullopt;
  if (!d) {
    std::fprintf(stderr, "Couldn't read remote address\n");
    return std::nullopt;
  }
  const Peer peer{*d, peer_ipv4(c.fd)};
  if (!connect(peer)) {
    std::fprintf(stderr, "Couldn't connect to remote QP\n");
    return std::nullopt;
  }
  const std::string msg = to_wire(mine);
  char done[sizeof kDone];
  if (!write_all(c.fd, msg.data(), msg.size()) || !read_all(c.fd, done, sizeof done, idle)) {
    std::fprintf(stderr, "Couldn't send/recv local address\n");
    return std::nullopt;
  }
  return peer;
}

}  // namespace ndnic::rc_pingpong
