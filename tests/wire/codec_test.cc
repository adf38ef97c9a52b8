// Encoder/decoder: round trips over every opcode, and one named reject per malformation.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/fixtures/packet_builder.h"
#include "wire/icrc.h"
#include "wire/header_template.h"
#include "wire/icrc_prefix.h"
#include "wire/rx_flow_cache.h"
#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

using testing::build_packet;

void expect_same_fields(const RocePacket& a, const RocePacket& b) {
  const OpcodeInfo& info = opcode_info(a.bth.opcode);
  EXPECT_EQ(0, std::memcmp(a.eth.dst, b.eth.dst, 6));
  EXPECT_EQ(0, std::memcmp(a.eth.src, b.eth.src, 6));
  EXPECT_EQ(a.eth.has_vlan, b.eth.has_vlan);
  if (a.eth.has_vlan) {
    EXPECT_EQ(a.eth.vlan_tci, b.eth.vlan_tci);
  }
  EXPECT_EQ(a.ipv6, b.ipv6);
  if (a.ipv6) {
    EXPECT_EQ(0, std::memcmp(a.ip6.src, b.ip6.src, 16));
    EXPECT_EQ(0, std::memcmp(a.ip6.dst, b.ip6.dst, 16));
    EXPECT_EQ(a.ip6.flow_label, b.ip6.flow_label);
    EXPECT_EQ(a.ip6.traffic_class, b.ip6.traffic_class);
    EXPECT_EQ(a.ip6.hop_limit, b.ip6.hop_limit);
  } else {
    EXPECT_EQ(a.ip4.src, b.ip4.src);
    EXPECT_EQ(a.ip4.dst, b.ip4.dst);
    EXPECT_EQ(a.ip4.id, b.ip4.id);
    EXPECT_EQ(a.ip4.tos, b.ip4.tos);
    EXPECT_EQ(a.ip4.ttl, b.ip4.ttl);
  }
  EXPECT_EQ(a.udp.src_port, b.udp.src_port);
  EXPECT_EQ(b.udp.dst_port, kRoceV2Port);
  EXPECT_EQ(a.bth.opcode, b.bth.opcode);
  EXPECT_EQ(a.bth.se, b.bth.se);
  EXPECT_EQ(a.bth.ack_req, b.bth.ack_req);
  EXPECT_EQ(a.bth.dest_qp, b.bth.dest_qp);
  EXPECT_EQ(a.bth.psn, b.bth.psn);
  EXPECT_EQ(b.bth.pad, pad_for(a.payload_len));
  EXPECT_EQ(b.bth.pkey, kDefaultPkey);
  if (info.ext & kHdrReth) {
    EXPECT_EQ(a.reth.va, b.reth.va);
    EXPECT_EQ(a.reth.rkey, b.reth.rkey);
    EXPECT_EQ(a.reth.dma_len, b.reth.dma_len);
  }
  if (info.ext & kHdrAeth) {
    EXPECT_EQ(a.aeth.syndrome, b.aeth.syndrome);
    EXPECT_EQ(a.aeth.msn, b.aeth.msn);
  }
  if (info.ext & kHdrAtomicEth) {
    EXPECT_EQ(a.atomic.va, b.atomic.va);
    EXPECT_EQ(a.atomic.rkey, b.atomic.rkey);
    EXPECT_EQ(a.atomic.swap_add, b.atomic.swap_add);
    EXPECT_EQ(a.atomic.compare, b.atomic.compare);
  }
  if (info.ext & kHdrAtomicAckEth) {
    EXPECT_EQ(a.atomic_ack.orig, b.atomic_ack.orig);
  }
  if (info.ext & kHdrImmDt) {
    EXPECT_EQ(a.imm, b.imm);
  }
  if (info.ext & kHdrIeth) {
    EXPECT_EQ(a.ieth_rkey, b.ieth_rkey);
  }
  if (info.ext & kHdrDeth) {
    EXPECT_EQ(a.deth.qkey, b.deth.qkey);
    EXPECT_EQ(a.deth.src_qp, b.deth.src_qp);
  }
  ASSERT_EQ(a.payload_len, b.payload_len);
  if (a.payload_len) {
    EXPECT_EQ(0, std::memcmp(a.payload, b.payload, a.payload_len));
  }
}

