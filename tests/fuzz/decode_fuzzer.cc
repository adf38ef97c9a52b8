// libFuzzer target for wire/: the frame decoder (ICRC checked and not), the pcap reader, and
// the round trip decode -> encode -> decode, which must give back the same fields.
// Built with clang++ -fsanitize=fuzzer,address,undefined (tests/fuzz/meson.build), so any read
// outside the input, any UB and any broken property aborts the run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ndnic/wire/packet.h"
#include "ndnic/wire/pcap_file.h"
#include "wire/rx_flow_cache.h"

namespace {

using namespace ndnic::wire;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "property violated: %s\n", what);
  std::abort();
}

void require(bool ok, const char* what) {
  if (!ok) fail(what);
}

bool same_bytes(const uint8_t* a, const uint8_t* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

/// Every field the decoder reports that the encoder writes back (not the IPv4 checksum, which
/// the encoder recomputes, nor the ICRC).
void require_same_fields(const RocePacket& a, const RocePacket& b) {
  require(same_bytes(a.eth.dst, b.eth.dst, 6) && same_bytes(a.eth.src, b.eth.src, 6), "MACs");
  require(a.eth.has_vlan == b.eth.has_vlan && a.eth.vlan_tci == b.eth.vlan_tci, "VLAN tag");
  require(a.eth.ethertype == b.eth.ethertype && a.ipv6 == b.ipv6, "EtherType");
  if (a.ipv6) {
    require(same_bytes(a.ip6.src, b.ip6.src, 16) && same_bytes(a.ip6.dst, b.ip6.dst, 16), "IPv6 addresses");
    require(a.ip6.traffic_class == b.ip6.traffic_class && a.ip6.flow_label == b.ip6.flow_label &&
                a.ip6.hop_limit == b.ip6.hop_limit,
            "IPv6 fields");
  } else {
    require(a.ip4.src == b.ip4.src && a.ip4.dst == b.ip4.dst && a.ip4.tos == b.ip4.tos &&
                a.ip4.ttl == b.ip4.ttl && a.ip4.id == b.ip4.id && a.ip4.frag == b.ip4.frag,
            "IPv4 fields");
    require(a.ip4.options_len == b.ip4.options_len && same_bytes(a.ip4.options, b.ip4.options, a.ip4.options_len),
            "IPv4 options");
  }
  require(a.udp.src_port == b.udp.src_port && a.udp.dst_port == b.udp.dst_port &&
              a.udp.checksum == b.udp.checksum,
          "UDP");
  require(a.bth.opcode == b.bth.opcode && a.bth.se == b.bth.se && a.bth.mig == b.bth.mig &&
              a.bth.pad == b.bth.pad && a.bth.tver == b.bth.tver && a.bth.pkey == b.bth.pkey &&
              a.bth.dest_qp == b.bth.dest_qp && a.bth.ack_req == b.bth.ack_req && a.bth.psn == b.bth.psn,
          "BTH");
  require(a.frame_len == b.frame_len, "frame_len");
  const uint8_t ext = opcode_info(a.bth.opcode).ext;
  if (ext & kHdrReth)
    require(a.reth.va == b.reth.va && a.reth.rkey == b.reth.rkey && a.reth.dma_len == b.reth.dma_len, "RETH");
  if (ext & kHdrAeth) require(a.aeth.syndrome == b.aeth.syndrome && a.aeth.msn == b.aeth.msn, "AETH");
  if (ext & kHdrAtomicEth)
    require(a.atomic.va == b.atomic.va && a.atomic.rkey == b.atomic.rkey &&
                a.atomic.swap_add == b.atomic.swap_add && a.atomic.compare == b.atomic.compare,
            "AtomicETH");
  if (ext & kHdrAtomicAckEth) require(a.atomic_ack.orig == b.atomic_ack.orig, "AtomicAckETH");
  if (ext & kHdrImmDt) require(a.imm == b.imm, "ImmDt");
  if (ext & kHdrIeth) require(a.ieth_rkey == b.ieth_rkey, "IETH");
  if (ext & kHdrDeth) require(a.deth.qkey == b.deth.qkey && a.deth.src_qp == b.deth.src_qp, "DETH");
  require(a.payload_len == b.payload_len && same_bytes(a.payload, b.payload, a.payload_len), "payload");
}

/// `frame` cut at [0, a), [a, b), [b, end) into exact-size heap pieces, as a chained mbuf holds a
/// zero-copy sender's frame; decoded as pieces, and compared with `expect` when given (while
/// the pieces, which the decoded packet points into, still exist).
Reject decode_cut(const std::vector<uint8_t>& frame, size_t a, size_t b, size_t end, const RocePacket* expect) {
  std::vector<uint8_t> head(frame.begin(), frame.begin() + a), mid(frame.begin() + a, frame.begin() + b),
      tail(frame.begin() + b, frame.begin() + end);
  FramePieces f{head.data(), head.size(), mid.data(), mid.size(), tail.data(), tail.size()};
  RocePacket out{};
  const Reject r = decode_frame(f, &out);
  require(r < Reject::kCount, "reject reason out of range (pieces)");
  if (r == Reject::kOk) {
    require(out.payload_len == mid.size() && out.trailer == tail.data(), "pieces: payload and trailer");
    require(same_bytes(out.payload, mid.data(), mid.size()), "pieces: payload bytes");
    if (expect) require_same_fields(*expect, out);
  }
  // Through a receiver's flow cache, kept across inputs (twice: the first may teach it the
  // head's flow, the second then takes the known-flow shortcut): the same verdict and fields.
  static RxFlowCache cache;
  DecodeOptions with;
  with.flows = &cache;
  for (int pass = 0; pass < 2; pass++) {
    RocePacket k{};
    require(decode_frame(f, &k, with) == r, "pieces, flow cache: verdict differs");
    if (r != Reject::kOk) continue;
    require_same_fields(out, k);
    require(k.payload == out.payload && k.trailer == out.trailer && k.ip4.checksum == out.ip4.checksum,
            "pieces, flow cache: fields differ");
  }
  return r;
}

/// A frame in pieces: cut where the input says, it never reads outside a piece; cut at a
/// decoded frame's payload (a zero-copy sender's cut), it decodes as the whole frame did.
void fuzz_pieces(const std::vector<uint8_t>& frame, const RocePacket* whole, Reject strict) {
  const size_t size = frame.size();
  const size_t a = size ? frame[0] % (size + 1) : 0;
  const size_t b = a + (size > a ? frame[size - 1] % (size - a + 1) : 0);
  decode_cut(frame, a, b, size, nullptr);
  if (!whole) return;
  const size_t at = size_t(whole->payload - frame.data());
  const size_t end = at + whole->payload_len + whole->bth.pad + kIcrcLen;
  require(end <= size, "a decoded frame's trailer past its end");
  require(decode_cut(frame, at, at + whole->payload_len, end, whole) == strict, "pieces: verdict differs");
}

/// A receiver's flow cache, kept across inputs as a shard keeps it across frames: decoded
/// through it (twice: the first may teach it the frame's flow, the second then takes the
/// known-flow shortcut), a frame gets the verdict and the fields it gets without it.
void fuzz_known_flow(const std::vector<uint8_t>& frame, const RocePacket& strict_pkt, Reject strict) {
  static RxFlowCache cache;
  DecodeOptions with;
  with.flows = &cache;
  for (int pass = 0; pass < 2; pass++) {
    RocePacket p{};
    const Reject r = decode_frame(frame.empty() ? nullptr : frame.data(), frame.size(), &p, with);
    require(r == strict, "flow cache: verdict differs");
    if (r != Reject::kOk) continue;
    require_same_fields(strict_pkt, p);
    require(p.ip4.checksum == strict_pkt.ip4.checksum && p.eth.ethertype == strict_pkt.eth.ethertype &&
                p.trailer == strict_pkt.trailer && p.icrc == strict_pkt.icrc && p.payload == strict_pkt.payload,
            "flow cache: fields differ");
  }
}

void fuzz_frame(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan then flags a read even one byte past the frame.
  std::vector<uint8_t> frame(data, data + size);
  const uint8_t* f = frame.empty() ? nullptr : frame.data();

  RocePacket checked{};
  const Reject strict = decode_frame(f, size, &checked);
  require(strict < Reject::kCount, "reject reason out of range");
  fuzz_known_flow(frame, checked, strict);

  RocePacket p{};
  DecodeOptions lax;
  lax.check_icrc = false;
  lax.check_ip_checksum = false;
  RejectCounters counters;
  const Reject r = decode_frame(f, size, &p, lax, &counters);
  require(counters[r] == 1 && counters.total_rejected() == (r == Reject::kOk ? 0u : 1u), "counters");
  require(r != Reject::kIcrcMismatch && r != Reject::kBadIpChecksum, "a disabled check rejected");
  // Turning the checks off changes only the verdicts of those checks; the ICRC is checked last.
  if (strict == Reject::kIcrcMismatch) require(r == Reject::kOk, "ICRC mismatch hid another reject");
  if (strict != Reject::kIcrcMismatch && strict != Reject::kBadIpChecksum) require(strict == r, "verdicts differ");
  fuzz_pieces(frame, r == Reject::kOk ? &p : nullptr, strict);
  if (r != Reject::kOk) return;

  std::vector<uint8_t> out(frame_length(p));
  require(p.frame_len == out.size(), "decode's frame_len is not frame_length()");
  require(encode_frame(p, out.data(), out.size()) == out.size(), "encode_frame length");
  require(out.size() <= size, "re-encoded frame is longer than the one decoded");
  RocePacket again{};
  require(decode_frame(out.data(), out.size(), &again) == Reject::kOk, "re-encoded frame does not decode");
  // Fields, not bytes: reserved bits and a trailer after the IP packet are not carried over.
  require_same_fields(p, again);
}

void fuzz_pcap(const uint8_t* data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  PcapReader reader;
  if (!reader.parse(file.empty() ? nullptr : file.data(), size)) {
    require(!reader.error().empty(), "pcap refused without a reason");
    return;
  }
  for (const PcapRecord& rec : reader.records()) fuzz_frame(rec.data.data(), rec.data.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_frame(data, size);
  fuzz_pcap(data, size);
  return 0;
}
