// The command line of ndping and ndpingpong: the SDK examples' options (-b/-p, -q, the server's
// or client's IPv4 and port) in getopt form, plus what ndnic needs that an ND provider already
// has (a DPDK port and an address on it) and what a short run needs (sizes, iterations).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/nd_app/arguments.h"

namespace ndnic::ndping {

/// Which of the two programs is parsing: the defaults and the usage text differ.
enum class Tool : uint8_t { kPing, kPingPong };

/// Embedded: both nodes in this process over a net_ring pair. Server or client: one node on
/// a DPDK port, the peer in another process or on another host.
enum class Role : uint8_t { kEmbedded, kServer, kClient };

constexpr uint32_t kMaxXfer = 4u << 20;        ///< the SDK's x_MaxXfer: the sweep's last size
constexpr uint16_t kPingPort = 54324;          ///< the SDK's x_DefaultPort for ndping
constexpr uint16_t kPingPongPort = 54325;      ///< ... and for ndpingpong
constexpr uint32_t kDefaultPipeline = 128;     ///< ndping's -q default, as the SDK's
constexpr unsigned kDefaultTimeoutS = 10;      ///< a side that sees no completion this long gives up
constexpr uint32_t kMaxSge = 8;                ///< ndnic's MaxInboundSge / MaxOutboundSge

struct Options {
  Tool tool = Tool::kPing;
  Role role = Role::kEmbedded;
  uint32_t peer_ipv4 = 0;            ///< client: the server's address, host order
  uint16_t port = 0;                 ///< the ND port the server listens on
  uint32_t ipv4 = 0;                 ///< server/client: our address on --dev, host order
  std::string device;                ///< server/client: the DPDK port (ethdev or vdev devargs)
  uint32_t min_size = 1;             ///< the sweep: powers of two from min_size up to max_size
  uint32_t max_size = kMaxXfer;
  uint32_t iters = 0;                ///< per size; 0: scaled to the size (see sweep.h)
  uint32_t sge = 1;
  uint32_t pipeline = kDefaultPipeline;  ///< ndping: sends in flight at most
  bool blocking = false;             ///< wait for completions with Notify, not by polling
  bool wait_chosen = false;          ///< -b or -p given; otherwise launch() picks (see there)
  bool check = true;                 ///< verify the payload (first and last message of each size)
  unsigned retry_s = 0;              ///< client: retry a refused or unanswered connect this long
  unsigned timeout_s = kDefaultTimeoutS;
  std::string capture;               ///< pcap of the client's port (embedded) or our port
};

using Parsed = nd_app::Parsed<Options>;

/// Parses the program's arguments (those after EAL's "--").
Parsed parse_options(Tool tool, const std::vector<std::string>& args);

using nd_app::program_args;  // tools/nd_app/arguments.h

const char* tool_name(Tool tool);

}  // namespace ndnic::ndping
