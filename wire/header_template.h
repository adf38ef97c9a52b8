// The headers of one flow's packets (a QP's: the same MACs, addresses, ports, P_Key and
// destination QP in every packet), written by copying a frame made once and patching the
// fields that change per packet: the IP total length, identification and checksum, the UDP
// length, the BTH opcode, flags and PSN word. encode_headers() goes field by field through a
// RocePacket for every packet: a tenth of a 64-byte SEND's requester.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ndnic/wire/packet.h"
#include "wire/icrc_prefix.h"

namespace ndnic::wire {

/// Ethernet, IPv4 without options, UDP and BTH: what the template holds.
constexpr size_t kTemplateLen = kEthHdrLen + kIpv4HdrLen + kUdpHdrLen + kBthLen;
static_assert(kTemplateLen == 54);
/// Bytes write() stores: the headers and what follows them, in one copy.
constexpr size_t kTemplateWriteLen = 64;

class HeaderTemplate {
 public:
  /// Whether a template can write `p`'s headers: IPv4 without options, no VLAN tag.
  static bool applies_to(const RocePacket& p) { return !p.ipv6 && p.ip4.options_len == 0 && !p.eth.has_vlan; }

  /// Made from the flow fields of `p` (which applies_to() takes); its per-packet fields are
  /// ignored.
  void build(const RocePacket& p);

  /// Writes the headers through the BTH for a packet of the flow, as encode_headers() would
  /// (its extension headers follow at out + kTemplateLen), and returns the ICRC state after
  /// them (IcrcPrefix::crc). Writes kTemplateWriteLen bytes: past the BTH they are the caller's
  /// to overwrite (a frame may be shorter: its buffer must have room for them).
  uint32_t write(uint8_t* out, uint8_t opcode, uint8_t bth_flags, uint32_t bth_psn_word, uint16_t ip_id,
                 uint16_t udp_len) const;

 private:
  alignas(64) uint8_t bytes_[kTemplateWriteLen] = {};  ///< the headers, per-packet fields zero
  uint32_t ip_sum_ = 0;                 ///< the one's-complement sum of the IPv4 header's fixed words
  IcrcPrefix icrc_;
};

}  // namespace ndnic::wire
