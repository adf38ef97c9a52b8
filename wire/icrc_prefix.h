// The ICRC's masked invariant prefix for the packets of one flow, from their fields.
//
// A sender's packets of one QP share every byte of the prefix (8 x 0xff, IPv4 without
// options, UDP, BTH) but twelve: the IP total length and identification, the UDP length, the
// BTH opcode and flags byte, and the AckReq+PSN word. CRC-32 is affine in its input, so the
// CRC state after the prefix is the flow's base (the CRC of the prefix with those bytes zero,
// computed once) XOR one table entry per changing byte. Twelve lookups, nothing read back
// from the frame: icrc_begin() over the bytes just stored cost a 64-byte SEND's sender ~20%
// (a CRC fold over 48 bytes, and loads that wait on the narrower stores that wrote them).
#pragma once

#include <cstdint>

#include "ndnic/wire/packet.h"

namespace ndnic::wire {

/// What stays the same in every packet of one flow (host order).
struct IcrcFlow {
  uint32_t ip_src = 0;
  uint32_t ip_dst = 0;
  uint16_t ip_frag = 0;
  uint16_t udp_sport = 0;
  uint16_t udp_dport = 0;
  uint16_t pkey = 0;
  uint32_t dest_qp = 0;
  bool operator==(const IcrcFlow&) const = default;
};

/// The flow `p` belongs to; meaningful for IPv4 without options (applies_to()).
inline IcrcFlow icrc_flow_of(const RocePacket& p) {
  return {p.ip4.src, p.ip4.dst, p.ip4.frag, p.udp.src_port, p.udp.dst_port, p.bth.pkey, p.bth.dest_qp};
}

class IcrcPrefix {
 public:
  /// The base for `flow`; a no-op when it is the flow already set (inline: every packet asks).
  void set_flow(const IcrcFlow& flow) {
    if (!set_ || !(flow == flow_)) new_flow(flow);
  }
  /// Whether `flow` is the flow set.
  bool holds(const IcrcFlow& flow) const { return set_ && flow == flow_; }
  /// crc32() state after the masked prefix of a packet of the flow set, as icrc_begin() would
  /// return for its frame. `bth_psn_word` is the BTH's last word (AckReq bit and PSN).
  uint32_t crc(uint16_t ip_total_len, uint16_t ip_id, uint16_t udp_len, uint8_t bth_opcode,
               uint8_t bth_flags, uint32_t bth_psn_word) const;
  /// The same for `p` as encode_headers() writes it (the flow set must be icrc_flow_of(p)).
  uint32_t crc_of(const RocePacket& p) const;
  /// Whether crc_of() can take `p`: IPv4 without options.
  static bool applies_to(const RocePacket& p) { return !p.ipv6 && p.ip4.options_len == 0; }

 private:
  void new_flow(const IcrcFlow& flow);

  IcrcFlow flow_;
  bool set_ = false;
  uint32_t base_ = 0;
};

}  // namespace ndnic::wire