class RoundTrip : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(RoundTrip, EveryOpcodeEverySmallPayload) {
  auto [ipv6, vlan] = GetParam();
  std::mt19937_64 rng(42);
  for (int op = 0; op < 256; op++) {
    if (!opcode_known(uint8_t(op))) continue;
    for (uint32_t len : {0u, 1u, 2u, 3u, 4u, 5u, 63u, 64u, 1024u, 4096u}) {
      auto b = build_packet(uint8_t(op), len, rng, ipv6, vlan);
      ASSERT_FALSE(b.frame.empty());
      RocePacket d;
      const Position pos = opcode_info(uint8_t(op)).position;
      if ((pos == Position::kFirst || pos == Position::kMiddle) && pad_for(len) != 0) {
        // FIRST and MIDDLE packets are full path-MTU packets: a pad there is malformed.
        EXPECT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d), Reject::kPadLengthMismatch);
        continue;
      }
      ASSERT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d), Reject::kOk)
          << opcode_info(uint8_t(op)).name << " len " << len;
      expect_same_fields(b.pkt, d);
      // The frame's own trailing bytes are the ICRC, little-endian.
      EXPECT_EQ(d.icrc, icrc_compute(b.frame.data() + 14 + (vlan ? 4 : 0), ipv6,
                                     b.frame.size() - 14 - (vlan ? 4 : 0) -
                                         (ipv6 ? 40 : 20) - 8 - 4));
      // Pad bytes go out as zeros.
      const uint8_t pad = pad_for(b.pkt.payload_len);
      for (int i = 0; i < pad; i++) EXPECT_EQ(b.frame[b.frame.size() - 5 - i], 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Framing, RoundTrip,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

TEST(Encode, LengthsAndChecksum) {
  std::mt19937_64 rng(1);
  auto b = build_packet(kRcWriteOnly, 61, rng);
  const uint8_t* ip = b.frame.data() + 14;
  EXPECT_EQ(b.frame.size(), 14 + 20 + 8 + 12 + 16 + 61 + 3 + 4u);
  EXPECT_EQ(load_be16(ip + 2), b.frame.size() - 14);
  EXPECT_EQ(load_be16(ip + 20 + 4), b.frame.size() - 14 - 20);
  EXPECT_EQ(ipv4_header_checksum(ip, 20), 0);  // a correct header sums to zero
  EXPECT_EQ((ip[20 + 8 + 1] >> 4) & 3, 3);      // PadCnt
}

TEST(Encode, CapacityTooSmallWritesNothing) {
  std::mt19937_64 rng(2);
  auto b = build_packet(kRcSendOnly, 100, rng);
  std::vector<uint8_t> small(b.frame.size() - 1, 0xAA);
  EXPECT_EQ(encode_frame(b.pkt, small.data(), small.size()), 0u);
  for (uint8_t c : small) ASSERT_EQ(c, 0xAA);
}

// ---- one malformed frame per reject reason --------------------------------------------

struct Mutation {
  const char* what;
  Reject expect;
  std::function<void(std::vector<uint8_t>&)> apply;
};

// Offsets inside an untagged IPv4 frame.
constexpr size_t kIp = 14, kUdp = 34, kBth = 42;

void fix_ip_checksum(std::vector<uint8_t>& f) {
  store_be16(&f[kIp + 10], 0);
  store_be16(&f[kIp + 10], ipv4_header_checksum(&f[kIp], (f[kIp] & 0xf) * 4));
}
void set_ip_total(std::vector<uint8_t>& f, size_t total) {
  store_be16(&f[kIp + 2], uint16_t(total));
  fix_ip_checksum(f);
}
// Shrinks the IB part by `n` bytes consistently (IP and UDP lengths follow), keeping the ICRC
// position at the end; the ICRC is then wrong, but length checks come first.
void shrink(std::vector<uint8_t>& f, size_t n) {
  f.resize(f.size() - n);
  store_be16(&f[kUdp + 4], uint16_t(f.size() - kUdp));
  set_ip_total(f, f.size() - kIp);
}

TEST(Decode, EveryMalformationHasItsReason) {
  std::mt19937_64 rng(7);
  const std::vector<Mutation> cases = {
      {"runt", Reject::kTruncatedEthernet, [](auto& f) { f.resize(13); }},
      {"vlan tag cut", Reject::kTruncatedEthernet,
       [](auto& f) { f.resize(16); store_be16(&f[12], kEtherTypeVlan); }},
      {"arp", Reject::kNotIp, [](auto& f) { store_be16(&f[12], kEtherTypeArp); }},
      {"ip cut", Reject::kTruncatedIp, [](auto& f) { f.resize(kIp + 19); }},
      {"version 5", Reject::kBadIpVersion, [](auto& f) { f[kIp] = 0x55; }},
      {"ipv6 ethertype, v4 header", Reject::kBadIpVersion,
       [](auto& f) { store_be16(&f[12], kEtherTypeIpv6); f.resize(kIp + 60); }},
      {"ihl 4", Reject::kBadIpHeaderLength, [](auto& f) { f[kIp] = 0x44; }},
      {"total > frame", Reject::kBadIpTotalLength, [](auto& f) { set_ip_total(f, f.size()); }},
      {"total < ihl", Reject::kBadIpTotalLength, [](auto& f) { set_ip_total(f, 19); }},
      {"checksum", Reject::kBadIpChecksum, [](auto& f) { f[kIp + 10] ^= 1; }},
      {"more fragments", Reject::kIpFragment,
       [](auto& f) { store_be16(&f[kIp + 6], 0x2000); fix_ip_checksum(f); }},
      {"fragment offset", Reject::kIpFragment,
       [](auto& f) { store_be16(&f[kIp + 6], 0x0010); fix_ip_checksum(f); }},
      {"tcp", Reject::kNotUdp, [](auto& f) { f[kIp + 9] = 6; fix_ip_checksum(f); }},
      {"udp cut", Reject::kTruncatedUdp,
       [](auto& f) { f.resize(kUdp + 7); set_ip_total(f, 27); }},
      {"udp length", Reject::kBadUdpLength, [](auto& f) { f[kUdp + 5] ^= 4; }},
      {"port", Reject::kNotRoceV2Port, [](auto& f) { store_be16(&f[kUdp + 2], 4790); }},
      {"no bth", Reject::kTruncatedBth, [](auto& f) { shrink(f, f.size() - kBth - 15); }},
      {"tver", Reject::kBadTransportVersion, [](auto& f) { f[kBth + 1] |= 1; }},
      {"opcode 0x15", Reject::kUnknownOpcode, [](auto& f) { f[kBth] = 0x15; }},
      {"opcode 0xff", Reject::kUnknownOpcode, [](auto& f) { f[kBth] = 0xff; }},
      {"reth cut", Reject::kHeaderLengthMismatch,
       [](auto& f) { shrink(f, 36); f[kBth] = kRcWriteOnly; }},
      {"atomiceth cut", Reject::kHeaderLengthMismatch, [](auto& f) { f[kBth] = kRcFetchAdd; shrink(f, 24); }},
      {"ack with payload", Reject::kPayloadLengthMismatch,
       [](auto& f) { f[kBth] = kRcReadRequest; f[kBth + 1] &= 0xcf; }},
      {"ack with pad", Reject::kPadLengthMismatch, [](auto& f) { f[kBth] = kRcAck; }},
      {"unaligned", Reject::kPadLengthMismatch, [](auto& f) { shrink(f, 1); }},
      {"pad on first", Reject::kPadLengthMismatch, [](auto& f) { f[kBth] = kRcSendFirst; }},
      {"payload flip", Reject::kIcrcMismatch, [](auto& f) { f[kBth + 12] ^= 0x80; }},
      {"icrc flip", Reject::kIcrcMismatch, [](auto& f) { f.back() ^= 1; }},
      {"psn flip", Reject::kIcrcMismatch, [](auto& f) { f[kBth + 11] ^= 1; }},
  };
  RejectCounters counters;
  for (const auto& c : cases) {
    // A SEND ONLY with 45 payload bytes: pad 3, room for a 16-byte RETH or 28-byte AtomicETH.
    auto b = build_packet(kRcSendOnly, 45, rng);
    ASSERT_EQ(b.pkt.bth.pad, 3);
    c.apply(b.frame);
    RocePacket d;
    EXPECT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d, {}, &counters), c.expect)
        << c.what << ": got " << reject_name(decode_frame(b.frame.data(), b.frame.size(), &d));
  }
  // Each reason counted as often as it was expected.
  for (size_t r = 1; r < size_t(Reject::kCount); r++) {
    uint64_t expected = 0;
    for (const auto& c : cases) expected += size_t(c.expect) == r;
    EXPECT_EQ(counters.count[r], expected) << reject_name(Reject(r));
    EXPECT_GT(expected, 0u) << "no test case for " << reject_name(Reject(r));
  }
  EXPECT_EQ(counters.total_rejected(), cases.size());
  EXPECT_EQ(counters[Reject::kOk], 0u);
}

