// Frame -> RocePacket. Every length is checked before the bytes it covers are read.
#include <cstring>

#include "wire/icrc.h"
#include "wire/icrc_prefix.h"
#include "wire/rx_flow_cache.h"
#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

/// The ICRC field: on the wire least significant byte first (as rxe writes it).
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

const char* const kRejectNames[] = {
    "ok",
    "truncated_ethernet",
    "not_ip",
    "truncated_ip",
    "bad_ip_version",
    "bad_ip_header_length",
    "bad_ip_total_length",
    "bad_ip_checksum",
    "ip_fragment",
    "not_udp",
    "truncated_udp",
    "bad_udp_length",
    "not_roce_v2_port",
    "truncated_bth",
    "bad_transport_version",
    "unknown_opcode",
    "header_length_mismatch",
    "payload_length_mismatch",
    "pad_length_mismatch",
    "icrc_mismatch",
};
static_assert(sizeof(kRejectNames) / sizeof(kRejectNames[0]) == size_t(Reject::kCount));

// Inlined into every decoder instance: a call cost the contiguous decode ~30 instructions per frame.
[[gnu::always_inline]] inline void decode_ext_headers(const uint8_t* p, uint8_t ext, RocePacket* out) {
  if (ext == 0) return;  // SEND and WRITE MIDDLE and LAST, the most frequent: one test, not seven
  if (ext & kHdrDeth) {
    out->deth.qkey = load_be32(p);
    out->deth.src_qp = load_be24(p + 5);
    p += kDethLen;
  }
  if (ext & kHdrReth) {
    out->reth.va = load_be64(p);
    out->reth.rkey = load_be32(p + 8);
    out->reth.dma_len = load_be32(p + 12);
    p += kRethLen;
  }
  if (ext & kHdrAtomicEth) {
    out->atomic.va = load_be64(p);
    out->atomic.rkey = load_be32(p + 8);
    out->atomic.swap_add = load_be64(p + 12);
    out->atomic.compare = load_be64(p + 20);
    p += kAtomicEthLen;
  }
  if (ext & kHdrAeth) {
    out->aeth.syndrome = p[0];
    out->aeth.msn = load_be24(p + 1);
    p += kAethLen;
  }
  if (ext & kHdrAtomicAckEth) {
    out->atomic_ack.orig = load_be64(p);
    p += kAtomicAckEthLen;
  }
  if (ext & kHdrImmDt) {
    out->imm = load_be32(p);
    p += kImmDtLen;
  }
  if (ext & kHdrIeth) out->ieth_rkey = load_be32(p);
}

