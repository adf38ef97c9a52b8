// ndpcap: one line per frame of a pcap (text or JSON lines), a summary on stderr, and an exit
// status scripts can trust: 0 only when every RoCEv2 frame decoded with a good ICRC.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/ndpcap/frame_report.h"
#include "tools/ndpcap/report_format.h"
#include "ndnic/wire/pcap_file.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadFrames = 1;  ///< some RoCE frame failed to decode or its ICRC check
constexpr int kExitUsage = 2;      ///< bad arguments, or a file that is not a readable pcap

constexpr const char* kUsage =
    "usage: ndpcap [--json] FILE.pcap\n"
    "Prints one line per frame: frame number, IP addresses, UDP ports, RoCEv2 opcode, DestQP,\n"
    "PSN, AckReq, SE, pad, the extension header fields, payload length and icrc=ok|bad.\n"
    "Non-RoCE frames are listed as such, malformed ones with the decoder's reason.\n"
    "  --json      JSON lines instead of text (same keys)\n"
    "  -h, --help  this text\n"
    "Exit status: 0 every RoCE frame decoded and its ICRC checked, 1 some did not,\n"
    "2 usage error or a file that is not a readable classic pcap (Ethernet).\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ndnic;
  bool json = false;
  const char* path = nullptr;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "ndpcap: unknown option %s\n%s", a.c_str(), kUsage);
      return kExitUsage;
    } else if (path) {
      std::fprintf(stderr, "ndpcap: one file at a time\n%s", kUsage);
      return kExitUsage;
    } else {
      path = argv[i];
    }
  }
  if (!path) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }

  wire::PcapReader reader;
  if (!reader.open(path)) {
    std::fprintf(stderr, "ndpcap: %s: %s\n", path, reader.error().c_str());
    return kExitUsage;
  }

  wire::RejectCounters counters;
  size_t roce = 0, failed = 0, non_roce = 0, malformed = 0;
  for (size_t i = 0; i < reader.records().size(); i++) {
    const ndpcap::FrameReport rep = ndpcap::describe_frame(i + 1, reader.records()[i], &counters);
    const std::string line = json ? ndpcap::format_json(rep) : ndpcap::format_text(rep);
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    roce += rep.kind == ndpcap::FrameKind::kRoce;
    non_roce += rep.kind == ndpcap::FrameKind::kNonRoce;
    malformed += rep.kind == ndpcap::FrameKind::kMalformed;
    failed += rep.failed;
  }
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "ndpcap: writing the output failed: %s\n", std::strerror(errno));
    return kExitUsage;
  }

  std::string reasons;
  for (size_t r = 1; r < size_t(wire::Reject::kCount); r++) {
    const auto reason = wire::Reject(r);
    if (reason == wire::Reject::kNotIp || reason == wire::Reject::kNotUdp || reason == wire::Reject::kNotRoceV2Port)
      continue;
    if (!counters[reason]) continue;
    reasons.append(" ").append(wire::reject_name(reason)).append("=").append(std::to_string(counters[reason]));
  }
  std::fprintf(stderr, "ndpcap: %s: %zu frames, %zu roce (%llu icrc ok, %llu icrc bad), %zu non-roce, %zu malformed%s%s\n",
               path, reader.records().size(), roce, (unsigned long long)counters[wire::Reject::kOk],
               (unsigned long long)counters[wire::Reject::kIcrcMismatch], non_roce, malformed,
               reasons.empty() ? "" : ":", reasons.c_str());
  return failed ? kExitBadFrames : kExitOk;
}
