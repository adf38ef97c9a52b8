#include "tests/tshark/tshark_expect.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ndnic::test {
namespace {

using wire::RocePacket;

/// One expectation: a number, a byte string, an IP address, or "whatever tshark makes of it".
struct Expect {
  enum Kind { kNumber, kBytes, kIp4, kIp6, kUnchecked } kind;
  uint64_t number = 0;
  std::vector<uint8_t> bytes;  ///< kBytes, kIp6
};

Expect num(uint64_t v) { return {Expect::kNumber, v, {}}; }
Expect bytes(const uint8_t* p, size_t n) { return {Expect::kBytes, 0, {p, p + n}}; }
Expect be32_bytes(uint32_t v) {
  const uint8_t b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  return bytes(b, 4);
}

// tshark prints numbers in decimal or as 0x-prefixed hex depending on the field's base, and
// booleans as 1/0 (4.0) or True/False (later versions).
bool parse_number(const std::string& s, uint64_t* v) {
  if (s == "True") return *v = 1, true;
  if (s == "False") return *v = 0, true;
  errno = 0;
  char* end = nullptr;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  *v = std::strtoull(s.c_str(), &end, hex ? 16 : 10);
  return errno == 0 && end && *end == '\0' && !s.empty();
}

// Byte fields come as "11223344" or "11:22:33:44" depending on the version.
bool parse_hex_bytes(const std::string& s, std::vector<uint8_t>* out) {
  out->clear();
  std::string digits;
  for (char c : s)
    if (c != ':') digits += c;
  if (digits.size() % 2) return false;
  for (size_t i = 0; i < digits.size(); i += 2) {
    char pair[3] = {digits[i], digits[i + 1], 0};
    char* end = nullptr;
    unsigned long b = std::strtoul(pair, &end, 16);
    if (*end) return false;
    out->push_back(uint8_t(b));
  }
  return true;
}

std::string hex(const std::vector<uint8_t>& b) {
  std::string s;
  char buf[3];
  for (uint8_t c : b) {
    std::snprintf(buf, sizeof(buf), "%02x", c);
    s += buf;
  }
  return s;
}

std::string describe(const Expect& e) {
  switch (e.kind) {
    case Expect::kNumber: return std::to_string(e.number);
    case Expect::kIp4: {
      char buf[24];
      std::snprintf(buf, sizeof(buf), "%u.%u.%u.%u", unsigned(e.number >> 24), unsigned(e.number >> 16 & 0xff),
                    unsigned(e.number >> 8 & 0xff), unsigned(e.number & 0xff));
      return buf;
    }
    case Expect::kBytes:
    case Expect::kIp6: return hex(e.bytes);
    case Expect::kUnchecked: return "(not checked)";
  }
  return "?";
}

bool matches(const Expect& e, const std::string& shown) {
  switch (e.kind) {
    case Expect::kNumber: {
      uint64_t v;
      return parse_number(shown, &v) && v == e.number;
    }
    case Expect::kBytes: {
      std::vector<uint8_t> b;
      return parse_hex_bytes(shown, &b) && b == e.bytes;
    }
    case Expect::kIp4: {
      in_addr a;
      return inet_pton(AF_INET, shown.c_str(), &a) == 1 && ntohl(a.s_addr) == e.number;
    }
    case Expect::kIp6: {
      uint8_t a[16];
      return inet_pton(AF_INET6, shown.c_str(), a) == 1 && std::memcmp(a, e.bytes.data(), 16) == 0;
    }
    case Expect::kUnchecked: return true;
  }
  return false;
}

std::map<std::string, Expect> expectations(const RocePacket& p) {
  std::map<std::string, Expect> e;
  const wire::OpcodeInfo& info = wire::opcode_info(p.bth.opcode);
  const uint8_t pad = wire::pad_for(p.payload_len);
  const size_t udp_len = wire::kUdpHdrLen + wire::kBthLen + info.ext_len + p.payload_len + pad + wire::kIcrcLen;

  e["frame.len"] = num(wire::frame_length(p));
  if (p.eth.has_vlan) {
    e["vlan.id"] = num(p.eth.vlan_tci & 0x0fff);
    e["vlan.priority"] = num(p.eth.vlan_tci >> 13);
    e["vlan.etype"] = num(p.ipv6 ? wire::kEtherTypeIpv6 : wire::kEtherTypeIpv4);
  }
  if (p.ipv6) {
    e["ipv6.src"] = {Expect::kIp6, 0, {p.ip6.src, p.ip6.src + 16}};
    e["ipv6.dst"] = {Expect::kIp6, 0, {p.ip6.dst, p.ip6.dst + 16}};
    e["ipv6.tclass"] = num(p.ip6.traffic_class);
    e["ipv6.flow"] = num(p.ip6.flow_label);
    e["ipv6.hlim"] = num(p.ip6.hop_limit);
    e["ipv6.plen"] = num(udp_len);
  } else {
    e["ip.src"] = {Expect::kIp4, p.ip4.src, {}};
    e["ip.dst"] = {Expect::kIp4, p.ip4.dst, {}};
    e["ip.dsfield"] = num(p.ip4.tos);
    e["ip.ttl"] = num(p.ip4.ttl);
    e["ip.id"] = num(p.ip4.id);
    e["ip.flags.df"] = num((p.ip4.frag & 0x4000) != 0);
    e["ip.len"] = num(wire::kIpv4HdrLen + p.ip4.options_len + udp_len);
    e["ip.checksum.status"] = num(1);  // Wireshark's PROTO_CHECKSUM_E_GOOD
  }
  e["udp.srcport"] = num(p.udp.src_port);
  e["udp.dstport"] = num(p.udp.dst_port);
  e["udp.length"] = num(udp_len);

  e["infiniband.bth.opcode"] = num(p.bth.opcode);
  e["infiniband.bth.se"] = num(p.bth.se);
  e["infiniband.bth.m"] = num(p.bth.mig);
  e["infiniband.bth.padcnt"] = num(pad);
  e["infiniband.bth.tver"] = num(p.bth.tver);
  e["infiniband.bth.p_key"] = num(p.bth.pkey);
  e["infiniband.bth.destqp"] = num(p.bth.dest_qp);
  e["infiniband.bth.a"] = num(p.bth.ack_req);
  e["infiniband.bth.psn"] = num(p.bth.psn);
  if (info.ext & wire::kHdrReth) {
    e["infiniband.reth.va"] = num(p.reth.va);
    e["infiniband.reth.r_key"] = num(p.reth.rkey);
    e["infiniband.reth.dmalen"] = num(p.reth.dma_len);
  }
  if (info.ext & wire::kHdrAtomicEth) {
    // Wireshark shows the AtomicETH's VA and R_Key under the RETH's field names.
    e["infiniband.reth.va"] = num(p.atomic.va);
    e["infiniband.reth.r_key"] = num(p.atomic.rkey);
    e["infiniband.atomiceth.swapdt"] = num(p.atomic.swap_add);
    e["infiniband.atomiceth.cmpdt"] = num(p.atomic.compare);
  }
  if (info.ext & wire::kHdrAeth) {
    e["infiniband.aeth.syndrome"] = num(p.aeth.syndrome);
    e["infiniband.aeth.msn"] = num(p.aeth.msn);
  }
  if (info.ext & wire::kHdrAtomicAckEth) e["infiniband.atomicacketh.origremdt"] = num(p.atomic_ack.orig);
  if (info.ext & wire::kHdrImmDt) e["infiniband.immdt"] = be32_bytes(p.imm);
  if (info.ext & wire::kHdrIeth) e["infiniband.ieth"] = be32_bytes(p.ieth_rkey);
  if (info.ext & wire::kHdrDeth) {
    e["infiniband.deth.q_key"] = num(p.deth.qkey);
    e["infiniband.deth.srcqp"] = num(p.deth.src_qp);
  }
  // Wireshark reads the ICRC as a big-endian number; ndnic keeps it as stored (little-endian).
  e["infiniband.invariant.crc"] = num(__builtin_bswap32(p.icrc));

  if (p.payload_len + pad > 0) {
    if (info.ext & wire::kHdrDeth && p.bth.dest_qp == 1) {
      e["data.data"] = {Expect::kUnchecked, 0, {}};  // QP1 payloads are dissected as MADs
    } else {
      // Wireshark's payload runs up to the ICRC, so it includes the pad bytes.
      std::vector<uint8_t> data(p.payload, p.payload + p.payload_len);
      data.resize(p.payload_len + pad, 0);
      e["data.data"] = {Expect::kBytes, 0, data};
    }
  }
  return e;
}

}  // namespace

