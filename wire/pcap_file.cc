#include "ndnic/wire/pcap_file.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>

namespace ndnic::wire {
namespace {

constexpr uint32_t kMagicUsec = 0xA1B2C3D4;
constexpr uint32_t kMagicNsec = 0xA1B23C4D;
constexpr size_t kFileHdrLen = 24;
constexpr size_t kRecHdrLen = 16;
constexpr uint32_t kMaxRecordLen = 262144;  ///< libpcap's own upper bound on a record

uint32_t rd32(const uint8_t* p, bool swap) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}

}  // namespace

bool PcapReader::open(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error_ = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(buf.data(), buf.size());
}

bool PcapReader::parse(const uint8_t* data, size_t len) {
  records_.clear();
  error_.clear();
  if (len < kFileHdrLen) {
    error_ = "not a pcap file: shorter than the 24-byte file header";
    return false;
  }
  uint32_t magic;
  std::memcpy(&magic, data, 4);
  bool swap = false, nsec = false;
  if (magic == kMagicUsec || magic == kMagicNsec) {
    nsec = magic == kMagicNsec;
  } else if (__builtin_bswap32(magic) == kMagicUsec || __builtin_bswap32(magic) == kMagicNsec) {
    swap = true;
    nsec = __builtin_bswap32(magic) == kMagicNsec;
  } else {
    error_ = "not a pcap file: bad magic number (pcapng is not supported)";
    return false;
  }
  link_type_ = rd32(data + 20, swap) & 0x0fffffff;
  if (link_type_ != kPcapLinkEthernet) {
    error_ = "unsupported link type " + std::to_string(link_type_) + " (only Ethernet, 1)";
    return false;
  }
  size_t off = kFileHdrLen;
  while (off < len) {
    if (len - off < kRecHdrLen) {
      error_ = "truncated file: record " + std::to_string(records_.size() + 1) + " header cut short";
      return false;
    }
    const uint8_t* h = data + off;
    uint32_t sec = rd32(h, swap), frac = rd32(h + 4, swap);
    uint32_t incl = rd32(h + 8, swap), orig = rd32(h + 12, swap);
    if (incl > kMaxRecordLen) {
      error_ = "corrupt file: record " + std::to_string(records_.size() + 1) + " claims " +
               std::to_string(incl) + " bytes";
      return false;
    }
    off += kRecHdrLen;
    if (len - off < incl) {
      error_ = "truncated file: record " + std::to_string(records_.size() + 1) + " data cut short";
      return false;
    }
    PcapRecord r;
    r.ts_ns = uint64_t(sec) * 1000000000ull + (nsec ? frac : uint64_t(frac) * 1000);
    r.orig_len = orig;
    r.data.assign(data + off, data + off + incl);
    records_.push_back(std::move(r));
    off += incl;
  }
  return true;
}

PcapWriter::~PcapWriter() { close(); }

bool PcapWriter::open(const std::string& path, uint32_t snaplen) {
  close();
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) return false;
  snaplen_ = snaplen;
  uint32_t hdr[6] = {kMagicUsec, 0x00040002 /* version 2.4 */, 0, 0, snaplen, kPcapLinkEthernet};
  return std::fwrite(hdr, sizeof(hdr), 1, f_) == 1;
}

bool PcapWriter::write(const uint8_t* frame, uint32_t len, uint64_t ts_ns) {
  if (!f_) return false;
  if (ts_ns == 0)
    ts_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  uint32_t incl = len < snaplen_ ? len : snaplen_;
  uint32_t rec[4] = {uint32_t(ts_ns / 1000000000ull), uint32_t(ts_ns % 1000000000ull / 1000), incl, len};
  return std::fwrite(rec, sizeof(rec), 1, f_) == 1 && std::fwrite(frame, 1, incl, f_) == incl;
}

void PcapWriter::flush() {
  if (f_) std::fflush(f_);
}

void PcapWriter::close() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
}

}  // namespace ndnic::wire
