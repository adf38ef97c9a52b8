// InfiniBand Communication Management MADs (IBTA vol. 1 ch. 12, class version 2) as rdma_cm sends
// them to QP1 over RoCEv2, and the rdma_cm private-data header they carry (the IP CM service,
// IBTA Annex A11, as Linux rdma_cm implements it).
//
// A CM MAD is 256 bytes: the 24-byte common MAD header (IBTA 13.4.3) and 232 bytes of CM message.
// The message layouts follow IBTA tables 106-113; every field is given there as Byte[Bit] and a
// width in bits, big-endian, bit 0 being the most significant bit of the byte, and fields may
// span byte boundaries (e.g. the 24-bit local QPN at REQ 32[0] and the 8-bit responder resources
// after it at 35[0]). All offsets in the comments below are relative to the CM message, i.e. add 24
// for the offset inside the MAD.
//
// The structs are host order. Encoding writes reserved bits and bytes as zero; decoding ignores
// them (IBTA: reserved fields are set to 0 by senders and ignored by receivers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <variant>

namespace ndnic::wire::cm {

// ---- MAD framing -------------------------------------------------------------------------

constexpr size_t kMadLen = 256;        ///< every MAD on QP0/QP1
constexpr size_t kMadHdrLen = 24;      ///< the common MAD header
constexpr size_t kCmMsgLen = kMadLen - kMadHdrLen;  ///< 232 bytes of CM message

constexpr uint8_t kMadBaseVersion = 1;     ///< BaseVersion of every IBTA 1.x MAD
constexpr uint8_t kMgmtClassCm = 0x07;     ///< MgmtClass: Communication Management
constexpr uint8_t kCmClassVersion = 2;     ///< ClassVersion of the CM class (IBA 1.2 and later)

constexpr uint8_t kMethodGet = 0x01;
constexpr uint8_t kMethodSet = 0x02;
constexpr uint8_t kMethodSend = 0x03;      ///< every CM protocol message is a Send
constexpr uint8_t kMethodGetResp = 0x81;

constexpr uint32_t kGsiQpn = 1;            ///< QP1, the General Services Interface
constexpr uint32_t kGsiQkey = 0x80010000;  ///< the well-known Q_Key of QP1

/// AttributeID of the CM class (IBTA table 104).
enum AttrId : uint16_t {
  kAttrClassPortInfo = 0x0001,
  kAttrReq = 0x0010,
  kAttrMra = 0x0011,
  kAttrRej = 0x0012,
  kAttrRep = 0x0013,
  kAttrRtu = 0x0014,
  kAttrDreq = 0x0015,
  kAttrDrep = 0x0016,
  kAttrSidrReq = 0x0017,
  kAttrSidrRep = 0x0018,
  kAttrLap = 0x0019,
  kAttrApr = 0x001A,
};

/// "REQ", "REP", ... for the attributes above; nullptr for any other value.
const char* attr_name(uint16_t attr_id);

// Private data bytes each message carries (what is left of the 232 bytes after its fields).
constexpr size_t kReqPrivateDataLen = 92;
constexpr size_t kMraPrivateDataLen = 222;
constexpr size_t kRejPrivateDataLen = 148;
constexpr size_t kRepPrivateDataLen = 196;
constexpr size_t kRtuPrivateDataLen = 224;
constexpr size_t kDreqPrivateDataLen = 220;
constexpr size_t kDrepPrivateDataLen = 224;
constexpr size_t kRejAriLen = 72;          ///< REJ Additional Rejection Information

/// Why a MAD or an rdma_cm header was refused.
enum class CmError : uint8_t {
  kOk = 0,
  kTruncated,             ///< fewer bytes than a MAD (256) / a header needs
  kOversized,             ///< more than 256 bytes offered as one MAD
  kBadBaseVersion,        ///< BaseVersion is not 1
  kWrongClass,            ///< MgmtClass is not CM (0x07)
  kBadClassVersion,       ///< ClassVersion is not 2
  kUnknownAttribute,      ///< AttributeID is not one the CM class defines
  kUnsupportedAttribute,  ///< a CM attribute this codec does not model (ClassPortInfo, SIDR, LAP, APR)
  kBadMethod,             ///< a CM protocol message whose Method is not Send
  kFieldOutOfRange,       ///< encode: a value does not fit its field's width
  kOutputTooSmall,        ///< encode: the output buffer is too small
  kBadCmaVersion,         ///< rdma_cm header: cma_version is not 0
  kBadCmaIpVersion,       ///< rdma_cm header: IP version nibble is neither 4 nor 6
  kCount,
};

/// Short stable name ("truncated", "wrong_class", ...).
const char* cm_error_name(CmError e);

/// The common MAD header (IBTA 13.4.3), 24 bytes. The 16 reserved bits at offset 18 are dropped.
struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kCmClassVersion;
  uint8_t method = kMethodSend;      ///< R bit (0x80) and method
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;                  ///< TransactionID
  uint16_t attr_id = 0;              ///< decode: as received; encode: ignored, the message type decides
  uint32_t attr_mod = 0;             ///< AttributeModifier
};