TEST(Decode, ChecksCanBeTurnedOff) {
  std::mt19937_64 rng(9);
  auto b = build_packet(kRcSendOnly, 8, rng);
  b.frame.back() ^= 0xff;
  b.frame[kIp + 10] ^= 0xff;
  RocePacket d;
  DecodeOptions off{.check_icrc = false, .check_ip_checksum = false};
  EXPECT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d, off), Reject::kOk);
  EXPECT_NE(d.icrc, icrc_compute(&b.frame[kIp], false, b.frame.size() - kBth - 4));
}

// defer_payload_icrc: a payload of kDeferIcrcMinPayload bytes or more leaves its part of the
// ICRC to the caller's copy (crc32_copy from icrc_partial, then icrc_finish); a smaller one, or
// a packet without payload, is checked at decode as before. Whatever part of the frame is
// damaged, header, payload, pad or the ICRC itself (which icrc_finish reads from the frame),
// the finished check says so.
TEST(Decode, DeferredPayloadIcrcIsFinishedByTheCopy) {
  std::mt19937_64 rng(12);
  const DecodeOptions defer{.defer_payload_icrc = true};
  for (const uint32_t len : {kDeferIcrcMinPayload, 1021u, 4096u}) {
    SCOPED_TRACE(len);
    auto b = build_packet(kRcSendLast, len, rng);
    const size_t pad_at = b.frame.size() - 4 - pad_for(len);
    for (const size_t damaged : {size_t(0), kBth + 8, kBth + 12 + 5, kBth + 12 + len - 1, pad_at, b.frame.size() - 1}) {
      SCOPED_TRACE(damaged);
      std::vector<uint8_t> f = b.frame;
      if (damaged) f[damaged] ^= 0x10;
      if (damaged == pad_at && pad_for(len) == 0) continue;
      RocePacket d;
      ASSERT_EQ(decode_frame(f.data(), f.size(), &d, defer), Reject::kOk);
      ASSERT_TRUE(d.icrc_pending);
      ASSERT_EQ(d.payload_len, len);
      std::vector<uint8_t> out(len);
      // In two pieces, as a scatter over two SGEs would copy it.
      uint32_t crc = crc32_copy(d.icrc_partial, out.data(), d.payload, 100);
      crc = crc32_copy(crc, out.data() + 100, d.payload + 100, len - 100);
      EXPECT_EQ(icrc_finish(d, crc), damaged == 0);
      EXPECT_EQ(icrc_check_pending(d), damaged == 0);
      EXPECT_EQ(0, std::memcmp(out.data(), d.payload, len));
      // Without deferring, the same frame is refused at decode exactly when it is damaged.
      EXPECT_EQ(decode_frame(f.data(), f.size(), &d), damaged ? Reject::kIcrcMismatch : Reject::kOk);
    }
  }
  // Below the threshold, and without payload, decode checks it all itself.
  for (const auto& [op, len] : {std::pair{kRcSendOnly, kDeferIcrcMinPayload - 4}, std::pair{kRcAck, 0u}}) {
    auto b = build_packet(op, len, rng);
    RocePacket d;
    ASSERT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d, defer), Reject::kOk);
    EXPECT_FALSE(d.icrc_pending);
    b.frame[b.frame.size() - 5] ^= 1;
    EXPECT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d, defer), Reject::kIcrcMismatch);
  }
}

