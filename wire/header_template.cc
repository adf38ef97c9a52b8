#include "wire/header_template.h"

#include <cstring>

namespace ndnic::wire {
namespace {

constexpr size_t kIp = kEthHdrLen, kUdp = kIp + kIpv4HdrLen, kBth = kUdp + kUdpHdrLen;

}  // namespace

void HeaderTemplate::build(const RocePacket& p) {
  RocePacket t = p;
  t.bth.opcode = kRcSendOnly;  // no extension headers, so the headers fit; its byte is zeroed below
  std::memset(bytes_, 0, sizeof bytes_);
  encode_headers(t, bytes_);
  // The per-packet fields zero, the checksum's fixed part kept as a sum.
  std::memset(bytes_ + kIp + 2, 0, 4);    // total length, identification
  std::memset(bytes_ + kIp + 10, 0, 2);   // checksum
  std::memset(bytes_ + kUdp + 4, 0, 2);   // UDP length
  std::memset(bytes_ + kBth, 0, 2);       // opcode, flags
  std::memset(bytes_ + kBth + 8, 0, 4);   // AckReq, PSN
  uint32_t sum = 0;
  for (size_t i = 0; i < kIpv4HdrLen; i += 2) sum += uint32_t(bytes_[kIp + i]) << 8 | bytes_[kIp + i + 1];
  ip_sum_ = sum;
  icrc_.set_flow(icrc_flow_of(p));
}

uint32_t HeaderTemplate::write(uint8_t* out, uint8_t opcode, uint8_t bth_flags, uint32_t bth_psn_word,
                               uint16_t ip_id, uint16_t udp_len) const {
  std::memcpy(out, bytes_, kTemplateWriteLen);
  const uint16_t ip_total = uint16_t(kIpv4HdrLen + udp_len);
  store_be16(out + kIp + 2, ip_total);
  store_be16(out + kIp + 4, ip_id);
  uint32_t sum = ip_sum_ + ip_total + ip_id;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  store_be16(out + kIp + 10, uint16_t(~sum));
  store_be16(out + kUdp + 4, udp_len);
  out[kBth] = opcode;
  out[kBth + 1] = bth_flags;
  store_be32(out + kBth + 8, bth_psn_word);
  return icrc_.crc(ip_total, ip_id, udp_len, opcode, bth_flags, bth_psn_word);
}

}  // namespace ndnic::wire