using Gid = std::array<uint8_t, 16>;

/// Values of the 2-bit "message REJected / MRAed" field (IBTA tables 107, 108).
enum MsgResponse : uint8_t { kMsgReq = 0, kMsgRep = 1, kMsgOther = 2 };

/// REJ reasons (IBTA table 109), the ones a RoCE connection meets.
enum RejReason : uint16_t {
  kRejNoQp = 1,
  kRejNoResources = 3,
  kRejTimeout = 4,
  kRejUnsupported = 5,
  kRejInvalidCommId = 6,
  kRejInvalidCommInstance = 7,
  kRejInvalidServiceId = 8,
  kRejInvalidTransportType = 9,
  kRejStaleConn = 10,
  kRejInvalidGid = 12,
  kRejInvalidMtu = 26,
  kRejInsufficientRespResources = 27,
  kRejConsumerDefined = 28,
  kRejInvalidRnrRetry = 29,
  kRejDuplicateLocalCommId = 30,
  kRejInvalidClassVersion = 31,
  kRejInvalidFlowLabel = 32,
};

/// One path of a REQ (primary: bytes 52..95, alternate: 96..139). On RoCE the LIDs are the
/// permissive LID 0xFFFF and the GIDs are the ports' (IPv4-mapped or IPv6) GIDs.
struct CmPath {
  uint16_t local_lid = 0;          ///< +0, 16 bits
  uint16_t remote_lid = 0;         ///< +2, 16 bits
  Gid local_gid{};                 ///< +4, 128 bits
  Gid remote_gid{};                ///< +20, 128 bits
  uint32_t flow_label = 0;         ///< +36[0], 20 bits (then 6 reserved bits)
  uint8_t packet_rate = 0;         ///< +39[2], 6 bits
  uint8_t traffic_class = 0;       ///< +40, 8 bits
  uint8_t hop_limit = 0;           ///< +41, 8 bits
  uint8_t sl = 0;                  ///< +42[0], 4 bits
  bool subnet_local = false;       ///< +42[4], 1 bit
  uint8_t local_ack_timeout = 0;   ///< +43[0], 5 bits (4.096 us * 2^n)
};