/// `f` cut into a zero-copy sender's three pieces (headers, payload, pad and ICRC), each in
/// a buffer of its own, so that a read past a piece is a read past its allocation.
struct Pieces {
  std::vector<uint8_t> head, payload, trailer;
  FramePieces view() const {
    return {head.data(), head.size(), payload.data(), payload.size(), trailer.data(), trailer.size()};
  }
};
Pieces cut(const std::vector<uint8_t>& f, uint32_t len) {
  const size_t tail = size_t(pad_for(len)) + kIcrcLen;
  const size_t head = f.size() - tail - len;
  return {{f.begin(), f.begin() + head}, {f.begin() + head, f.end() - tail}, {f.end() - tail, f.end()}};
}

// A frame in pieces (a zero-copy sender's chain) decodes to what the whole frame decodes to,
// payload and trailer where the pieces are; a damaged byte in any piece fails its ICRC, at
// decode or in the deferred check; pieces cut anywhere else are refused.
TEST(Decode, PiecesDecodeLikeTheWholeFrame) {
  std::mt19937_64 rng(14);
  const DecodeOptions defer{.defer_payload_icrc = true};
  for (const uint8_t op : {kRcWriteOnly, kRcSendLast, kRcSendOnlyInv, kRcReadResponseOnly, kRcWriteOnlyImm}) {
    for (const uint32_t len : {1u, 255u, kDeferIcrcMinPayload, 1021u, 4096u}) {
      SCOPED_TRACE(std::to_string(op) + " " + std::to_string(len));
      auto b = build_packet(op, len, rng, false, len == 1021u);
      RocePacket whole, split;
      ASSERT_EQ(decode_frame(b.frame.data(), b.frame.size(), &whole), Reject::kOk);
      Pieces pc = cut(b.frame, len);
      ASSERT_EQ(decode_frame(pc.view(), &split), Reject::kOk);
      expect_same_fields(whole, split);
      EXPECT_EQ(split.payload, pc.payload.data());
      EXPECT_EQ(split.trailer, pc.trailer.data());
      EXPECT_EQ(split.icrc, whole.icrc);
      ASSERT_EQ(decode_frame(pc.view(), &split, defer), Reject::kOk);
      EXPECT_EQ(split.icrc_pending, len >= kDeferIcrcMinPayload);
      if (split.icrc_pending) {
        EXPECT_TRUE(icrc_check_pending(split));
      }

      for (std::vector<uint8_t>* piece : {&pc.head, &pc.payload, &pc.trailer}) {
        // In the head, a byte of the destination QP: one the ICRC covers unmasked.
        const size_t bth_at = pc.head.size() - kBthLen - opcode_info(op).ext_len;
        const size_t at = piece == &pc.head ? bth_at + 6 : rng() % piece->size();
        (*piece)[at] ^= 0x08;
        EXPECT_EQ(decode_frame(pc.view(), &split), Reject::kIcrcMismatch) << "byte " << at;
        const Reject deferred = decode_frame(pc.view(), &split, defer);
        EXPECT_TRUE(deferred == Reject::kIcrcMismatch || (deferred == Reject::kOk && !icrc_check_pending(split)));
        (*piece)[at] ^= 0x08;
      }

      // The cut one byte off: the head takes the payload's first byte, or the payload the pad's.
      Pieces longer_head = pc;
      longer_head.head.push_back(longer_head.payload.front());
      longer_head.payload.erase(longer_head.payload.begin());
      EXPECT_EQ(decode_frame(longer_head.view(), &split), Reject::kHeaderLengthMismatch);
      Pieces longer_payload = pc;
      longer_payload.payload.push_back(longer_payload.trailer.front());
      longer_payload.trailer.erase(longer_payload.trailer.begin());
      EXPECT_NE(decode_frame(longer_payload.view(), &split), Reject::kOk);
      Pieces short_head = pc;
      short_head.head.resize(kBth + 4);  // the BTH cut short in the head: never read past it
      EXPECT_NE(decode_frame(short_head.view(), &split), Reject::kOk);
    }
  }
}

