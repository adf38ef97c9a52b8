// What ndpcap says about one captured frame: its kind and an ordered list of named fields,
// rendered the same way as text or as JSON (report_format.h), so both outputs always agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ndnic/wire/packet.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::ndpcap {

enum class FrameKind {
  kRoce,       ///< decoded as RoCEv2 (ICRC good or bad)
  kNonRoce,    ///< not UDP/4791: ARP, TCP, other UDP ...
  kMalformed,  ///< refused by the decoder for a reason other than "not RoCE"
};
const char* kind_name(FrameKind k);

struct Field {
  enum class Type { kNumber, kHex, kText, kBool };
  std::string key;
  Type type = Type::kNumber;
  uint64_t number = 0;   ///< kNumber, kHex, kBool
  int hex_digits = 0;    ///< kHex: digits to print in text mode
  std::string text;      ///< kText
};

struct FrameReport {
  size_t number = 0;               ///< 1-based, as Wireshark counts
  FrameKind kind = FrameKind::kNonRoce;
  bool failed = false;             ///< a RoCE frame (or possibly one) that did not decode with a good ICRC
  wire::Reject result = wire::Reject::kOk;
  std::vector<Field> fields;       ///< in output order; "frame" and "kind" are not among them
};

/// Decodes one record (ICRC and IPv4 checksum checked), counts the outcome in `counters` and
/// describes it. A frame refused before its UDP port is known counts as failed unless it is
/// clearly not UDP/4791, since it may be a damaged RoCE frame.
FrameReport describe_frame(size_t number, const wire::PcapRecord& rec, wire::RejectCounters* counters);

}  // namespace ndnic::ndpcap
