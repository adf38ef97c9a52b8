// The facts a golden directory's MANIFEST.md states about each capture, parsed from its text so
// the tests check the captures against what was written down when they were taken.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ndnic::test {

struct ManifestEntry {
  std::optional<uint64_t> roce_packets;         ///< "RoCEv2 packets: N"
  std::optional<uint64_t> icrc_good, icrc_bad;  ///< "ICRC good=N bad=M"
  std::map<std::string, uint64_t> aeth;         ///< "AETH syndromes: {'ACK': 20, ...}"
  std::map<unsigned, uint64_t> opcodes;         ///< the table: tshark opcode -> count
  std::optional<uint64_t> non_roce_frames;      ///< the table's "(blank)" row
};

/// Sections "## F.pcap ..." of a MANIFEST.md, keyed by file name. Unparseable lines are skipped.
std::map<std::string, ManifestEntry> parse_manifest(const std::string& text);

/// Reads and parses `dir`/MANIFEST.md; empty when there is none.
std::map<std::string, ManifestEntry> load_manifest(const std::string& dir);

/// The name the manifest uses for an AETH syndrome's class ("ACK", "NAK_REMOTE_ACCESS_ERR", ...).
std::string aeth_class_name(uint8_t syndrome);

}  // namespace ndnic::test
