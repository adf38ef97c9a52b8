#include "tools/ndperf/catalog.h"

#include <array>

namespace ndnic::ndperf {
namespace {

// perftest's defaults: 64 KiB for bandwidth, 2 bytes for latency, 8 for atomics. The
// SendAndInvalidate cycle moves one 4 KiB block, the size of a page of a storage protocol.
constexpr uint32_t kBwSize = 65536;
constexpr uint32_t kLatSize = 2;
constexpr uint32_t kAtomicSize = 8;
constexpr uint32_t kSendInvSize = 4096;

constexpr std::array<TestInfo, size_t(Test::kCount)> kTests = {{
    {Test::kSendBw, "send_bw", Kind::kBandwidth, "Send BW", 0, kBwSize, true, true},
    {Test::kWriteBw, "write_bw", Kind::kBandwidth, "RDMA_Write BW", 0, kBwSize, true, true},
    {Test::kReadBw, "read_bw", Kind::kBandwidth, "RDMA_Read BW", 0, kBwSize, true, true},
    {Test::kAtomicBw, "atomic_bw", Kind::kBandwidth, "Atomic FETCH_AND_ADD BW", kAtomicSize, kAtomicSize, true, true},
    {Test::kSendLat, "send_lat", Kind::kLatency, "Send Latency", 0, kLatSize, true, true},
    {Test::kWriteLat, "write_lat", Kind::kLatency, "RDMA_Write Latency", 0, kLatSize, true, true},
    {Test::kReadLat, "read_lat", Kind::kLatency, "RDMA_Read Latency", 0, kLatSize, true, true},
    {Test::kSendInv, "sendinv", Kind::kCycles, "Bind / RDMA_Write / SendAndInvalidate cycle", kSendInvSize,
     kSendInvSize, true, true},
    {Test::kRawBw, "raw_bw", Kind::kBandwidth, "Raw UDP BW (no RDMA)", 0, kBwSize, false, true},
    {Test::kRawLat, "raw_lat", Kind::kLatency, "Raw UDP Latency (no RDMA)", 0, kLatSize, false, true},
    {Test::kMemcpy, "memcpy", Kind::kCopy, "memcpy BW (one core)", 0, kBwSize, false, false},
}};

constexpr std::string_view kAllNames =
    "send_bw,write_bw,read_bw,atomic_bw,send_lat,write_lat,read_lat,sendinv,raw_bw,raw_lat,memcpy";

}  // namespace

const TestInfo& info(Test t) { return kTests[size_t(t)]; }

std::optional<Test> test_by_name(std::string_view name) {
  for (const TestInfo& t : kTests)
    if (name == t.name) return t.test;
  return std::nullopt;
}

std::optional<std::vector<Test>> test_set(std::string_view name) {
  std::vector<Test> out;
  for (const TestInfo& t : kTests) {
    const bool pick = name == "loopback" || (name == "rdma" && t.rdma) || (name == "baseline" && !t.rdma) ||
                      (name == "bw" && t.rdma && t.kind != Kind::kLatency) ||
                      (name == "lat" && t.rdma && t.kind == Kind::kLatency);
    if (pick) out.push_back(t.test);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

const char* test_set_names() { return "loopback (every test), rdma, bw, lat, baseline (raw_bw,raw_lat,memcpy)"; }

std::string_view test_names() { return kAllNames; }

}  // namespace ndnic::ndperf
