#include "tools/ndpcap/frame_report.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace ndnic::ndpcap {
namespace {

using wire::Reject;
using wire::RocePacket;

Field number(const char* key, uint64_t v) { return {key, Field::Type::kNumber, v, 0, {}}; }
Field hex(const char* key, uint64_t v, int digits) { return {key, Field::Type::kHex, v, digits, {}}; }
Field text(const char* key, std::string v) { return {key, Field::Type::kText, 0, 0, std::move(v)}; }
Field flag(const char* key, bool v) { return {key, Field::Type::kBool, v, 0, {}}; }

std::string ipv4_text(uint32_t host_order) {
  char buf[INET_ADDRSTRLEN];
  const uint32_t be = htonl(host_order);
  return inet_ntop(AF_INET, &be, buf, sizeof(buf));
}

std::string ipv6_text(const uint8_t* a) {
  char buf[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, a, buf, sizeof(buf));
}

const char* ethertype_name(uint16_t t) {
  switch (t) {
    case wire::kEtherTypeArp: return "ARP";
    case wire::kEtherTypeIpv4: return "IPv4";
    case wire::kEtherTypeIpv6: return "IPv6";
    case 0x88CC: return "LLDP";
    default: return "";
  }
}

const char* ip_proto_name(uint8_t p) {
  switch (p) {
    case 1: return "ICMP";
    case 6: return "TCP";
    case 17: return "UDP";
    case 58: return "ICMPv6";
    default: return "";
  }
}

/// Best-effort look at the headers the decoder refused: false only when the frame is clearly
/// not UDP to port 4791, so a damaged RoCE frame is never waved through as "not RoCE".
bool may_be_roce(const uint8_t* f, size_t len) {
  if (len < wire::kEthHdrLen) return true;
  size_t off = wire::kEthHdrLen;
  uint16_t type = wire::load_be16(f + 12);
  if (type == wire::kEtherTypeVlan) {
    if (len < off + wire::kVlanTagLen) return true;
    type = wire::load_be16(f + 16);
    off += wire::kVlanTagLen;
  }
  const uint8_t* l3 = f + off;
  const size_t avail = len - off;
  size_t l4;
  if (type == wire::kEtherTypeIpv4) {
    if (avail < wire::kIpv4HdrLen) return true;
    if (l3[9] != wire::kIpProtoUdp) return false;
    if (wire::load_be16(l3 + 6) & 0x1fff) return true;  // a later fragment: its port is unseen
    l4 = size_t(l3[0] & 0x0f) * 4;
    if (l4 < wire::kIpv4HdrLen) return true;
  } else if (type == wire::kEtherTypeIpv6) {
    if (avail < wire::kIpv6HdrLen) return true;
    if (l3[6] != wire::kIpProtoUdp) return false;
    l4 = wire::kIpv6HdrLen;
  } else {
    return false;
  }
  if (avail < l4 + 4) return true;
  return wire::load_be16(l3 + l4 + 2) == wire::kRoceV2Port;
}

void add_addresses(const RocePacket& p, std::vector<Field>* out) {
  if (p.eth.has_vlan) out->push_back(number("vlan", p.eth.vlan_tci & 0x0fff));
  if (p.ipv6) {
    out->push_back(text("src", ipv6_text(p.ip6.src)));
    out->push_back(text("dst", ipv6_text(p.ip6.dst)));
  } else {
    out->push_back(text("src", ipv4_text(p.ip4.src)));
    out->push_back(text("dst", ipv4_text(p.ip4.dst)));
  }
}

void add_roce_fields(const RocePacket& p, bool icrc_ok, std::vector<Field>* out) {
  add_addresses(p, out);
  out->push_back(number("sport", p.udp.src_port));
  out->push_back(number("dport", p.udp.dst_port));
  const wire::OpcodeInfo& info = wire::opcode_info(p.bth.opcode);
  out->push_back(text("opcode", info.name));
  out->push_back(hex("opcode_num", p.bth.opcode, 2));
  out->push_back(hex("dest_qp", p.bth.dest_qp, 6));
  out->push_back(number("psn", p.bth.psn));
  out->push_back(flag("ack_req", p.bth.ack_req));
  out->push_back(flag("se", p.bth.se));
  out->push_back(number("pad", p.bth.pad));
  if (p.bth.mig) out->push_back(flag("mig", true));
  if (p.bth.pkey != wire::kDefaultPkey) out->push_back(hex("pkey", p.bth.pkey, 4));
  if (info.ext & wire::kHdrDeth) {
    out->push_back(hex("qkey", p.deth.qkey, 8));
    out->push_back(hex("src_qp", p.deth.src_qp, 6));
  }
  if (info.ext & wire::kHdrReth) {
    out->push_back(hex("va", p.reth.va, 16));
    out->push_back(hex("rkey", p.reth.rkey, 8));
    out->push_back(number("dma_len", p.reth.dma_len));
  }
  if (info.ext & wire::kHdrAtomicEth) {
    out->push_back(hex("va", p.atomic.va, 16));
    out->push_back(hex("rkey", p.atomic.rkey, 8));
    out->push_back(number("swap_add", p.atomic.swap_add));
    out->push_back(number("compare", p.atomic.compare));
  }
  if (info.ext & wire::kHdrAeth) {
    out->push_back(hex("syndrome", p.aeth.syndrome, 2));
    out->push_back(number("msn", p.aeth.msn));
  }
  if (info.ext & wire::kHdrAtomicAckEth) out->push_back(number("orig", p.atomic_ack.orig));
  if (info.ext & wire::kHdrImmDt) out->push_back(hex("imm", p.imm, 8));
  if (info.ext & wire::kHdrIeth) out->push_back(hex("inv_rkey", p.ieth_rkey, 8));
  out->push_back(number("payload_len", p.payload_len));
  out->push_back(text("icrc", icrc_ok ? "ok" : "bad"));
}

/// The IP protocol of a frame the decoder called not_udp (the decoder records no such field).
uint8_t ip_protocol(const uint8_t* f, size_t len, const RocePacket& p) {
  const size_t l3 = wire::kEthHdrLen + (p.eth.has_vlan ? wire::kVlanTagLen : 0);
  const size_t at = l3 + (p.ipv6 ? 6 : 9);
  return at < len ? f[at] : 0;
}

void add_non_roce_fields(Reject r, const uint8_t* f, size_t len, const RocePacket& p, std::vector<Field>* out) {
  if (r == Reject::kNotIp) {
    const char* name = ethertype_name(p.eth.ethertype);
    out->push_back(hex("ethertype", p.eth.ethertype, 4));
    if (*name) out->push_back(text("what", name));
    return;
  }
  if (r == Reject::kNotUdp) {
    // The decoder stops at the protocol byte, before it reads the addresses.
    RocePacket with_addresses = p;
    const uint8_t* l3 = f + wire::kEthHdrLen + (p.eth.has_vlan ? wire::kVlanTagLen : 0);
    if (p.ipv6) {
      std::memcpy(with_addresses.ip6.src, l3 + 8, 16);
      std::memcpy(with_addresses.ip6.dst, l3 + 24, 16);
    } else {
      with_addresses.ip4.src = wire::load_be32(l3 + 12);
      with_addresses.ip4.dst = wire::load_be32(l3 + 16);
    }
    add_addresses(with_addresses, out);
    const uint8_t proto = ip_protocol(f, len, p);
    const char* name = ip_proto_name(proto);
    out->push_back(text("what", *name ? name : "IP"));
    out->push_back(number("ip_proto", proto));
    return;
  }
  add_addresses(p, out);
  out->push_back(text("what", "UDP"));
  out->push_back(number("sport", p.udp.src_port));
  out->push_back(number("dport", p.udp.dst_port));
}

}  // namespace

