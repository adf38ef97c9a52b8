// A decoded RoCEv2 frame and the encoder/decoder between it and bytes on the wire.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ndnic/wire/headers.h"
#include "ndnic/wire/opcode.h"

namespace ndnic::wire {

class RxFlowCache;

/// Every field of one RoCEv2 frame, host order. Which extension-header members are meaningful
/// follows from opcode_info(bth.opcode).ext.
struct RocePacket {
  EthFields eth;
  bool ipv6 = false;         ///< IPv6 (ip6) rather than IPv4 (ip4)
  Ipv4Fields ip4;
  Ipv6Fields ip6;
  UdpFields udp;
  BthFields bth;
  RethFields reth;
  AethFields aeth;
  uint32_t ieth_rkey = 0;    ///< IETH: the R_Key to invalidate
  uint32_t imm = 0;          ///< ImmDt, as the 32-bit big-endian value on the wire
  AtomicEthFields atomic;
  AtomicAckEthFields atomic_ack;
  DethFields deth;
  const uint8_t* payload = nullptr;  ///< decode: points into the frame; encode: source bytes
  uint32_t payload_len = 0;  ///< payload bytes, excluding pad
  const uint8_t* trailer = nullptr;  ///< decode: the pad bytes, then the ICRC
  uint32_t frame_len = 0;    ///< decode: Ethernet header through ICRC, as frame_length() counts them
  uint32_t icrc = 0;         ///< ICRC as received (decode) or computed (encode)
  /// decode with DecodeOptions::defer_payload_icrc: the payload's part of the ICRC is left to
  /// the caller, who CRCs the payload as it copies it out and ends with icrc_finish(), which
  /// reads the received ICRC from the frame (`icrc` stays 0: the frame's last line is not
  /// touched before the payload's copy brings it in).
  bool icrc_pending = false;
  uint32_t icrc_partial = 0; ///< ... the CRC state through the extension headers
};

/// Why the decoder refused a frame. Every reason is a counter (RejectCounters), never a log line.
enum class Reject : uint8_t {
  kOk = 0,
  kTruncatedEthernet,        ///< shorter than an Ethernet (+802.1Q) header
  kNotIp,                    ///< EtherType is neither IPv4 nor IPv6
  kTruncatedIp,              ///< shorter than the IP header
  kBadIpVersion,             ///< version nibble disagrees with the EtherType
  kBadIpHeaderLength,        ///< IPv4 IHL < 5, or options run past the frame
  kBadIpTotalLength,         ///< IP total/payload length larger than the frame or smaller than the header
  kBadIpChecksum,            ///< IPv4 header checksum wrong
  kIpFragment,               ///< MF set or a non-zero fragment offset
  kNotUdp,                   ///< IP protocol / next header is not UDP
  kTruncatedUdp,             ///< no room for the UDP header
  kBadUdpLength,             ///< UDP length disagrees with the IP length
  kNotRoceV2Port,            ///< UDP destination port is not 4791
  kTruncatedBth,             ///< no room for BTH + ICRC
  kBadTransportVersion,      ///< BTH TVer is not 0
  kUnknownOpcode,            ///< opcode not in the table
  kHeaderLengthMismatch,     ///< extension headers do not fit in the packet
  kPayloadLengthMismatch,    ///< payload on an opcode that carries none
  kPadLengthMismatch,        ///< payload + pad not a multiple of 4, pad larger than it, or pad on FIRST/MIDDLE
  kIcrcMismatch,             ///< ICRC does not match the packet
  kCount,
};

/// Short stable name of a reason ("truncated_ethernet", ...), for counters and tools.
const char* reject_name(Reject r);

/// One counter per reason; index with static_cast<size_t>(Reject).
struct RejectCounters {
  uint64_t count[static_cast<size_t>(Reject::kCount)] = {};
  void add(Reject r) { count[static_cast<size_t>(r)]++; }
  uint64_t operator[](Reject r) const { return count[static_cast<size_t>(r)]; }
  uint64_t total_rejected() const;
};

struct DecodeOptions {
  bool check_icrc = true;          ///< off when the caller checks it elsewhere (e.g. folded into a copy)
  bool check_ip_checksum = true;   ///< off when the port verified it in hardware
  /// Payloads of at least kDeferIcrcMinPayload bytes: the ICRC is checked through the headers
  /// only (icrc_pending, icrc_partial), the rest is the caller's (one read of the payload for
  /// the copy and the CRC). Implies check_icrc for every other packet.
  bool defer_payload_icrc = false;
  /// The receiver's flows, when given (wire/rx_flow_cache.h): the ICRC's masked prefix of an
  /// IPv4 frame without options comes from its flow's base, and a frame of a flow already
  /// decoded whole is checked on its changing fields only. The verdict and the fields are
  /// those of a decode without it.
  RxFlowCache* flows = nullptr;
};

/// Below this a payload's CRC is checked at decode: the fused copy saves little, and a deferred
/// check is one more thing for the caller to settle.
constexpr uint32_t kDeferIcrcMinPayload = 256;

/// A deferred ICRC completed: `crc_through_payload` is icrc_partial continued over the whole
/// payload (by crc32 or crc32_copy); the pad is added here and the sum compared with p.icrc.
bool icrc_finish(const RocePacket& p, uint32_t crc_through_payload);
/// The deferred ICRC checked without a copy (the payload read where it lies).
bool icrc_check_pending(const RocePacket& p);

/// Decodes an Ethernet frame. Never reads outside [frame, frame+len). On success `out` points
/// into `frame` for the payload. Counts the outcome in `counters` when given. Every field of
/// `out` is set but those of the extension headers the opcode does not carry and those of the
/// other IP version's header (ip4 of an IPv6 frame reads as zeros), so one packet can take
/// frame after frame: its reader takes only the headers the opcode has.
Reject decode_frame(const uint8_t* frame, size_t len, RocePacket* out,
                    const DecodeOptions& opt = {}, RejectCounters* counters = nullptr);

/// A frame in three pieces, the way a zero-copy sender chains it: the headers (Ethernet
/// through the extension headers), the payload where it lay in the sender's memory, and the
/// pad with the ICRC.
struct FramePieces {
  const uint8_t* head = nullptr;
  size_t head_len = 0;
  const uint8_t* payload = nullptr;
  size_t payload_len = 0;
  const uint8_t* trailer = nullptr;
  size_t trailer_len = 0;
};

/// decode_frame() over a frame in pieces: the same checks on the frame they make together, and
/// each piece must be exactly its part (kHeaderLengthMismatch, kPayloadLengthMismatch or
/// kPadLengthMismatch otherwise). Never reads outside the pieces.
Reject decode_frame(const FramePieces& frame, RocePacket* out, const DecodeOptions& opt = {},
                    RejectCounters* counters = nullptr);

/// The UDP length field of `p` as encode_headers() writes it (UDP header through the ICRC).
size_t udp_length(const RocePacket& p);
/// The BTH's second byte (SE, MigReq, pad count, TVer) as encode_headers() writes it.
uint8_t bth_flags(const RocePacket& p);

/// Length of the headers encode_headers() writes: Ethernet (+tag), IP, UDP, BTH, extension headers.
size_t header_length(const RocePacket& p);

/// Length of the whole frame encode_frame() writes (headers, payload, pad, ICRC).
size_t frame_length(const RocePacket& p);

/// Writes the headers of `p` (IP total length, UDP length and the IPv4 header checksum computed
/// from payload_len and bth.pad) into `out`, which must hold header_length(p) bytes.
/// Returns header_length(p). The ICRC is not written; see encode_frame or icrc.h.
size_t encode_headers(const RocePacket& p, uint8_t* out);

/// Writes the extension headers opcode_info(p.bth.opcode).ext names at `out`; returns their end.
uint8_t* encode_ext_headers(const RocePacket& p, uint8_t* out);

/// Writes the complete frame: headers, payload, zeroed pad bytes and the ICRC. Returns the
/// frame length, or 0 when `cap` is too small. `p.icrc` is not read.
size_t encode_frame(const RocePacket& p, uint8_t* out, size_t cap);

/// The pad count a payload of `len` bytes needs on the wire.
constexpr uint8_t pad_for(uint32_t len) { return uint8_t((4 - (len & 3)) & 3); }

/// The UDP length field (UDP header through the ICRC) of a packet with `ext_len` bytes of
/// extension headers and `payload_len` bytes of payload, its pad included.
constexpr size_t udp_length(size_t ext_len, uint32_t payload_len) {
  return kUdpHdrLen + kBthLen + ext_len + payload_len + pad_for(payload_len) + kIcrcLen;
}

/// RFC 1071 checksum of an IPv4 header (the checksum field is included as it stands).
uint16_t ipv4_header_checksum(const uint8_t* hdr, size_t len);

}  // namespace ndnic::wire
