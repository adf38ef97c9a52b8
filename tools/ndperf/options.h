// ndperf's command line: perftest's options where perftest has one (-s, -a, -n, -D, -q, -t,
// -m, -e, -p), plus the test list, the output files, and what ndnic needs to stand on a DPDK
// port (--dev, --ip). Parsed before EAL starts, so --help and usage errors never start it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/nd_app/arguments.h"
#include "tools/ndperf/catalog.h"

namespace ndnic::ndperf {

/// Embedded: both ends in this process over a net_ring pair. Server or client: one end on a
/// DPDK port, the other in another process or on another host.
enum class Role : uint8_t { kEmbedded, kServer, kClient };
const char* role_name(Role r);

constexpr uint32_t kMinSweepSize = 2;          ///< perftest's -a: 2 B ...
constexpr uint32_t kMaxSize = 8u << 20;        ///< ... to 8 MiB
constexpr uint16_t kDefaultPort = 18515;       ///< perftest's default port
constexpr uint32_t kDefaultTxDepth = 128;      ///< perftest's bandwidth tx depth
constexpr uint32_t kMaxTxDepth = 1024;
constexpr uint32_t kMaxQps = 64;
constexpr uint32_t kDefaultMtu = 1024;         ///< rxe's on a 1500-byte link, and the CM's default
constexpr unsigned kDefaultTimeoutS = 10;

/// Who moves each ndnic device: worker lcores of its own, or the application thread that uses
/// it, inside its ND calls (run to completion: one thread per node).
enum class Drive : uint8_t { kWorkers, kThread };
const char* drive_name(Drive d);

struct Options {
  Role role = Role::kEmbedded;
  std::vector<Test> tests;           ///< in the order given, no duplicates
  uint32_t size = 0;                 ///< -s; 0: each test's default
  bool sweep = false;                ///< -a: 2 B .. 8 MiB
  uint32_t iters = 0;                ///< -n per size (and per QP); 0: scaled defaults
  uint32_t duration_s = 0;           ///< -D: each size runs this long instead
  uint32_t qps = 1;
  /// --threads: application threads per node for send_bw, write_bw and read_bw over several
  /// QPs; 0 until launch resolves it (see resolve_threads).
  uint32_t threads = 0;
  uint32_t tx_depth = kDefaultTxDepth;
  uint32_t mtu = kDefaultMtu;
  bool events = false;               ///< -e: wait for completions with Notify
  /// --notify-watch: how long a Notify wait watches its CQ before it sleeps (-1: ndnic's default)
  int64_t notify_watch_us = -1;
  bool wait_chosen = false;          ///< -e or --poll given; otherwise launch picks
  Drive drive = Drive::kWorkers;
  bool drive_chosen = false;      ///< --progress given; otherwise launch picks
  std::string json_path;             ///< "-": stdout
  std::string csv_path;
  std::string plot_path;
  bool stats = false;                ///< --stats: the port's and QPs' counters at the end
  uint32_t peer_ipv4 = 0;            ///< client: the server, host order
  uint32_t ipv4 = 0;                 ///< server/client: our address on --dev
  std::string device;                ///< server/client: ethdev port or vdev devargs
  uint16_t port = kDefaultPort;      ///< the ND port the server listens on
  unsigned retry_s = 0;              ///< client: wait this long for a server that is starting
  unsigned timeout_s = kDefaultTimeoutS;
};

using Parsed = nd_app::Parsed<Options>;

Parsed parse_options(const std::vector<std::string>& args);

using nd_app::program_args;  // tools/nd_app/arguments.h

}  // namespace ndnic::ndperf