/// REQ (IBTA table 106), attribute 0x0010.
struct CmReq {
  uint32_t local_comm_id = 0;             ///< 0, 32 bits
  uint64_t service_id = 0;                ///< 8, 64 bits
  uint64_t local_ca_guid = 0;             ///< 16, 64 bits
  uint32_t local_qkey = 0;                ///< 28, 32 bits
  uint32_t local_qpn = 0;                 ///< 32[0], 24 bits
  uint8_t responder_resources = 0;        ///< 35, 8 bits
  uint32_t local_eecn = 0;                ///< 36[0], 24 bits
  uint8_t initiator_depth = 0;            ///< 39, 8 bits
  uint32_t remote_eecn = 0;               ///< 40[0], 24 bits
  uint8_t remote_cm_response_timeout = 0; ///< 43[0], 5 bits
  uint8_t transport_service_type = 0;     ///< 43[5], 2 bits: 0 RC, 1 UC, 3 see extended type
  bool end_to_end_flow_control = false;   ///< 43[7], 1 bit
  uint32_t starting_psn = 0;              ///< 44[0], 24 bits: the PSN the REQ's sender expects to
                                          ///< receive first = the passive side's first send PSN
  uint8_t local_cm_response_timeout = 0;  ///< 47[0], 5 bits
  uint8_t retry_count = 0;                ///< 47[5], 3 bits
  uint16_t pkey = 0;                      ///< 48, 16 bits
  uint8_t path_mtu = 0;                   ///< 50[0], 4 bits: 1=256 ... 5=4096
  bool rdc_exists = false;                ///< 50[4], 1 bit
  uint8_t rnr_retry_count = 0;            ///< 50[5], 3 bits
  uint8_t max_cm_retries = 0;             ///< 51[0], 4 bits
  bool srq = false;                       ///< 51[4], 1 bit
  uint8_t extended_transport_type = 0;    ///< 51[5], 3 bits (1 = XRC)
  CmPath primary;                         ///< 52..95
  CmPath alternate;                       ///< 96..139 (all zero when there is none)
  bool sap_supported = false;             ///< 139[5], 1 bit (next to the alternate ACK timeout)
  std::array<uint8_t, kReqPrivateDataLen> private_data{};  ///< 140..231
};

/// MRA (IBTA table 107), attribute 0x0011.
struct CmMra {
  uint32_t local_comm_id = 0;      ///< 0
  uint32_t remote_comm_id = 0;     ///< 4
  uint8_t message_mraed = 0;       ///< 8[0], 2 bits: MsgResponse
  uint8_t service_timeout = 0;     ///< 9[0], 5 bits
  std::array<uint8_t, kMraPrivateDataLen> private_data{};  ///< 10..231
};

/// REJ (IBTA table 108), attribute 0x0012.
struct CmRej {
  uint32_t local_comm_id = 0;      ///< 0
  uint32_t remote_comm_id = 0;     ///< 4
  uint8_t message_rejected = 0;    ///< 8[0], 2 bits: MsgResponse
  uint8_t reject_info_length = 0;  ///< 9[0], 7 bits: valid bytes of ari
  uint16_t reason = 0;             ///< 10, 16 bits: RejReason
  std::array<uint8_t, kRejAriLen> ari{};                   ///< 12..83
  std::array<uint8_t, kRejPrivateDataLen> private_data{};  ///< 84..231
};

/// REP (IBTA table 110), attribute 0x0013.
struct CmRep {
  uint32_t local_comm_id = 0;           ///< 0
  uint32_t remote_comm_id = 0;          ///< 4
  uint32_t local_qkey = 0;              ///< 8
  uint32_t local_qpn = 0;               ///< 12[0], 24 bits
  uint32_t local_eecn = 0;              ///< 16[0], 24 bits
  uint32_t starting_psn = 0;            ///< 20[0], 24 bits: the PSN the REP's sender expects to
                                        ///< receive first = the active side's first send PSN
  uint8_t responder_resources = 0;      ///< 24
  uint8_t initiator_depth = 0;          ///< 25
  uint8_t target_ack_delay = 0;         ///< 26[0], 5 bits
  uint8_t failover_accepted = 0;        ///< 26[5], 2 bits
  bool end_to_end_flow_control = false; ///< 26[7], 1 bit
  uint8_t rnr_retry_count = 0;          ///< 27[0], 3 bits
  bool srq = false;                     ///< 27[3], 1 bit
  uint64_t local_ca_guid = 0;           ///< 28, 64 bits
  std::array<uint8_t, kRepPrivateDataLen> private_data{};  ///< 36..231
};

/// RTU (IBTA table 111), attribute 0x0014.
struct CmRtu {
  uint32_t local_comm_id = 0;      ///< 0
  uint32_t remote_comm_id = 0;     ///< 4
  std::array<uint8_t, kRtuPrivateDataLen> private_data{};  ///< 8..231
};

/// DREQ (IBTA table 112), attribute 0x0015.
struct CmDreq {
  uint32_t local_comm_id = 0;      ///< 0
  uint32_t remote_comm_id = 0;     ///< 4
  uint32_t remote_qpn_eecn = 0;    ///< 8[0], 24 bits
  std::array<uint8_t, kDreqPrivateDataLen> private_data{};  ///< 12..231
};