// The prefix from a flow's base and the changing fields equals icrc_begin() over the encoded
// frame, whatever the opcode, length, PSN, AckReq, SE, pad and IP id; and a new flow (another
// destination, another QP) is taken up by set_flow.
TEST(Icrc, PrefixFromTheFieldsEqualsThePrefixOfTheFrame) {
  std::mt19937_64 rng(13);
  IcrcPrefix prefix;
  for (int flow = 0; flow < 8; flow++) {
    RocePacket p;
    p.ip4.src = uint32_t(rng());
    p.ip4.dst = uint32_t(rng());
    p.ip4.frag = flow % 2 ? 0x4000 : 0;
    p.udp.src_port = uint16_t(rng());
    p.bth.pkey = uint16_t(rng());
    p.bth.dest_qp = uint32_t(rng()) & kPsnMask;
    prefix.set_flow(icrc_flow_of(p));
    for (int i = 0; i < 200; i++) {
      static constexpr uint8_t kOps[] = {kRcSendOnly, kRcSendFirst, kRcWriteOnly, kRcReadRequest, kRcAck,
                                         kRcReadResponseMiddle, kRcSendOnlyInv, kRcCompareSwap};
      p.bth.opcode = kOps[rng() % 8];
      p.bth.psn = uint32_t(rng()) & kPsnMask;
      p.bth.ack_req = rng() & 1;
      p.bth.se = rng() & 1;
      p.ip4.id = uint16_t(rng());
      p.ip4.tos = uint8_t(rng());  // masked: must not matter
      p.ip4.ttl = uint8_t(rng());
      p.payload_len = opcode_info(p.bth.opcode).has_payload ? uint32_t(rng() % 4097) : 0;
      ASSERT_TRUE(IcrcPrefix::applies_to(p));
      std::vector<uint8_t> f(header_length(p));
      ASSERT_EQ(encode_headers(p, f.data()), f.size());
      ASSERT_EQ(prefix.crc_of(p), icrc_begin(f.data() + 14, false))
          << "flow " << flow << " packet " << i << " " << opcode_info(p.bth.opcode).name;
    }
  }
  RocePacket v6;
  v6.ipv6 = true;
  EXPECT_FALSE(IcrcPrefix::applies_to(v6));
}

// A flow's header template writes, for every opcode, length, PSN, AckReq, SE and IP id, the
// bytes encode_headers() writes through the BTH (IP checksum and lengths included), and returns
// the ICRC state icrc_begin() gives over them; a template made again for another flow (another
// MAC, address, source port, QP) writes that flow's headers.
TEST(HeaderTemplate, WritesWhatEncodeHeadersWrites) {
  std::mt19937_64 rng(15);
  HeaderTemplate t;
  for (int flow = 0; flow < 8; flow++) {
    RocePacket p;
    for (auto& b : p.eth.dst) b = uint8_t(rng());
    for (auto& b : p.eth.src) b = uint8_t(rng());
    p.ip4.src = uint32_t(rng());
    p.ip4.dst = uint32_t(rng());
    p.udp.src_port = uint16_t(rng());
    p.bth.dest_qp = uint32_t(rng()) & kPsnMask;
    ASSERT_TRUE(HeaderTemplate::applies_to(p));
    t.build(p);
    for (int i = 0; i < 300; i++) {
      static constexpr uint8_t kOps[] = {kRcSendOnly,    kRcSendFirst,         kRcSendLastImm, kRcWriteFirst,
                                         kRcWriteOnly,   kRcReadRequest,       kRcAck,         kRcAtomicAck,
                                         kRcSendOnlyInv, kRcReadResponseFirst, kRcCompareSwap};
      p.bth.opcode = kOps[rng() % (sizeof kOps)];
      p.bth.psn = uint32_t(rng()) & kPsnMask;
      p.bth.ack_req = rng() & 1;
      p.bth.se = rng() & 1;
      p.ip4.id = uint16_t(rng());
      p.payload_len = opcode_info(p.bth.opcode).has_payload ? uint32_t(rng() % 4097) : 0;
      std::vector<uint8_t> want(header_length(p));
      ASSERT_EQ(encode_headers(p, want.data()), want.size());
      std::vector<uint8_t> got(std::max<size_t>(64, want.size()) + 8, 0xa5);
      const uint32_t crc = t.write(got.data(), p.bth.opcode, bth_flags(p),
                                   (p.bth.ack_req ? 0x80000000u : 0) | p.bth.psn, p.ip4.id, uint16_t(udp_length(p)));
      ASSERT_EQ(encode_ext_headers(p, got.data() + kTemplateLen), got.data() + want.size());
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size()))
          << "flow " << flow << " packet " << i << " " << opcode_info(p.bth.opcode).name;
      ASSERT_EQ(crc, icrc_begin(want.data() + kEthHdrLen, false));
    }
  }
  RocePacket tagged;
  tagged.eth.has_vlan = true;
  EXPECT_FALSE(HeaderTemplate::applies_to(tagged));
  RocePacket v6;
  v6.ipv6 = true;
  EXPECT_FALSE(HeaderTemplate::applies_to(v6));
}