/// Decode's transport part: the BTH on, for a frame whose network headers (at l3, UDP length
/// `udp_len`, flow fields in `flow`) passed. `known`: the frame's flow, already known, whose
/// ICRC prefix it takes (nullptr: opt.flows or icrc_begin).
template <bool split>
[[gnu::always_inline]] inline Reject decode_transport(const FramePieces& fp, const uint8_t* hend, const uint8_t* l3,
                                                      const uint8_t* ib, size_t udp_len, IcrcFlow& flow,
                                                      const RxFlow* known, RocePacket* out, const DecodeOptions& opt) {
  const size_t ib_len = udp_len - kUdpHdrLen;
  if (ib_len < kBthLen + kIcrcLen || (split && size_t(hend - ib) < kBthLen)) return Reject::kTruncatedBth;
  auto& bth = out->bth;
  // The BTH as its three words, each field taken from them: read byte by byte between the
  // stores into *out, each byte was loaded again after every store (the stores may alias the
  // frame), ~6 instructions a frame (callgrind, BM_stream and BM_pingpong).
  const uint32_t w0 = load_be32(ib), w1 = load_be32(ib + 4), apsn = load_be32(ib + 8);
  const uint8_t opcode = uint8_t(w0 >> 24), flags = uint8_t(w0 >> 16);
  bth.opcode = opcode;
  bth.se = flags & 0x80;
  bth.mig = flags & 0x40;
  const uint8_t pad = (flags >> 4) & 3;
  bth.pad = pad;
  bth.tver = flags & 0x0f;
  bth.pkey = flow.pkey = uint16_t(w0);
  bth.dest_qp = flow.dest_qp = w1 & 0xffffff;
  bth.ack_req = apsn >> 31;
  bth.psn = apsn & kPsnMask;
  if ((flags & 0x0f) != 0) return Reject::kBadTransportVersion;
  const OpcodeInfo& info = opcode_info(opcode);
  if (!info.name) return Reject::kUnknownOpcode;
  if (ib_len < kBthLen + info.ext_len + kIcrcLen) return Reject::kHeaderLengthMismatch;
  // In one piece, the declared lengths keep every header inside the frame; in pieces, the
  // head must end where the payload begins.
  if (split && size_t(hend - ib) != kBthLen + info.ext_len) return Reject::kHeaderLengthMismatch;
  const size_t body = ib_len - kBthLen - info.ext_len - kIcrcLen;  // payload + pad
  if (!info.has_payload) {
    if (pad != 0) return Reject::kPadLengthMismatch;
    if (body != 0) return Reject::kPayloadLengthMismatch;
  } else if (body % 4 != 0 || pad > body ||
             (pad != 0 && (info.position == Position::kFirst || info.position == Position::kMiddle))) {
    return Reject::kPadLengthMismatch;
  }
  if (split && fp.payload_len != body - pad) return Reject::kPayloadLengthMismatch;
  if (split && fp.trailer_len != size_t(pad) + kIcrcLen) return Reject::kPadLengthMismatch;
  decode_ext_headers(ib + kBthLen, info.ext, out);
  const uint8_t* const payload = split ? fp.payload : ib + kBthLen + info.ext_len;
  const uint32_t payload_len = uint32_t(body - pad);
  const uint8_t* const trailer = split ? fp.trailer : payload + payload_len;
  out->payload = payload;
  out->payload_len = payload_len;
  out->trailer = trailer;
  out->frame_len = uint32_t(size_t(ib - fp.head) - kUdpHdrLen + udp_len);
  // The ICRC ends the frame: for a large one a line no one has asked for yet, which the copy
  // or CRC streaming through the payload brings in anyway. Read where it is needed, after
  // that; read here first, it stalled the receive of every 1 KiB+ frame on its own miss.
  const uint8_t* icrc_at = trailer + pad;
  out->icrc_pending = false;
  if (!opt.check_icrc && !opt.defer_payload_icrc) {
    out->icrc = load_le32(icrc_at);
    return Reject::kOk;
  }
  // From the fields as they are on the wire (the AckReq word's reserved bits included).
  const uint32_t prefix =
      known     ? known->prefix.crc(load_be16(l3 + 2), out->ip4.id, uint16_t(udp_len), opcode, flags, apsn)
      : opt.flows && IcrcPrefix::applies_to(*out)
          ? opt.flows->crc(flow, load_be16(l3 + 2), out->ip4.id, uint16_t(udp_len), opcode, flags, apsn)
          : icrc_begin(l3, out->ipv6);
  if (opt.defer_payload_icrc && payload_len >= kDeferIcrcMinPayload) {
    out->icrc = 0;  // icrc_finish reads it from the frame
    out->icrc_pending = true;
    out->icrc_partial = crc32(prefix, ib + kBthLen, info.ext_len);
    return Reject::kOk;
  }
  const size_t rest = ib_len - kBthLen - kIcrcLen;  // contiguous: extension headers, payload, pad
  const uint32_t crc =
      split ? crc32(crc32(crc32(prefix, ib + kBthLen, info.ext_len), payload, payload_len), trailer, pad)
      // An ACK's AETH alone, the commonest frame of a stream and of every round trip: the
      // general path's dispatch and byte loop cost several times its four lookups.
      : rest == kAethLen ? crc32_4(prefix, ib + kBthLen)
                         : crc32(prefix, ib + kBthLen, rest);
  out->icrc = load_le32(icrc_at);
  return crc == out->icrc ? Reject::kOk : Reject::kIcrcMismatch;
}

