// Test helper: a valid RocePacket of a given opcode with nontrivial, seeded field values.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "wire/packet.h"

namespace ndnic::wire::testing {

struct BuiltPacket {
  RocePacket pkt;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> frame;
};

inline BuiltPacket build_packet(uint8_t opcode, uint32_t payload_len, std::mt19937_64& rng,
                                bool ipv6 = false, bool vlan = false) {
  BuiltPacket b;
  RocePacket& p = b.pkt;
  const uint8_t dst[6] = {0x52, 0x54, 0x00, 0x12, 0x00, 0x02};
  const uint8_t src[6] = {0x02, 0x00, 0x00, 0xab, 0xcd, 0xef};
  std::memcpy(p.eth.dst, dst, 6);
  std::memcpy(p.eth.src, src, 6);
  p.eth.has_vlan = vlan;
  p.eth.vlan_tci = vlan ? uint16_t(0x2000 | (rng() & 0xfff)) : 0;
  p.ipv6 = ipv6;
  p.ip4.src = 0xC6120001;  // 198.18.0.1
  p.ip4.dst = 0xC6120002;
  p.ip4.id = uint16_t(rng());
  p.ip4.tos = uint8_t(rng());
  for (int i = 0; i < 16; i++) {
    p.ip6.src[i] = uint8_t(rng());
    p.ip6.dst[i] = uint8_t(rng());
  }
  p.ip6.flow_label = uint32_t(rng() & 0xfffff);
  p.ip6.traffic_class = uint8_t(rng());
  p.udp.src_port = uint16_t(0xC000 | (rng() & 0x3fff));
  const OpcodeInfo& info = opcode_info(opcode);
  p.bth.opcode = opcode;
  p.bth.se = rng() & 1;
  p.bth.ack_req = rng() & 1;
  p.bth.dest_qp = uint32_t(rng() & kPsnMask);
  p.bth.psn = uint32_t(rng() & kPsnMask);
  p.reth = {rng(), uint32_t(rng()), uint32_t(rng())};
  p.aeth = {uint8_t(rng()), uint32_t(rng() & kPsnMask)};
  p.ieth_rkey = uint32_t(rng());
  p.imm = uint32_t(rng());
  p.atomic = {rng() & ~7ull, uint32_t(rng()), rng(), rng()};
  p.atomic_ack.orig = rng();
  p.deth = {uint32_t(rng()), uint32_t(rng() & kPsnMask)};
  if (!info.has_payload) payload_len = 0;
  b.payload.resize(payload_len);
  for (auto& c : b.payload) c = uint8_t(rng());
  p.payload = b.payload.data();
  p.payload_len = payload_len;
  p.bth.pad = pad_for(payload_len);
  b.frame.resize(frame_length(p));
  b.frame.resize(encode_frame(p, b.frame.data(), b.frame.size()));
  return b;
}

}  // namespace ndnic::wire::testing
