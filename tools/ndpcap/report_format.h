// One frame report as a text line or a JSON line. Both print the same keys in the same order;
// JSON keys are stable (scripts and the tests parse them).
#pragma once

#include <string>

#include "tools/ndpcap/frame_report.h"

namespace ndnic::ndpcap {

/// "12 roce src=198.18.0.3 dst=198.18.0.2 ... icrc=ok": numbers that are keys, addresses or
/// QPNs in hex, lengths and counters in decimal, flags as 0/1.
std::string format_text(const FrameReport& r);

/// {"frame":12,"kind":"roce","src":"198.18.0.3",...,"icrc":"ok"}: every number in decimal.
std::string format_json(const FrameReport& r);

/// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);

}  // namespace ndnic::ndpcap