const char* kind_name(FrameKind k) {
  switch (k) {
    case FrameKind::kRoce: return "roce";
    case FrameKind::kNonRoce: return "non-roce";
    case FrameKind::kMalformed: return "malformed";
  }
  return "?";
}

FrameReport describe_frame(size_t frame_number, const wire::PcapRecord& rec, wire::RejectCounters* counters) {
  FrameReport rep;
  rep.number = frame_number;
  RocePacket p{};
  const uint8_t* f = rec.data.data();
  const size_t len = rec.data.size();
  rep.result = wire::decode_frame(f, len, &p, {}, counters);
  switch (rep.result) {
    case Reject::kOk:
    case Reject::kIcrcMismatch:
      rep.kind = FrameKind::kRoce;
      rep.failed = rep.result != Reject::kOk;
      add_roce_fields(p, rep.result == Reject::kOk, &rep.fields);
      break;
    case Reject::kNotIp:
    case Reject::kNotUdp:
    case Reject::kNotRoceV2Port:
      rep.kind = FrameKind::kNonRoce;
      add_non_roce_fields(rep.result, f, len, p, &rep.fields);
      break;
    default:
      rep.kind = FrameKind::kMalformed;
      rep.failed = may_be_roce(f, len);
      rep.fields.push_back(text("reason", wire::reject_name(rep.result)));
      if (!rep.failed) rep.fields.push_back(text("what", "not RoCE"));
      break;
  }
  if (len < rec.orig_len) {  // cut by the capture's snap length
    rep.fields.push_back(number("captured", len));
    rep.fields.push_back(number("orig_len", rec.orig_len));
  }
  return rep;
}

}  // namespace ndnic::ndpcap
