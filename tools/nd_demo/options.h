// nd_demo's command line. Without --role both sides run in this process over a net_ring pair;
// with it this process is one side on a real DPDK port (--dev, --ip) and the other side runs
// elsewhere: passive (the window's owner, it listens) or active (the peer, it connects).
// Parsed before EAL starts, so --help and usage errors never start it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/nd_app/arguments.h"

namespace ndnic::nd_demo {

enum class Role : uint8_t { kBoth, kPassive, kActive };

constexpr unsigned kDefaultWaitS = 60;

struct Options {
  Role role = Role::kBoth;
  std::string device;        ///< --dev: ethdev port or vdev devargs
  uint32_t ipv4 = 0;         ///< --ip, host order
  uint32_t peer_ipv4 = 0;    ///< --peer (active): the passive side, host order
  std::string capture;       ///< --capture: pcap of the port's frames
  unsigned wait_s = kDefaultWaitS;  ///< --wait: how long the two sides wait for each other
};

using Parsed = nd_app::Parsed<Options>;

/// `args`: the program's own arguments (after "--", or all when there is none).
Parsed parse_options(const std::vector<std::string>& args);

using nd_app::program_args;  // tools/nd_app/arguments.h

}  // namespace ndnic::nd_demo
