#include "wire/icrc_prefix.h"

#include <array>
#include <cstring>

#include "ndnic/wire/headers.h"
#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

constexpr uint32_t kPolyReflected = 0xEDB88320u;
constexpr size_t kPrefixLen = 8 + kIpv4HdrLen + kUdpHdrLen + kBthLen;  ///< 48
constexpr size_t kIp = 8, kUdp = kIp + kIpv4HdrLen, kBth = kUdp + kUdpHdrLen;
/// Where the changing bytes lie in the prefix, in the order crc() takes them.
constexpr size_t kVarAt[] = {kIp + 2,  kIp + 3,  kIp + 4,  kIp + 5,  kUdp + 4, kUdp + 5,
                             kBth + 0, kBth + 1, kBth + 8, kBth + 9, kBth + 10, kBth + 11};
constexpr size_t kVars = sizeof(kVarAt) / sizeof(kVarAt[0]);

/// kContribution[i][b]: what byte value b at kVarAt[i] adds (XOR) to the CRC of the prefix:
/// the CRC register's linear part, b run through the register and then the bytes after it
/// as zeros.
constexpr std::array<std::array<uint32_t, 256>, kVars> build_contributions() {
  std::array<uint32_t, 256> byte_table{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    byte_table[i] = c;
  }
  std::array<std::array<uint32_t, 256>, kVars> t{};
  for (size_t v = 0; v < kVars; v++) {
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t c = byte_table[b];
      for (size_t z = kVarAt[v] + 1; z < kPrefixLen; z++) c = (c >> 8) ^ byte_table[c & 0xff];
      t[v][b] = c;
    }
  }
  return t;
}

constexpr auto kContribution = build_contributions();

}  // namespace

void IcrcPrefix::new_flow(const IcrcFlow& flow) {
  // The prefix of a packet of this flow with every changing byte zero, masked as icrc_begin()
  // masks it (TOS, TTL, IP checksum, UDP checksum, BTH resv8).
  uint8_t p[kPrefixLen];
  std::memset(p, 0, sizeof p);
  std::memset(p, 0xff, 8);
  p[kIp] = 0x45;
  p[kIp + 1] = 0xff;
  store_be16(p + kIp + 6, flow.ip_frag);
  p[kIp + 8] = 0xff;
  p[kIp + 9] = kIpProtoUdp;
  p[kIp + 10] = p[kIp + 11] = 0xff;
  store_be32(p + kIp + 12, flow.ip_src);
  store_be32(p + kIp + 16, flow.ip_dst);
  store_be16(p + kUdp, flow.udp_sport);
  store_be16(p + kUdp + 2, flow.udp_dport);
  p[kUdp + 6] = p[kUdp + 7] = 0xff;
  store_be16(p + kBth + 2, flow.pkey);
  p[kBth + 4] = 0xff;
  store_be24(p + kBth + 5, flow.dest_qp & kPsnMask);
  base_ = crc32(0, p, sizeof p);
  flow_ = flow;
  set_ = true;
}

uint32_t IcrcPrefix::crc(uint16_t ip_total_len, uint16_t ip_id, uint16_t udp_len, uint8_t bth_opcode,
                         uint8_t bth_flags, uint32_t bth_psn_word) const {
  const auto& t = kContribution;
  return base_ ^ t[0][ip_total_len >> 8] ^ t[1][ip_total_len & 0xff] ^ t[2][ip_id >> 8] ^ t[3][ip_id & 0xff] ^
         t[4][udp_len >> 8] ^ t[5][udp_len & 0xff] ^ t[6][bth_opcode] ^ t[7][bth_flags] ^
         t[8][bth_psn_word >> 24] ^ t[9][(bth_psn_word >> 16) & 0xff] ^ t[10][(bth_psn_word >> 8) & 0xff] ^
         t[11][bth_psn_word & 0xff];
}

uint32_t IcrcPrefix::crc_of(const RocePacket& p) const {
  const uint16_t udp_len = uint16_t(udp_length(p));
  return crc(uint16_t(kIpv4HdrLen + udp_len), p.ip4.id, udp_len, p.bth.opcode, bth_flags(p),
             (p.bth.ack_req ? 0x80000000u : 0) | (p.bth.psn & kPsnMask));
}

}  // namespace ndnic::wire