/// Headers are read from the head only; the lengths they declare are checked against the whole
/// frame. A contiguous frame is all head (and compiles to the decoder it always was).
/// Flattened: each small helper (the IPv4 sum, the ICRC prefix) inlined, as the compiler did by
/// itself before the second instantiation gave them a second caller (send_bw 64 B ~4% apart).
template <bool split>
[[gnu::flatten]] Reject decode(const FramePieces& fp, RocePacket* out, const DecodeOptions& opt) {
  const uint8_t* f = fp.head;
  const size_t hlen = fp.head_len;
  const size_t len = split ? fp.head_len + fp.payload_len + fp.trailer_len : fp.head_len;
  const uint8_t* hend = f + hlen;
  if (hlen < kEthHdrLen) return Reject::kTruncatedEthernet;
  std::memcpy(out->eth.dst, f, 6);
  std::memcpy(out->eth.src, f + 6, 6);
  size_t off = kEthHdrLen;
  uint16_t ethertype = load_be16(f + 12);
  out->eth.has_vlan = ethertype == kEtherTypeVlan;
  out->eth.vlan_tci = 0;
  if (out->eth.has_vlan) {
    if (hlen < kEthHdrLen + kVlanTagLen) return Reject::kTruncatedEthernet;
    out->eth.vlan_tci = load_be16(f + 14);
    ethertype = load_be16(f + 16);
    off += kVlanTagLen;
  }
  out->eth.ethertype = ethertype;

  const uint8_t* l3 = f + off;
  const size_t l3_avail = len - off;
  const size_t l3_head = hlen - off;
  // The ICRC prefix's flow, kept from the loads: read back from *out, the fields would be
  // loaded wider than they were stored (the flow compare), which waits for the stores.
  IcrcFlow flow;
  const uint8_t* l4;
  size_t l4_len;
  if (ethertype == kEtherTypeIpv4) {
    out->ipv6 = false;
    if (l3_head < kIpv4HdrLen) return Reject::kTruncatedIp;
    if (l3[0] >> 4 != 4) return Reject::kBadIpVersion;
    size_t ihl = size_t(l3[0] & 0x0f) * 4;
    if (ihl < kIpv4HdrLen || ihl > l3_head) return Reject::kBadIpHeaderLength;
    size_t total = load_be16(l3 + 2);
    if (total < ihl || total > l3_avail) return Reject::kBadIpTotalLength;
    if (opt.check_ip_checksum && ipv4_header_checksum(l3, ihl) != 0) return Reject::kBadIpChecksum;
    auto& ip = out->ip4;
    ip.tos = l3[1];
    ip.id = load_be16(l3 + 4);
    ip.frag = load_be16(l3 + 6);
    if (ip.frag & 0x3fff) return Reject::kIpFragment;  // MF or a fragment offset
    ip.ttl = l3[8];
    if (l3[9] != kIpProtoUdp) return Reject::kNotUdp;
    ip.checksum = load_be16(l3 + 10);
    ip.src = flow.ip_src = load_be32(l3 + 12);
    ip.dst = flow.ip_dst = load_be32(l3 + 16);
    flow.ip_frag = ip.frag;
    ip.options = ihl > kIpv4HdrLen ? l3 + kIpv4HdrLen : nullptr;
    ip.options_len = uint8_t(ihl - kIpv4HdrLen);
    l4 = l3 + ihl;
    l4_len = total - ihl;
  } else if (ethertype == kEtherTypeIpv6) {
    out->ipv6 = true;
    out->ip4 = Ipv4Fields{};  // a packet kept between frames must not read as an IPv4 sender's
    if (l3_head < kIpv6HdrLen) return Reject::kTruncatedIp;
    if (l3[0] >> 4 != 6) return Reject::kBadIpVersion;
    size_t plen = load_be16(l3 + 4);
    if (plen > l3_avail - kIpv6HdrLen) return Reject::kBadIpTotalLength;
    if (l3[6] != kIpProtoUdp) return Reject::kNotUdp;  // extension headers are not used by RoCEv2
    auto& ip = out->ip6;
    uint32_t w0 = load_be32(l3);
    ip.traffic_class = uint8_t(w0 >> 20);
    ip.flow_label = w0 & 0xfffff;
    ip.hop_limit = l3[7];
    std::memcpy(ip.src, l3 + 8, 16);
    std::memcpy(ip.dst, l3 + 24, 16);
    l4 = l3 + kIpv6HdrLen;
    l4_len = plen;
  } else {
    return Reject::kNotIp;
  }

  if (l4_len < kUdpHdrLen || (split && size_t(hend - l4) < kUdpHdrLen)) return Reject::kTruncatedUdp;
  size_t udp_len = load_be16(l4 + 4);
  if (udp_len != l4_len) return Reject::kBadUdpLength;
  out->udp.src_port = flow.udp_sport = load_be16(l4);
  out->udp.dst_port = flow.udp_dport = load_be16(l4 + 2);
  out->udp.checksum = load_be16(l4 + 6);
  if (out->udp.dst_port != kRoceV2Port) return Reject::kNotRoceV2Port;

  const Reject r = decode_transport<split>(fp, hend, l3, l4 + kUdpHdrLen, udp_len, flow, nullptr, out, opt);
  // A chain's head teaches the flow too where it holds every byte the flow keeps (a zero-copy
  // sender's chains may be all a receiver gets of a flow).
  if (r == Reject::kOk && opt.flows && IcrcPrefix::applies_to(*out) && !out->eth.has_vlan &&
      (!split || hlen >= kFlowHeadLen))
    opt.flows->learn(f, flow, *out);
  return r;
}

