// Classic libpcap files (Ethernet link type): written by the capture switch in pmd_glue and by
// tests, read by ndpcap and the golden tests. Pure C++ so it can be fuzzed with the decoder.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ndnic::wire {

constexpr uint32_t kPcapLinkEthernet = 1;

struct PcapRecord {
  uint64_t ts_ns = 0;              ///< timestamp, nanoseconds since the epoch
  uint32_t orig_len = 0;           ///< length on the wire
  std::vector<uint8_t> data;       ///< captured bytes (may be shorter than orig_len)
};

/// Reads a whole pcap file. Accepts both byte orders and micro/nanosecond timestamps.
class PcapReader {
 public:
  /// Opens and parses `path`. On failure returns false and sets error(): not a pcap, a link
  /// type other than Ethernet, a truncated header or record, an absurd record length.
  bool open(const std::string& path);
  /// Parses an in-memory file image (what open() does after reading the file).
  bool parse(const uint8_t* data, size_t len);
  const std::vector<PcapRecord>& records() const { return records_; }
  const std::string& error() const { return error_; }
  uint32_t link_type() const { return link_type_; }

 private:
  std::vector<PcapRecord> records_;
  std::string error_;
  uint32_t link_type_ = 0;
};

/// Appends frames to a new pcap file (microsecond timestamps, Ethernet). Not thread-safe: one
/// writer per lcore, or the caller serialises.
class PcapWriter {
 public:
  PcapWriter() = default;
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  /// Creates (truncates) `path` and writes the file header. False on I/O error.
  bool open(const std::string& path, uint32_t snaplen = 65535);
  /// Writes one record; `ts_ns` 0 means now.
  bool write(const uint8_t* frame, uint32_t len, uint64_t ts_ns = 0);
  void flush();
  void close();
  bool is_open() const { return f_ != nullptr; }

 private:
  FILE* f_ = nullptr;
  uint32_t snaplen_ = 65535;
};

}  // namespace ndnic::wire