const std::vector<std::string>& tshark_roce_fields() {
  static const std::vector<std::string> kFields = {
      "frame.number", "frame.len",
      "vlan.id", "vlan.priority", "vlan.etype",
      "ip.src", "ip.dst", "ip.dsfield", "ip.ttl", "ip.id", "ip.flags.df", "ip.len", "ip.checksum.status",
      "ipv6.src", "ipv6.dst", "ipv6.tclass", "ipv6.flow", "ipv6.hlim", "ipv6.plen",
      "udp.srcport", "udp.dstport", "udp.length",
      "infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m", "infiniband.bth.padcnt",
      "infiniband.bth.tver", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.a",
      "infiniband.bth.psn",
      "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
      "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
      "infiniband.aeth.syndrome", "infiniband.aeth.msn",
      "infiniband.atomicacketh.origremdt",
      "infiniband.immdt", "infiniband.ieth",
      "infiniband.deth.q_key", "infiniband.deth.srcqp",
      "infiniband.invariant.crc",
      "data.data",
      "_ws.malformed",
  };
  return kFields;
}

std::vector<std::string> tshark_mismatches(const RocePacket& p, const TsharkRow& row) {
  std::vector<std::string> diffs;
  const std::map<std::string, Expect> expect = expectations(p);
  for (const auto& [field, e] : expect) {
    auto it = row.find(field);
    if (it == row.end()) {
      if (e.kind == Expect::kUnchecked) continue;
      diffs.push_back(field + ": not shown by tshark, expected " + describe(e));
    } else if (!matches(e, it->second)) {
      diffs.push_back(field + ": tshark shows " + it->second + ", expected " + describe(e));
    }
  }
  for (const auto& [field, value] : row) {
    if (field == "frame.number" || expect.count(field)) continue;
    diffs.push_back(field + ": tshark shows " + value + " for a field this packet does not carry");
  }
  return diffs;
}

bool tshark_saw_no_roce(const TsharkRow& row) { return row.count("infiniband.bth.opcode") == 0; }

}  // namespace ndnic::test
