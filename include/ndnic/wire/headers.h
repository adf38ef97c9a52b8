// RoCEv2 on-the-wire header layouts (IBTA vol. 1 ch. 9, Annex A17) and their field encodings.
// Each struct is the exact byte layout on the wire; multi-byte fields are network order and
// are read and written only through load/store helpers, so no struct is ever cast onto a
// misaligned buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ndnic::wire {

constexpr uint16_t kRoceV2Port = 4791;        ///< IANA UDP port of RoCEv2
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint16_t kEtherTypeVlan = 0x8100;   ///< 802.1Q tag
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kDefaultPkey = 0xFFFF;     ///< RoCE uses the default full-member P_Key
constexpr uint32_t kPsnMask = 0xFFFFFF;       ///< PSNs and QPNs are 24-bit
constexpr size_t kIcrcLen = 4;

constexpr size_t kEthHdrLen = 14;
constexpr size_t kVlanTagLen = 4;
constexpr size_t kIpv4HdrLen = 20;   ///< without options
constexpr size_t kIpv6HdrLen = 40;
constexpr size_t kUdpHdrLen = 8;
constexpr size_t kBthLen = 12;
constexpr size_t kRethLen = 16;
constexpr size_t kAethLen = 4;
constexpr size_t kIethLen = 4;
constexpr size_t kImmDtLen = 4;
constexpr size_t kAtomicEthLen = 28;
constexpr size_t kAtomicAckEthLen = 8;
constexpr size_t kDethLen = 8;

// ---- byte-order helpers: unaligned, network order --------------------------------------
inline uint16_t load_be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t load_be24(const uint8_t* p) { return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]; }
inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void store_be16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
inline void store_be24(uint8_t* p, uint32_t v) { p[0] = uint8_t(v >> 16); p[1] = uint8_t(v >> 8); p[2] = uint8_t(v); }
inline void store_be32(uint8_t* p, uint32_t v) { v = __builtin_bswap32(v); std::memcpy(p, &v, 4); }
inline void store_be64(uint8_t* p, uint64_t v) { v = __builtin_bswap64(v); std::memcpy(p, &v, 8); }

// ---- wire layouts ----------------------------------------------------------------------

/// Base Transport Header, 12 bytes.
struct BthWire {
  uint8_t opcode;          ///< transport service (3 bits) + operation (5 bits)
  uint8_t se_m_pad_tver;   ///< SE(1) MigReq(1) PadCnt(2) TVer(4)
  uint8_t pkey[2];         ///< partition key
  uint8_t resv8;           ///< reserved; set to 0xff in the ICRC's masked copy
  uint8_t dest_qp[3];      ///< destination QP number
  uint8_t ack_psn[4];      ///< AckReq(1) resv(7) PSN(24)
};
static_assert(sizeof(BthWire) == kBthLen);

/// RDMA Extended Transport Header, 16 bytes (WRITE FIRST/ONLY, READ REQUEST).
struct RethWire {
  uint8_t va[8];           ///< remote virtual address
  uint8_t rkey[4];         ///< remote key
  uint8_t dma_len[4];      ///< total length of the RDMA operation
};
static_assert(sizeof(RethWire) == kRethLen);

/// ACK Extended Transport Header, 4 bytes.
struct AethWire {
  uint8_t syndrome;        ///< ACK / RNR NAK / NAK and its code
  uint8_t msn[3];          ///< message sequence number
};
static_assert(sizeof(AethWire) == kAethLen);

/// Atomic Extended Transport Header, 28 bytes.
struct AtomicEthWire {
  uint8_t va[8];           ///< remote virtual address (8-byte aligned)
  uint8_t rkey[4];         ///< remote key
  uint8_t swap_add[8];     ///< swap value (CMP_SWAP) or addend (FETCH_ADD)
  uint8_t compare[8];      ///< compare value (CMP_SWAP only)
};
static_assert(sizeof(AtomicEthWire) == kAtomicEthLen);

/// Datagram Extended Transport Header, 8 bytes (UD).
struct DethWire {
  uint8_t qkey[4];         ///< queue key
  uint8_t resv8;           ///< reserved
  uint8_t src_qp[3];       ///< source QP number
};
static_assert(sizeof(DethWire) == kDethLen);

// ---- decoded (host order) header values -------------------------------------------------

using MacAddr = uint8_t[6];

struct EthFields {
  uint8_t dst[6];          ///< destination MAC
  uint8_t src[6];          ///< source MAC
  bool has_vlan = false;   ///< an 802.1Q tag is present
  uint16_t vlan_tci = 0;   ///< PCP(3) DEI(1) VID(12) when has_vlan
  uint16_t ethertype = 0;  ///< the inner EtherType (after the tag)
};

struct Ipv4Fields {
  uint32_t src = 0;        ///< source address, host order
  uint32_t dst = 0;        ///< destination address, host order
  uint8_t tos = 0;         ///< DSCP(6) ECN(2)
  uint8_t ttl = 64;        ///< time to live
  uint16_t id = 0;         ///< identification
  uint16_t frag = 0x4000;  ///< flags(3) fragment offset(13); DF by default, as rxe sends
  uint16_t checksum = 0;   ///< header checksum as received (recomputed on encode)
  const uint8_t* options = nullptr;  ///< IP options as received (decode only)
  uint8_t options_len = 0; ///< bytes of options, a multiple of 4, at most 40
};

struct Ipv6Fields {
  uint8_t src[16] = {};    ///< source address
  uint8_t dst[16] = {};    ///< destination address
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0; ///< 20 bits
  uint8_t hop_limit = 64;
};

struct UdpFields {
  uint16_t src_port = 0;   ///< RoCEv2 uses it for ECMP entropy
  uint16_t dst_port = kRoceV2Port;
  uint16_t checksum = 0;   ///< 0 (none) is what RoCEv2 senders use over IPv4
};

struct BthFields {
  uint8_t opcode = 0;
  bool se = false;         ///< solicited event
  bool mig = false;        ///< migration state
  uint8_t pad = 0;         ///< pad bytes (0..3) after the payload
  uint8_t tver = 0;        ///< transport header version, 0
  uint16_t pkey = kDefaultPkey;
  uint32_t dest_qp = 0;    ///< 24 bits
  bool ack_req = false;
  uint32_t psn = 0;        ///< 24 bits
};

struct RethFields { uint64_t va = 0; uint32_t rkey = 0; uint32_t dma_len = 0; };
struct AethFields { uint8_t syndrome = 0; uint32_t msn = 0; };
struct AtomicEthFields { uint64_t va = 0; uint32_t rkey = 0; uint64_t swap_add = 0; uint64_t compare = 0; };
struct AtomicAckEthFields { uint64_t orig = 0; };
struct DethFields { uint32_t qkey = 0; uint32_t src_qp = 0; };

}  // namespace ndnic::wire
