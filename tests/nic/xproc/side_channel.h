// The side channel between the two peers: a unix stream socket carrying lines of text. It
// carries what RDMA cannot before the QPs are connected (QPNs, PSNs, keys, addresses) and the
// final handshake. Every wait keeps calling `idle`, because the engine must go on polling: the
// peer may be waiting for an ARP reply or an ACK from us meanwhile.
#pragma once

#include <functional>
#include <string>

namespace ndnic::nic::xproc {

using Idle = std::function<void()>;

class SideChannel {
 public:
  SideChannel() = default;
  ~SideChannel();
  SideChannel(const SideChannel&) = delete;
  SideChannel& operator=(const SideChannel&) = delete;

  /// Server: binds `path` and accepts one connection.
  bool accept(const std::string& path, const Idle& idle, int timeout_ms);
  /// Client: connects to `path`, retrying while the server is not listening yet.
  bool connect(const std::string& path, const Idle& idle, int timeout_ms);

  bool send(const std::string& line);
  /// Waits for the next line (without its newline).
  bool receive(std::string* line, const Idle& idle, int timeout_ms);
  /// A line if one is complete, without waiting. False also when the peer hung up (see closed()).
  bool try_receive(std::string* line);
  bool closed() const { return closed_; }
  void close();
  const std::string& error() const { return error_; }

 private:
  bool fill(int wait_ms);
  bool take_line(std::string* line);

  int fd_ = -1;
  std::string bound_path_;  ///< unlinked by the destructor
  std::string pending_;
  bool closed_ = false;
  std::string error_;
};

}  // namespace ndnic::nic::xproc
