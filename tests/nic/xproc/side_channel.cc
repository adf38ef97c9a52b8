#include "tests/nic/xproc/side_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace ndnic::nic::xproc {
namespace {

using Clock = std::chrono::steady_clock;

bool make_address(const std::string& path, sockaddr_un* a) {
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (path.size() >= sizeof a->sun_path) return false;
  std::memcpy(a->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Waits at most a millisecond: the caller's engine must not starve between checks.
bool ready(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 1) > 0;
}

}  // namespace

SideChannel::~SideChannel() { close(); }

void SideChannel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  closed_ = true;
  if (!bound_path_.empty()) ::unlink(bound_path_.c_str());
  bound_path_.clear();
}

bool SideChannel::accept(const std::string& path, const Idle& idle, int timeout_ms) {
  sockaddr_un a;
  if (!make_address(path, &a)) return error_ = "socket path too long: " + path, false;
  const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) return error_ = std::string("socket: ") + strerror(errno), false;
  ::unlink(path.c_str());
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(lfd, 1) < 0) {
    error_ = "bind/listen " + path + ": " + strerror(errno);
    ::close(lfd);
    return false;
  }
  bound_path_ = path;
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!ready(lfd, POLLIN)) {
    if (Clock::now() > end) {
      ::close(lfd);
      return error_ = "no client connected to " + path, false;
    }
    idle();
  }
  fd_ = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(lfd);
  if (fd_ < 0) return error_ = std::string("accept: ") + strerror(errno), false;
  return true;
}

bool SideChannel::connect(const std::string& path, const Idle& idle, int timeout_ms) {
  sockaddr_un a;
  if (!make_address(path, &a)) return error_ = "socket path too long: " + path, false;
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return error_ = std::string("socket: ") + strerror(errno), false;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (Clock::now() > end) return error_ = "cannot connect to " + path + ": " + strerror(err), false;
    // The server may not have bound the socket yet: keep polling and try again.
    for (int i = 0; i < 10; i++) {
      idle();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

bool SideChannel::send(const std::string& line) {
  const std::string msg = line + "\n";
  size_t off = 0;
  while (off < msg.size()) {
    const ssize_t k = ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return error_ = std::string("send: ") + strerror(errno), false;
    off += size_t(k);
  }
  return true;
}

bool SideChannel::fill(int wait_ms) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return false;
  char buf[512];
  const ssize_t k = ::read(fd_, buf, sizeof buf);
  if (k <= 0) {
    closed_ = true;
    error_ = "the peer closed the side channel";
    return false;
  }
  pending_.append(buf, size_t(k));
  return true;
}

bool SideChannel::take_line(std::string* line) {
  const size_t nl = pending_.find('\n');
  if (nl == std::string::npos) return false;
  *line = pending_.substr(0, nl);
  pending_.erase(0, nl + 1);
  return true;
}

bool SideChannel::try_receive(std::string* line) {
  if (take_line(line)) return true;
  while (!closed_ && fill(0))
    if (take_line(line)) return true;
  return false;
}

bool SideChannel::receive(std::string* line, const Idle& idle, int timeout_ms) {
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!take_line(line)) {
    if (closed_) return false;
    if (Clock::now() > end) return error_ = "timed out waiting for the peer", false;
    fill(1);
    idle();
  }
  return true;
}

}  // namespace ndnic::nic::xproc
