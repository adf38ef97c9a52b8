#include "wire/icrc.h"

#include <array>
#include <cstring>

#include "ndnic/wire/headers.h"

namespace ndnic::wire {
namespace {

constexpr uint32_t kPolyReflected = 0xEDB88320u;

constexpr std::array<std::array<uint32_t, 256>, 8> build_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

constexpr auto kTables = build_tables();

}  // namespace

uint32_t crc32_table(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

uint32_t crc32_4(uint32_t crc, const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  w ^= ~crc;
  return ~(kTables[3][w & 0xff] ^ kTables[2][(w >> 8) & 0xff] ^ kTables[1][(w >> 16) & 0xff] ^ kTables[0][w >> 24]);
}

uint32_t icrc_begin(const uint8_t* l3, bool ipv6) {
  // Masked copy of IP + UDP + BTH; the largest case is IPv4 with 40 bytes of options.
  uint8_t buf[8 + 60 + kUdpHdrLen + kBthLen];
  std::memset(buf, 0xff, 8);
  size_t ip_len;
  // Constant-size copies: a variable-length memcpy here costs more than the CRC of a small
  // packet (perf/bench_codec).
  if (ipv6) {
    ip_len = kIpv6HdrLen;
    std::memcpy(buf + 8, l3, kIpv6HdrLen + kUdpHdrLen + kBthLen);
    buf[8] |= 0x0f;                          // traffic class, low nibble of byte 0
    std::memset(buf + 8 + 1, 0xff, 3);       // traffic class (rest) + flow label
    buf[8 + 7] = 0xff;                       // hop limit
  } else {
    ip_len = size_t(l3[0] & 0x0f) * 4;
    if (ip_len == kIpv4HdrLen)
      std::memcpy(buf + 8, l3, kIpv4HdrLen + kUdpHdrLen + kBthLen);
    else
      std::memcpy(buf + 8, l3, ip_len + kUdpHdrLen + kBthLen);
    buf[8 + 1] = 0xff;                       // TOS
    buf[8 + 8] = 0xff;                       // TTL
    buf[8 + 10] = buf[8 + 11] = 0xff;        // header checksum
  }
  uint8_t* udp = buf + 8 + ip_len;
  udp[6] = udp[7] = 0xff;                    // UDP checksum
  udp[kUdpHdrLen + 4] = 0xff;                // BTH resv8
  return crc32(0, buf, 8 + ip_len + kUdpHdrLen + kBthLen);
}

uint32_t icrc_compute(const uint8_t* l3, bool ipv6, size_t ib_len) {
  size_t ip_len = ipv6 ? kIpv6HdrLen : size_t(l3[0] & 0x0f) * 4;
  const uint8_t* after_bth = l3 + ip_len + kUdpHdrLen + kBthLen;
  return crc32(icrc_begin(l3, ipv6), after_bth, ib_len - kBthLen);
}

}  // namespace ndnic::wire
