// RocePacket -> frame. The pad count is derived from payload_len (bth.pad is not read), the
// lengths and the IPv4 checksum from the rest, so a packet built field by field is valid.
#include <cstring>

#include "wire/ext_headers.h"
#include "wire/icrc.h"
#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

size_t ip_header_length(const RocePacket& p) {
  return p.ipv6 ? kIpv6HdrLen : kIpv4HdrLen + p.ip4.options_len;
}

/// In the order IBTA puts them; each layout is in ext_headers.h.
uint8_t* encode_ext_headers(const RocePacket& p, uint8_t ext, uint8_t* o) {
  if (ext & kHdrDeth) o = write_deth(o, p.deth.qkey, p.deth.src_qp);
  if (ext & kHdrReth) o = write_reth(o, p.reth.va, p.reth.rkey, p.reth.dma_len);
  if (ext & kHdrAtomicEth) o = write_atomic_eth(o, p.atomic.va, p.atomic.rkey, p.atomic.swap_add, p.atomic.compare);
  if (ext & kHdrAeth) o = write_aeth(o, p.aeth.syndrome, p.aeth.msn);
  if (ext & kHdrAtomicAckEth) o = write_atomic_ack_eth(o, p.atomic_ack.orig);
  if (ext & kHdrImmDt) o = write_immdt(o, p.imm);
  if (ext & kHdrIeth) o = write_ieth(o, p.ieth_rkey);
  return o;
}

}  // namespace

uint8_t* encode_ext_headers(const RocePacket& p, uint8_t* out) {
  return encode_ext_headers(p, opcode_info(p.bth.opcode).ext, out);
}

size_t header_length(const RocePacket& p) {
  return kEthHdrLen + (p.eth.has_vlan ? kVlanTagLen : 0) + ip_header_length(p) + kUdpHdrLen +
         kBthLen + opcode_info(p.bth.opcode).ext_len;
}

size_t frame_length(const RocePacket& p) {
  return header_length(p) + p.payload_len + pad_for(p.payload_len) + kIcrcLen;
}

size_t udp_length(const RocePacket& p) {
  return udp_length(opcode_info(p.bth.opcode).ext_len, p.payload_len);
}

uint8_t bth_flags(const RocePacket& p) {
  const auto& bth = p.bth;
  return uint8_t((bth.se ? 0x80 : 0) | (bth.mig ? 0x40 : 0) | pad_for(p.payload_len) << 4 | (bth.tver & 0x0f));
}

size_t encode_headers(const RocePacket& p, uint8_t* out) {
  const OpcodeInfo& info = opcode_info(p.bth.opcode);
  const size_t udp_len = udp_length(p);

  uint8_t* o = out;
  std::memcpy(o, p.eth.dst, 6);
  std::memcpy(o + 6, p.eth.src, 6);
  o += 12;
  if (p.eth.has_vlan) {
    store_be16(o, kEtherTypeVlan);
    store_be16(o + 2, p.eth.vlan_tci);
    o += 4;
  }
  store_be16(o, p.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
  o += 2;

  if (p.ipv6) {
    const auto& ip = p.ip6;
    store_be32(o, 6u << 28 | uint32_t(ip.traffic_class) << 20 | (ip.flow_label & 0xfffff));
    store_be16(o + 4, uint16_t(udp_len));
    o[6] = kIpProtoUdp;
    o[7] = ip.hop_limit;
    std::memcpy(o + 8, ip.src, 16);
    std::memcpy(o + 24, ip.dst, 16);
    o += kIpv6HdrLen;
  } else {
    const auto& ip = p.ip4;
    const size_t ihl = kIpv4HdrLen + ip.options_len;
    o[0] = uint8_t(0x40 | (ihl / 4));
    o[1] = ip.tos;
    store_be16(o + 2, uint16_t(ihl + udp_len));
    store_be16(o + 4, ip.id);
    store_be16(o + 6, ip.frag);
    o[8] = ip.ttl;
    o[9] = kIpProtoUdp;
    store_be32(o + 12, ip.src);
    store_be32(o + 16, ip.dst);
    if (ip.options_len) std::memcpy(o + kIpv4HdrLen, ip.options, ip.options_len);
    // The checksum from the values, not from the bytes just stored: reading them back made the
    // loads wait for the narrower stores (store forwarding fails), ~4% of a 64-byte SEND.
    uint32_t sum = (uint32_t(o[0]) << 8 | ip.tos) + uint32_t(ihl + udp_len) + ip.id + ip.frag +
                   (uint32_t(ip.ttl) << 8 | kIpProtoUdp) + (ip.src >> 16) + (ip.src & 0xffff) +
                   (ip.dst >> 16) + (ip.dst & 0xffff);
    for (size_t i = 0; i + 1 < ip.options_len; i += 2) sum += uint32_t(ip.options[i]) << 8 | ip.options[i + 1];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    store_be16(o + 10, uint16_t(~sum));
    o += ihl;
  }

  store_be16(o, p.udp.src_port);
  store_be16(o + 2, p.udp.dst_port);
  store_be16(o + 4, uint16_t(udp_len));
  store_be16(o + 6, p.udp.checksum);
  o += kUdpHdrLen;

  const auto& bth = p.bth;
  o[0] = bth.opcode;
  o[1] = bth_flags(p);
  store_be16(o + 2, bth.pkey);
  o[4] = 0;
  store_be24(o + 5, bth.dest_qp & kPsnMask);
  store_be32(o + 8, (bth.ack_req ? 0x80000000u : 0) | (bth.psn & kPsnMask));
  o += kBthLen;
  o = encode_ext_headers(p, info.ext, o);
  return size_t(o - out);
}

size_t encode_frame(const RocePacket& p, uint8_t* out, size_t cap) {
  const size_t total = frame_length(p);
  if (cap < total) return 0;
  const size_t hdr = encode_headers(p, out);
  uint8_t* o = out + hdr;
  if (p.payload_len) std::memcpy(o, p.payload, p.payload_len);
  o += p.payload_len;
  const uint8_t pad = pad_for(p.payload_len);
  std::memset(o, 0, pad);
  o += pad;
  const size_t l3_off = kEthHdrLen + (p.eth.has_vlan ? kVlanTagLen : 0);
  const size_t ib_off = l3_off + ip_header_length(p) + kUdpHdrLen;
  const uint32_t icrc = icrc_compute(out + l3_off, p.ipv6, size_t(o - out) - ib_off);
  o[0] = uint8_t(icrc);
  o[1] = uint8_t(icrc >> 8);
  o[2] = uint8_t(icrc >> 16);
  o[3] = uint8_t(icrc >> 24);
  return total;
}

}  // namespace ndnic::wire
