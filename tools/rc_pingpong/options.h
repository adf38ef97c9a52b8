// rc_pingpong's command line: ibv_rc_pingpong's options (-p -s -n -m -g -r) with its
// defaults, plus what an ndnic port needs that an RDMA device already has (an address, a port).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ndnic::rc_pingpong {

constexpr uint16_t kDefaultTcpPort = 18515;
constexpr uint32_t kDefaultIpv4 = 0xC6120003;  // 198.18.0.3: next to the interop lab's tap
constexpr const char* kDefaultDevice = "net_af_packet0,iface=rxetap0";

struct Options {
  uint16_t port = kDefaultTcpPort;
  uint32_t size = 4096;
  uint32_t iters = 1000;
  uint32_t mtu = 1024;
  int gid_index = -1;          ///< -1: advertise a zero GID, as ibv_rc_pingpong without -g
  uint32_t rx_depth = 500;
  uint32_t ipv4 = kDefaultIpv4;
  std::string device = kDefaultDevice;
  std::string capture;
  unsigned retry_s = 0;
  std::string host;            ///< empty: server
};

/// Parses the program's arguments (after EAL's "--"). Prints usage or the error and returns
/// nothing when the run should stop.
std::optional<Options> parse_options(const std::vector<std::string>& args);

}  // namespace ndnic::rc_pingpong