/// DREP (IBTA table 113), attribute 0x0016.
struct CmDrep {
  uint32_t local_comm_id = 0;      ///< 0
  uint32_t remote_comm_id = 0;     ///< 4
  std::array<uint8_t, kDrepPrivateDataLen> private_data{};  ///< 8..231
};

using CmMessage = std::variant<CmReq, CmRep, CmRtu, CmRej, CmMra, CmDreq, CmDrep>;

/// One decoded CM MAD.
struct CmMad {
  MadHeader hdr;
  CmMessage msg;
};

/// The attribute ID of the message `msg` holds.
uint16_t attr_id_of(const CmMessage& msg);

/// Reads the common MAD header only (no class checks): needs kMadHdrLen bytes.
CmError decode_mad_header(const uint8_t* buf, size_t len, MadHeader* out);

/// Decodes one CM MAD of exactly kMadLen bytes (a QP1 UD payload). Checks, in order: length,
/// base version, class, class version, attribute (known / modelled), method (Send).
CmError decode_cm_mad(const uint8_t* buf, size_t len, CmMad* out);

/// Writes `mad` as kMadLen bytes into `out`. The AttributeID comes from the message type;
/// the header must be a CM Send (the same checks the decoder makes), and every value must fit
/// its field (kFieldOutOfRange otherwise, nothing truncated silently). Reserved bits are zero.
CmError encode_cm_mad(const CmMad& mad, uint8_t* out, size_t cap);

// ---- rdma_cm over IB CM: service IDs and the private-data header ------------------------------

/// rdma_cm port spaces (enum rdma_ucm_port_space); the service ID of an IP-based connection is
/// (port space << 16) | port, e.g. RDMA_PS_TCP port 7174 -> 0x0000000001061C06.
constexpr uint16_t kRdmaPsTcp = 0x0106;
constexpr uint16_t kRdmaPsUdp = 0x0111;
constexpr uint16_t kRdmaPsIb = 0x013F;

constexpr uint64_t rdma_service_id(uint16_t port_space, uint16_t port) {
  return uint64_t(port_space) << 16 | port;
}
constexpr uint64_t rdma_tcp_service_id(uint16_t port) { return rdma_service_id(kRdmaPsTcp, port); }

/// Splits an rdma_cm service ID: true when its upper 48 bits are one of the port spaces above.
bool parse_rdma_service_id(uint64_t service_id, uint16_t* port_space, uint16_t* port);

constexpr uint8_t kCmaVersion = 0;       ///< CMA_VERSION
constexpr size_t kCmaHdrLen = 36;        ///< version, IP version, port, 2 x 16-byte address

/// The header rdma_cm puts at the start of a REQ's private data (struct cma_hdr):
///   0: cma_version (0)   1: IP version in bits 7:4 (4 or 6; bits 3:0 reserved)
///   2: port (16 bits, the active side's source port)
///   4: source address (16 bytes)   20: destination address (16 bytes)
/// An IPv4 address sits in the last 4 bytes of its 16 (the first 12 are padding, zero).
/// The destination port is not here: it is the port of the service ID.
struct CmaHeader {
  uint8_t version = kCmaVersion;
  uint8_t ip_version = 4;          ///< 4 or 6
  uint16_t port = 0;               ///< source port
  Gid src_addr{};                  ///< raw 16 bytes
  Gid dst_addr{};                  ///< raw 16 bytes

  /// IPv4 addresses, host order (the last 4 bytes of each address).
  uint32_t src_ipv4() const;
  uint32_t dst_ipv4() const;
  static CmaHeader ipv4(uint32_t src, uint32_t dst, uint16_t src_port);
  static CmaHeader ipv6(const Gid& src, const Gid& dst, uint16_t src_port);
};

/// Reads a CmaHeader from the start of (REQ) private data.
CmError decode_cma_header(const uint8_t* buf, size_t len, CmaHeader* out);

/// Writes kCmaHdrLen bytes.
CmError encode_cma_header(const CmaHeader& h, uint8_t* out, size_t cap);

}  // namespace ndnic::wire::cm