// Decoding with a prefix cache (as a receiving shard does) gives the verdict decoding without
// one gives, for intact frames and for frames with any one byte damaged, over flows that
// share and that evict each other's cache slots; IPv4 with options and IPv6 take the old way.
TEST(Decode, PrefixCacheGivesTheSameVerdicts) {
  std::mt19937_64 rng(14);
  RxFlowCache cache;
  const DecodeOptions with{.flows = &cache};
  int damaged_refused = 0;
  for (int i = 0; i < 3000; i++) {
    static constexpr uint8_t kOps[] = {kRcSendOnly, kRcWriteFirst, kRcReadRequest, kRcAck, kRcReadResponseLast};
    auto b = build_packet(kOps[i % 5], uint32_t(rng() % 300) & ~3u, rng, /*ipv6=*/i % 7 == 0, /*vlan=*/i % 3 == 0);
    std::vector<uint8_t> f = b.frame;
    if (i % 2) f[rng() % f.size()] ^= uint8_t(1 + rng() % 255);
    RocePacket x, y;
    const Reject rx = decode_frame(f.data(), f.size(), &x, with);
    const Reject ry = decode_frame(f.data(), f.size(), &y);
    ASSERT_EQ(rx, ry) << "frame " << i;
    damaged_refused += (i % 2) && rx == Reject::kIcrcMismatch;
  }
  EXPECT_GT(damaged_refused, 100);
  // Every byte of a frame, every bit: the reserved bits next to AckReq included.
  for (const uint8_t op : {kRcSendOnly, kRcWriteOnly, kRcAck}) {
    auto b = build_packet(op, 40, rng);
    for (size_t at = 0; at < b.frame.size(); at++) {
      for (int bit = 0; bit < 8; bit++) {
        std::vector<uint8_t> f = b.frame;
        f[at] ^= uint8_t(1 << bit);
        RocePacket x, y;
        ASSERT_EQ(decode_frame(f.data(), f.size(), &x, with), decode_frame(f.data(), f.size(), &y))
            << "byte " << at << " bit " << bit;
      }
    }
  }
}

// One packet decoded into frame after frame, as a receiving shard does (Shard::rx_pkt): every
// field its opcode has reads as a fresh packet's decode of the same frame, and an IPv6 frame
// after IPv4 ones reads no IPv4 source.
TEST(Decode, OnePacketFrameAfterFrame) {
  std::mt19937_64 rng(15);
  RxFlowCache cache;
  const DecodeOptions with{.flows = &cache};
  RocePacket kept;
  int ipv6_after_ipv4 = 0;
  bool last_ipv4 = false;
  for (int i = 0; i < 4000; i++) {
    uint8_t op;
    do op = uint8_t(rng()); while (!opcode_known(op));
    const Position pos = opcode_info(op).position;
    const bool full = pos == Position::kFirst || pos == Position::kMiddle;
    auto b = build_packet(op, full ? 256 : uint32_t(rng() % 300), rng, /*ipv6=*/i % 5 == 0, /*vlan=*/i % 3 == 0);
    const DecodeOptions& opt = i % 2 ? with : DecodeOptions{};
    RocePacket fresh;
    ASSERT_EQ(decode_frame(b.frame.data(), b.frame.size(), &fresh, opt), Reject::kOk) << opcode_info(op).name;
    ASSERT_EQ(decode_frame(b.frame.data(), b.frame.size(), &kept, opt), Reject::kOk) << opcode_info(op).name;
    expect_same_fields(fresh, kept);
    EXPECT_EQ(kept.frame_len, fresh.frame_len);
    EXPECT_EQ(kept.icrc, fresh.icrc);
    EXPECT_EQ(kept.icrc_pending, fresh.icrc_pending);
    if (kept.ipv6) {
      EXPECT_EQ(kept.ip4.src, 0u);
      ipv6_after_ipv4 += last_ipv4;
    }
    last_ipv4 = !kept.ipv6;
  }
  EXPECT_GT(ipv6_after_ipv4, 100);
}

