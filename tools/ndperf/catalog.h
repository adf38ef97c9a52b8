// The tests ndperf knows: their names on the command line and in the JSON, what kind of row
// each reports, perftest's title for the banner, and the message sizes each one takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ndnic::ndperf {

enum class Test : uint8_t {
  kSendBw,
  kWriteBw,
  kReadBw,
  kAtomicBw,
  kSendLat,
  kWriteLat,
  kReadLat,
  kSendInv,
  kRawBw,
  kRawLat,
  kMemcpy,
  kCount,  ///< on the wire: "no more tests" (the client stopped early)
};

/// Which columns a test reports.
enum class Kind : uint8_t {
  kBandwidth,  ///< BW peak, BW average, MsgRate
  kLatency,    ///< t_min .. 99.9% percentile
  kCycles,     ///< cycles per second (sendinv)
  kCopy,       ///< BW average only (memcpy)
};

struct TestInfo {
  Test test;
  const char* name;    ///< "send_bw"
  Kind kind;
  const char* title;   ///< perftest's banner words: "Send BW", "RDMA_Read Latency"
  uint32_t fixed_size; ///< the one size this test moves (atomics: 8, sendinv: 4096); 0: -s/-a
  uint32_t default_size;
  bool rdma;           ///< runs over ND endpoints (else a baseline over the bare port or memory)
  bool needs_peer;     ///< involves the server (memcpy does not)
};

const TestInfo& info(Test t);
inline const char* name(Test t) { return info(t).name; }

std::optional<Test> test_by_name(std::string_view name);

/// --set NAME: "loopback" (every test), "rdma", "bw", "lat", "baseline".
std::optional<std::vector<Test>> test_set(std::string_view name);
/// The names --set accepts, for messages.
const char* test_set_names();
/// Every test name, comma-separated, for messages.
std::string_view test_names();

}  // namespace ndnic::ndperf
