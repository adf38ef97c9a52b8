// The golden captures (RoCEv2 from real Linux rxe) and their frames, decoded.
//
// Where they are comes from $NDNIC_GOLDEN_DIRS, "tag=dir:tag=dir", set by meson: the
// project's copy in tests/data always, and ../shared/testdata when that exists, so captures
// dropped there are covered without a rebuild. Every *.pcap under each directory is used.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ndnic/wire/packet.h"

namespace ndnic::test {

struct GoldenFile {
  std::string path;   ///< the pcap
  std::string label;  ///< unique, [A-Za-z0-9_] only: a test parameter name
  std::string name;   ///< file name, e.g. "imm.pcap"
  std::string dir;    ///< directory holding it (and perhaps a MANIFEST.md)
};

/// gtest prints a test parameter with this instead of its bytes.
inline void PrintTo(const GoldenFile& f, std::ostream* os) { *os << f.path; }

/// Every golden pcap, sorted by label. The first directory in $NDNIC_GOLDEN_DIRS is required:
/// when it is missing or has no pcap, the result holds one entry whose path does not exist,
/// so the test that loads it fails and says why instead of running over nothing.
std::vector<GoldenFile> golden_files();

/// One frame of a capture and what the decoder made of it.
struct DecodedFrame {
  size_t number = 0;            ///< 1-based, as Wireshark counts
  std::vector<uint8_t> bytes;   ///< the captured frame (owns what pkt.payload points into)
  uint32_t orig_len = 0;        ///< length on the wire per the pcap record
  wire::Reject result = wire::Reject::kOk;
  wire::RocePacket pkt;         ///< valid when result is kOk or kIcrcMismatch
};

/// Reads `path` and decodes every frame with the default options (ICRC and IP checksum
/// checked). False with *error set when the file cannot be read as a pcap.
bool decode_capture(const std::string& path, std::vector<DecodedFrame>* frames, std::string* error);

/// Rejects that mean "this is not a RoCEv2 frame" rather than "a broken RoCEv2 frame".
bool is_non_roce_reject(wire::Reject r);

/// Offset of the L3 header (after Ethernet and an optional 802.1Q tag).
size_t l3_offset(const wire::RocePacket& p);

/// Offset of the BTH within the frame.
size_t bth_offset(const wire::RocePacket& p);

}  // namespace ndnic::test