/// The first field in which two decodes differ ("" when none does): every field, the ones
/// an opcode does not use, the pointers into the frame and the ICRC state included.
std::string first_difference(const RocePacket& a, const RocePacket& b) {
#define NDNIC_SAME(field) \
  if (!(a.field == b.field)) return #field;
  if (std::memcmp(a.eth.dst, b.eth.dst, 6) || std::memcmp(a.eth.src, b.eth.src, 6)) return "eth MACs";
  NDNIC_SAME(eth.has_vlan) NDNIC_SAME(eth.vlan_tci) NDNIC_SAME(eth.ethertype) NDNIC_SAME(ipv6)
  NDNIC_SAME(ip4.src) NDNIC_SAME(ip4.dst) NDNIC_SAME(ip4.tos) NDNIC_SAME(ip4.ttl) NDNIC_SAME(ip4.id)
  NDNIC_SAME(ip4.frag) NDNIC_SAME(ip4.checksum) NDNIC_SAME(ip4.options) NDNIC_SAME(ip4.options_len)
  if (std::memcmp(a.ip6.src, b.ip6.src, 16) || std::memcmp(a.ip6.dst, b.ip6.dst, 16)) return "ip6 addresses";
  NDNIC_SAME(ip6.traffic_class) NDNIC_SAME(ip6.flow_label) NDNIC_SAME(ip6.hop_limit)
  NDNIC_SAME(udp.src_port) NDNIC_SAME(udp.dst_port) NDNIC_SAME(udp.checksum)
  NDNIC_SAME(bth.opcode) NDNIC_SAME(bth.se) NDNIC_SAME(bth.mig) NDNIC_SAME(bth.pad) NDNIC_SAME(bth.tver)
  NDNIC_SAME(bth.pkey) NDNIC_SAME(bth.dest_qp) NDNIC_SAME(bth.ack_req) NDNIC_SAME(bth.psn)
  NDNIC_SAME(reth.va) NDNIC_SAME(reth.rkey) NDNIC_SAME(reth.dma_len) NDNIC_SAME(aeth.syndrome)
  NDNIC_SAME(aeth.msn) NDNIC_SAME(ieth_rkey) NDNIC_SAME(imm) NDNIC_SAME(atomic.va) NDNIC_SAME(atomic.rkey)
  NDNIC_SAME(atomic.swap_add) NDNIC_SAME(atomic.compare) NDNIC_SAME(atomic_ack.orig) NDNIC_SAME(deth.qkey)
  NDNIC_SAME(deth.src_qp) NDNIC_SAME(payload) NDNIC_SAME(payload_len) NDNIC_SAME(trailer) NDNIC_SAME(icrc)
  NDNIC_SAME(icrc_pending) NDNIC_SAME(icrc_partial)
#undef NDNIC_SAME
  return "";
}

// A receiver's flow cache takes a frame of a flow it knows by one compare of its unchanging
// bytes. Over flows that share a cache slot, a slot that changes flow, IPv4 with options,
// IPv6 and VLAN frames, and every decode option, each frame intact or damaged (any byte, or a
// changing field made wrong: lengths, checksum, version, opcode, a frame cut short or padded),
// the verdict and every field are those of a decode without the cache.
TEST(Decode, KnownFlowDecodesAsTheWholeDecoder) {
  std::mt19937_64 rng(15);
  struct Flow {
    uint32_t qpn;
    uint32_t ip_src;
    uint8_t tos;
    uint16_t sport;
    bool ipv6 = false, vlan = false, options = false;
  };
  const Flow flows[] = {
      {0x000011, 0xC6120001, 0, 0xC001},          {0x000021, 0xC6120001, 0, 0xC002},  // one slot
      {0x000305, 0xC6120001, 0x20, 0xC003},       {0x000305, 0xC6120009, 0x20, 0xC003},  // one QP, two peers
      {0x00abcd, 0xC6120001, 0, 0xC004},          {0x000007, 0xC6120001, 0, 0xC005, true},
      {0x000008, 0xC6120001, 0, 0xC006, false, true}, {0x000009, 0xC6120001, 0, 0xC007, false, false, true},
  };
  static constexpr uint8_t kOps[] = {kRcSendOnly, kRcSendFirst,     kRcSendMiddle,        kRcSendLastImm,
                                     kRcSendOnlyInv, kRcWriteFirst, kRcWriteOnlyImm,      kRcReadRequest,
                                     kRcAck,         kRcReadResponseOnly, kRcReadResponseMiddle, kRcCompareSwap,
                                     kRcAtomicAck};
  uint8_t opts[8] = {0x94, 0x04, 0, 0, 0x01, 0x01, 0x01, 0x00};
  RxFlowCache cache;
  int refused = 0, accepted = 0;
  for (int i = 0; i < 40000; i++) {
    const Flow& fl = flows[rng() % (sizeof flows / sizeof flows[0])];
    const uint8_t op = kOps[rng() % sizeof kOps];
    const Position pos = opcode_info(op).position;
    const bool full = pos == Position::kFirst || pos == Position::kMiddle;
    auto b = build_packet(op, full ? 256 : uint32_t(rng() % 600), rng, fl.ipv6, fl.vlan);
    RocePacket& p = b.pkt;
    p.bth.dest_qp = fl.qpn;
    p.ip4.src = fl.ip_src;
    p.ip4.tos = fl.tos;
    p.udp.src_port = fl.sport;
    if (fl.options) {
      p.ip4.options = opts;
      p.ip4.options_len = 8;
    }
    std::vector<uint8_t> f(frame_length(p) + 8);
    ASSERT_EQ(encode_frame(p, f.data(), f.size()), f.size() - 8);
    size_t len = f.size() - 8;
    const size_t l3 = kEthHdrLen + (fl.vlan ? 4 : 0), l4 = l3 + (fl.ipv6 ? 40 : 20 + p.ip4.options_len);
    switch (rng() % 12) {
      case 0: case 1: case 2: case 3: case 4: break;  // intact
      case 5: f[rng() % len] ^= uint8_t(1 + rng() % 255); break;
      case 6: f[l3 + 2 + rng() % 2] ^= uint8_t(1 << rng() % 8); break;  // IP total length
      case 7: f[l3 + 10 + rng() % 2] ^= uint8_t(1 << rng() % 8); break;  // IP checksum
      case 8: f[l4 + 4 + rng() % 2] ^= uint8_t(1 << rng() % 8); break;  // UDP length
      case 9: f[l4 + 8 + rng() % 2] = uint8_t(rng()); break;  // BTH opcode, or flags (pad, version)
      case 10: len -= 1 + rng() % std::min<size_t>(len, 70); break;  // cut short
      case 11: len += 1 + rng() % 8; break;  // a link's padding after the IP packet
    }
    DecodeOptions plain, with;
    plain.check_ip_checksum = with.check_ip_checksum = rng() % 4 != 0;
    plain.defer_payload_icrc = with.defer_payload_icrc = rng() % 2 == 0;
    plain.check_icrc = with.check_icrc = rng() % 8 != 0;
    with.flows = &cache;
    RocePacket x, y;
    const Reject rx = decode_frame(f.data(), len, &x, with);
    const Reject ry = decode_frame(f.data(), len, &y, plain);
    ASSERT_EQ(reject_name(rx), std::string(reject_name(ry))) << "frame " << i;
    if (rx == Reject::kOk) {
      ASSERT_EQ("", first_difference(x, y)) << "frame " << i;
    }
    rx == Reject::kOk ? accepted++ : refused++;
  }
  // The shortcut was taken (~9,500 times: the flows that share a slot take turns in it), and
  // damaged frames came its way too.
  EXPECT_GT(cache.known_frames, 5000u);
  EXPECT_GT(refused, 5000);
  EXPECT_GT(accepted, 20000);
}

