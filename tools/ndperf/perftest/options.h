// ndperf's perftest mode: `ndperf [EAL args --] --perftest TEST ...` runs one of perftest's six
// RC tests against a real perftest (ib_send_bw, ib_write_lat, ...) on another host, speaking
// its TCP protocol (oob.h) and driving ndnic's verbs engine directly (no ND, no CM):
// the peer's perftest modifies its QP itself from what the TCP exchange carries, so ours does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ndnic::ndperf::perftest {

enum class Verb : uint8_t { kSend, kWrite, kRead };
enum class Kind : uint8_t { kBw, kLat };

struct TestId {
  Verb verb = Verb::kSend;
  Kind kind = Kind::kBw;
};
/// "send_bw" .. "read_lat", or nothing.
std::optional<TestId> test_by_name(const std::string& name);
std::string test_name(TestId t);
/// The perftest program the peer runs for this test ("ib_send_bw").
std::string peer_program(TestId t);

constexpr uint32_t kMaxSweepExp = 23;       ///< -a: 2^1 .. 2^23 bytes (perftest's loop to 24)
constexpr uint32_t kMaxSize = 1u << kMaxSweepExp;
constexpr uint32_t kDefaultBwSize = 65536;  ///< DEF_SIZE_BW
constexpr uint32_t kDefaultLatSize = 2;     ///< DEF_SIZE_LAT
constexpr uint32_t kDefaultBwIters = 5000;  ///< DEF_ITERS_WB
constexpr uint32_t kDefaultLatIters = 1000; ///< DEF_ITERS
constexpr uint32_t kMinIters = 5;           ///< MIN_ITER
constexpr uint32_t kMaxIters = 100000000;   ///< MAX_ITER
constexpr uint16_t kDefaultTcpPort = 18515;

struct PerftestOptions {
  TestId test;
  uint32_t size = 0;         ///< -s; with -a the largest size (8 MiB, as perftest)
  bool all = false;          ///< -a
  uint32_t iters = 0;        ///< -n
  uint32_t mtu = 1024;       ///< -m: what we offer; the smaller of both sides' is used
  bool gbits = false;        ///< --report_gbits: Gb/sec instead of MB/sec
  bool server = false;
  std::string host;          ///< --client HOST
  uint16_t tcp_port = kDefaultTcpPort;
  uint32_t ipv4 = 0;         ///< --ip, host order
  std::string device;        ///< --dev
  unsigned retry_s = 0;      ///< --retry: client waits this long for a server to listen
  unsigned timeout_s = 30;   ///< --timeout: no completion for this long fails the run
  std::string capture;       ///< --capture: pcap of every frame
};

/// Whether the program's arguments ask for the perftest mode.
bool requested(const std::vector<std::string>& args);

struct ParsedPerftest {
  std::optional<PerftestOptions> options;
  int exit_code = 0;  ///< 0 after --help, 2 after a usage error (printed)
};
ParsedPerftest parse_perftest_options(const std::vector<std::string>& args);

/// The whole mode: EAL, the port, the test; the process's exit status.
int perftest_main(int argc, char** argv);

}  // namespace ndnic::ndperf::perftest
