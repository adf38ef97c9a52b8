// What a receiver keeps of the flows it sees, direct-mapped by destination QP (a receiving
// shard's QPs): each flow's ICRC prefix (icrc_prefix.h), and the header bytes its packets
// share, so that decode can take a frame of a known flow by one compare.
//
// A peer's packets of one QP repeat every header byte through the BTH but sixteen: the IP
// total length, identification and checksum, the UDP length and checksum, and the BTH opcode,
// flags and PSN word. Once a frame of the flow passed the whole decoder, a later frame whose other
// bytes are the same passed every check on those bytes too (Ethernet type, IP version and
// header length, fragment bits, protocol, UDP port); decode_frame checks only the changing
// fields for it, and takes the flow's fields from here. Any other frame takes the whole
// decoder, as it did before: a frame the compare refuses loses nothing but time.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "ndnic/wire/packet.h"
#include "wire/icrc_prefix.h"

namespace ndnic::wire {

/// Ethernet, IPv4 without options, UDP and BTH: the bytes a flow's packets share, but for the
/// changing fields' (RxFlow::kVariable).
constexpr size_t kFlowHeadLen = kEthHdrLen + kIpv4HdrLen + kUdpHdrLen + kBthLen;
static_assert(kFlowHeadLen == 54);

/// One flow: its ICRC prefix and, once a frame of it has been decoded whole, its header.
struct RxFlow {
  /// The head as kHeadWords words at kHeadWordAt (the last overlaps the one before it).
  static constexpr size_t kHeadWords = 7;
  static constexpr size_t kHeadWordAt[kHeadWords] = {0, 8, 16, 24, 32, 40, kFlowHeadLen - 8};
  /// Frame offsets of the changing fields: IP total length, id, checksum; UDP length and
  /// checksum; BTH opcode, flags, AckReq+PSN word.
  static constexpr size_t kVariable[] = {16, 17, 18, 19, 24, 25, 38, 39, 40, 41, 42, 43, 50, 51, 52, 53};
  /// Each head word's bits that must match, laid out as its bytes are (any byte order).
  static constexpr auto kHeadMask = [] {
    std::array<uint64_t, kHeadWords> m{};
    for (size_t i = 0; i < kHeadWords; i++) {
      std::array<uint8_t, 8> bytes{};
      for (size_t b = 0; b < 8; b++) {
        bytes[b] = 0xff;
        for (const size_t v : kVariable)
          if (v == kHeadWordAt[i] + b) bytes[b] = 0;
      }
      m[i] = std::bit_cast<uint64_t>(bytes);
    }
    return m;
  }();

  IcrcPrefix prefix;
  bool known = false;               ///< head and the fields below are the flow's (prefix's flow)
  uint64_t head[kHeadWords] = {};   ///< [0, 54) of the flow's frames as kHeadWords words, masked
  uint32_t ip_fixed_sum = 0;        ///< one's-complement sum of the IPv4 header's unchanging words
  EthFields eth;                    ///< as decode_frame reports them for the flow's frames
  Ipv4Fields ip4;                   ///< ... id and checksum excepted
  UdpFields udp;                    ///< ... checksum excepted

  /// Whether the frame at `f` (at least kFlowHeadLen bytes) is of this known flow: its bytes
  /// equal the head's but for the changing fields.
  bool matches(const uint8_t* f) const {
    uint64_t diff = 0;
    for (size_t i = 0; i < kHeadWords; i++) {
      uint64_t w;
      std::memcpy(&w, f + kHeadWordAt[i], 8);
      diff |= (w & kHeadMask[i]) ^ head[i];
    }
    return known && diff == 0;
  }
  /// Whether the IPv4 header at `l3` (of a frame that matches()) sums to 0xffff, as a valid
  /// one does: the unchanging words' sum kept, the three changing ones added.
  bool ip_checksum_ok(const uint8_t* l3) const {
    uint32_t sum = ip_fixed_sum + load_native16(l3 + 2) + load_native16(l3 + 4) + load_native16(l3 + 10);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff;
  }

 private:
  static uint32_t load_native16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
};

class RxFlowCache {
 public:
  /// The slot of destination QP `dest_qp`.
  RxFlow& slot(uint32_t dest_qp) { return slots_[dest_qp & (kSlots - 1)]; }

  /// icrc_begin() of an IPv4 frame without options of `flow`, from its changing fields as they
  /// are on the wire (the AckReq word with its 7 reserved bits, which the ICRC covers). A slot
  /// that changes flow forgets the old flow's head.
  uint32_t crc(const IcrcFlow& flow, uint16_t ip_total_len, uint16_t ip_id, uint16_t udp_len, uint8_t bth_opcode,
               uint8_t bth_flags, uint32_t bth_psn_word) {
    RxFlow& e = take(flow);
    return e.prefix.crc(ip_total_len, ip_id, udp_len, bth_opcode, bth_flags, bth_psn_word);
  }
  /// `frame` (IPv4 without options, no VLAN tag, of `flow`) passed the whole decoder as `p`:
  /// its flow is known from now on.
  void learn(const uint8_t* frame, const IcrcFlow& flow, const RocePacket& p);

  /// Frames decoded as a known flow's (a test's evidence that the shortcut was taken).
  uint64_t known_frames = 0;

 private:
  RxFlow& take(const IcrcFlow& flow) {
    RxFlow& e = slot(flow.dest_qp);
    if (!e.prefix.holds(flow)) {
      e.known = false;
      e.prefix.set_flow(flow);
    }
    return e;
  }

  static constexpr uint32_t kSlots = 16;
  RxFlow slots_[kSlots];
};

}  // namespace ndnic::wire
