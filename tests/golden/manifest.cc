#include "tests/golden/manifest.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace ndnic::test {

std::map<std::string, ManifestEntry> parse_manifest(const std::string& text) {
  static const std::regex kSection(R"(^##\s+(\S+\.pcap)\b.*)");
  static const std::regex kPackets(R"(RoCEv2 packets:\s*(\d+))");
  static const std::regex kIcrc(R"(ICRC good=(\d+) bad=(\d+))");
  static const std::regex kAeth(R"(AETH syndromes:\s*\{([^}]*)\})");
  static const std::regex kAethItem(R"('([A-Za-z_0-9]+)':\s*(\d+))");
  static const std::regex kRow(R"(^\|\s*(\d+)\s*\|\s*(\d+|\(blank\))\s*\|.*)");

  std::map<std::string, ManifestEntry> out;
  ManifestEntry* cur = nullptr;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kSection)) {
      cur = &out[m[1].str()];
      continue;
    }
    if (line.rfind("## ", 0) == 0) cur = nullptr;  // a section about no particular file
    if (!cur) continue;
    if (std::regex_search(line, m, kPackets)) cur->roce_packets = std::stoull(m[1].str());
    if (std::regex_search(line, m, kIcrc)) {
      cur->icrc_good = std::stoull(m[1].str());
      cur->icrc_bad = std::stoull(m[2].str());
    }
    if (std::regex_search(line, m, kAeth)) {
      const std::string items = m[1].str();
      for (std::sregex_iterator it(items.begin(), items.end(), kAethItem), end; it != end; ++it)
        cur->aeth[(*it)[1].str()] = std::stoull((*it)[2].str());
    }
    if (std::regex_match(line, m, kRow)) {
      const uint64_t count = std::stoull(m[1].str());
      if (m[2].str() == "(blank)") {
        cur->non_roce_frames = count;
      } else {
        cur->opcodes[unsigned(std::stoul(m[2].str()))] = count;
      }
    }
  }
  return out;
}

std::map<std::string, ManifestEntry> load_manifest(const std::string& dir) {
  std::ifstream in(dir + "/MANIFEST.md");
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_manifest(ss.str());
}

std::string aeth_class_name(uint8_t syndrome) {
  // IBTA vol. 1 9.7.5.2.x: the top three bits select ACK / RNR NAK / NAK, the low five the code.
  switch (syndrome >> 5) {
    case 0: return "ACK";
    case 1: return "RNR_NAK";
    case 3:
      switch (syndrome & 0x1f) {
        case 0: return "NAK_PSN_SEQ_ERR";
        case 1: return "NAK_INVALID_REQ";
        case 2: return "NAK_REMOTE_ACCESS_ERR";
        case 3: return "NAK_REMOTE_OP_ERR";
        case 4: return "NAK_INVALID_RD_REQ";
        default: return "NAK_RESERVED";
      }
    default: return "RESERVED";
  }
}

}  // namespace ndnic::test
