#include "tests/golden/golden_captures.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "ndnic/wire/pcap_file.h"

namespace ndnic::test {
namespace {

namespace fs = std::filesystem;

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

std::vector<GoldenFile> golden_files() {
  const char* env = std::getenv("NDNIC_GOLDEN_DIRS");
  std::string spec = env ? env : "";
  std::vector<GoldenFile> files;
  bool first = true;
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t end = spec.find(':', start);
    std::string entry = spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? spec.size() + 1 : end + 1;
    size_t eq = entry.find('=');
    const std::string tag = eq == std::string::npos ? "dir" : entry.substr(0, eq);
    const fs::path dir = eq == std::string::npos ? entry : entry.substr(eq + 1);
    std::error_code ec;
    std::vector<GoldenFile> found;
    if (fs::is_directory(dir, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
        if (!e.is_regular_file() || e.path().extension() != ".pcap") continue;
        GoldenFile f;
        f.path = e.path().string();
        f.name = e.path().filename().string();
        f.dir = e.path().parent_path().string();
        f.label = sanitize(tag + "_" + fs::relative(e.path(), dir).replace_extension().string());
        found.push_back(f);
      }
    }
    if (first && found.empty())
      found.push_back({(dir / "(no pcap here: the project's golden data is missing)").string(),
                       sanitize(tag + "_missing"), "", dir.string()});
    files.insert(files.end(), found.begin(), found.end());
    first = false;
  }
  if (files.empty())
    files.push_back({"(NDNIC_GOLDEN_DIRS is not set: run the test through meson)", "unset", "", ""});
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.label < b.label; });
  return files;
}

bool decode_capture(const std::string& path, std::vector<DecodedFrame>* frames, std::string* error) {
  wire::PcapReader reader;
  if (!reader.open(path)) {
    *error = reader.error();
    return false;
  }
  frames->clear();
  frames->reserve(reader.records().size());
  for (const auto& rec : reader.records()) {
    DecodedFrame f;
    f.number = frames->size() + 1;
    f.bytes = rec.data;
    f.orig_len = rec.orig_len;
    f.result = wire::decode_frame(f.bytes.data(), f.bytes.size(), &f.pkt);
    frames->push_back(std::move(f));  // moving the vector keeps pkt.payload valid
  }
  return true;
}

bool is_non_roce_reject(wire::Reject r) {
  return r == wire::Reject::kNotIp || r == wire::Reject::kNotUdp || r == wire::Reject::kNotRoceV2Port;
}

size_t l3_offset(const wire::RocePacket& p) {
  return wire::kEthHdrLen + (p.eth.has_vlan ? wire::kVlanTagLen : 0);
}

size_t bth_offset(const wire::RocePacket& p) {
  return l3_offset(p) + (p.ipv6 ? wire::kIpv6HdrLen : wire::kIpv4HdrLen + p.ip4.options_len) + wire::kUdpHdrLen;
}

}  // namespace ndnic::test