/// A frame of a flow `flows` knows (rx_flow_cache.h), contiguous or in pieces whose head holds
/// every header: its unchanging bytes compared at once, its changing fields checked as decode
/// checks them, the transport part as decode's. False, with nothing written, for any other
/// frame (decode's then: its verdict included).
template <bool split>
[[gnu::always_inline]] inline bool decode_known(const FramePieces& fp, RocePacket* out, const DecodeOptions& opt,
                                                Reject* verdict) {
  const uint8_t* f = fp.head;
  const size_t len = split ? fp.head_len + fp.payload_len + fp.trailer_len : fp.head_len;
  if (fp.head_len < kFlowHeadLen + (split ? 0 : kIcrcLen)) return false;
  constexpr size_t kL3 = kEthHdrLen, kL4 = kL3 + kIpv4HdrLen, kIb = kL4 + kUdpHdrLen;
  const RxFlow& e = opt.flows->slot(load_be24(f + kIb + 5));
  if (!e.matches(f)) return false;
  const uint8_t* l3 = f + kL3;
  const size_t total = load_be16(l3 + 2);
  if (total < kIpv4HdrLen + kUdpHdrLen || total > len - kL3) return false;
  if (opt.check_ip_checksum && !e.ip_checksum_ok(l3)) return false;
  const size_t udp_len = load_be16(f + kL4 + 4);
  if (udp_len != total - kIpv4HdrLen) return false;
  out->eth = e.eth;
  out->ipv6 = false;
  out->ip4 = e.ip4;
  out->ip4.id = load_be16(l3 + 4);
  out->ip4.checksum = load_be16(l3 + 10);
  out->udp = e.udp;
  out->udp.checksum = load_be16(f + kL4 + 6);
  IcrcFlow flow;
  *verdict = decode_transport<split>(fp, f + fp.head_len, l3, f + kIb, udp_len, flow, &e, out, opt);
  opt.flows->known_frames++;
  return true;
}

/// A chained frame's decoder: the rare path, out of line and optimised as such, beside the
/// contiguous one every frame runs (which decode's flatten keeps as it was compiled before).
[[gnu::cold, gnu::noinline]] Reject decode_pieces(const FramePieces& f, RocePacket* out, const DecodeOptions& opt) {
  return decode<true>(f, out, opt);
}

}  // namespace

bool icrc_finish(const RocePacket& p, uint32_t crc_through_payload) {
  const uint8_t* pad = p.trailer;
  return crc32(crc_through_payload, pad, p.bth.pad) == load_le32(pad + p.bth.pad);
}

bool icrc_check_pending(const RocePacket& p) {
  return icrc_finish(p, crc32(p.icrc_partial, p.payload, p.payload_len));
}

const char* reject_name(Reject r) {
  size_t i = size_t(r);
  return i < size_t(Reject::kCount) ? kRejectNames[i] : "invalid";
}

uint64_t RejectCounters::total_rejected() const {
  uint64_t n = 0;
  for (size_t i = 1; i < size_t(Reject::kCount); i++) n += count[i];
  return n;
}

namespace {

/// The one's-complement sum is the same in either byte order (RFC 1071): add native 32-bit
/// words (an IPv4 header is whole words), fold, and swap once at the end. It runs twice per
/// packet (encode, and decode where the port did not check it): 16-bit big-endian loads cost
/// ~6% of a 64-byte SEND's path.
inline uint16_t header_sum(const uint8_t* hdr, size_t len) {
  uint64_t sum = 0;
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    uint32_t w;
    std::memcpy(&w, hdr + i, 4);
    sum += w;
  }
  if (i + 2 <= len) {
    uint16_t h;
    std::memcpy(&h, hdr + i, 2);
    sum += h;
  }
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  const uint16_t folded = uint16_t(~sum);
  return uint16_t(folded >> 8 | folded << 8);  // as load_be16 would read the stored bytes
}

}  // namespace

uint16_t ipv4_header_checksum(const uint8_t* hdr, size_t len) {
  // A header without options, nearly every one, as five constant loads rather than a loop
  // (~15 instructions less per received frame).
  return len == kIpv4HdrLen ? header_sum(hdr, kIpv4HdrLen) : header_sum(hdr, len);
}

[[gnu::flatten]] Reject decode_frame(const uint8_t* frame, size_t len, RocePacket* out, const DecodeOptions& opt,
                    RejectCounters* counters) {
  Reject r;
  FramePieces whole;
  whole.head = frame;
  whole.head_len = len;
  if (!opt.flows || !decode_known<false>(whole, out, opt, &r)) r = decode<false>(whole, out, opt);
  if (counters) counters->add(r);
  return r;
}

Reject decode_frame(const FramePieces& frame, RocePacket* out, const DecodeOptions& opt,
                    RejectCounters* counters) {
  Reject r = Reject::kTruncatedBth;
  if (frame.trailer && (!opt.flows || !decode_known<true>(frame, out, opt, &r))) r = decode_pieces(frame, out, opt);
  if (counters) counters->add(r);
  return r;
}

}  // namespace ndnic::wire