TEST(Decode, EthernetTrailerAfterIpPacketIsIgnored) {
  std::mt19937_64 rng(10);
  auto b = build_packet(kRcAck, 0, rng);
  b.frame.insert(b.frame.end(), 6, 0);  // minimum-size padding added by a link
  RocePacket d;
  EXPECT_EQ(decode_frame(b.frame.data(), b.frame.size(), &d), Reject::kOk);
  EXPECT_EQ(d.payload_len, 0u);
}

TEST(Decode, Ipv4OptionsAreCoveredByTheIcrc) {
  std::mt19937_64 rng(11);
  auto b = build_packet(kRcSendOnly, 16, rng);
  uint8_t opts[8] = {0x94, 0x04, 0, 0, 0x01, 0x01, 0x01, 0x00};  // router alert + NOPs + EOL
  b.pkt.ip4.options = opts;
  b.pkt.ip4.options_len = 8;
  std::vector<uint8_t> f(frame_length(b.pkt));
  ASSERT_EQ(encode_frame(b.pkt, f.data(), f.size()), f.size());
  RocePacket d;
  ASSERT_EQ(decode_frame(f.data(), f.size(), &d), Reject::kOk);
  EXPECT_EQ(d.ip4.options_len, 8);
  EXPECT_EQ(0, std::memcmp(d.payload, b.payload.data(), 16));
  f[kIp + 21] ^= 1;  // an option byte: changes the IP checksum and the ICRC
  fix_ip_checksum(f);
  EXPECT_EQ(decode_frame(f.data(), f.size(), &d), Reject::kIcrcMismatch);
}

TEST(Icrc, VariantFieldsAreMasked) {
  // TOS, TTL, the IP checksum and the UDP checksum may change in flight; the ICRC must not.
  std::mt19937_64 rng(12);
  auto b = build_packet(kRcWriteOnly, 100, rng);
  auto f = b.frame;
  f[kIp + 1] ^= 0xfc;
  f[kIp + 8] -= 3;
  fix_ip_checksum(f);
  store_be16(&f[kUdp + 6], 0x1234);
  f[kBth + 4] = 0x5a;  // BTH resv8
  RocePacket d;
  EXPECT_EQ(decode_frame(f.data(), f.size(), &d), Reject::kOk);
  f[kIp + 12] ^= 1;  // the source address is invariant
  fix_ip_checksum(f);
  EXPECT_EQ(decode_frame(f.data(), f.size(), &d), Reject::kIcrcMismatch);
}

}  // namespace
}  // namespace ndnic::wire
