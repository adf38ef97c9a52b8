// CM MAD codec: each field is a (byte, bit, width) triple taken from the IBTA vol. 1 ch. 12
// message tables, read and written big-endian by the two bit helpers below.
#include "wire/cm_mad.h"

#include <cstring>
#include <type_traits>

#include "ndnic/wire/headers.h"

namespace ndnic::wire::cm {
namespace {

/// A field of a CM message: Byte[Bit] from the IBTA table (relative to the message, i.e. after
/// the 24-byte MAD header), bit 0 = most significant bit of the byte, and its width in bits.
struct Field {
  uint16_t byte;
  uint8_t bit;
  uint8_t width;  ///< 1..64; fields wider than 32 bits start on a byte (bit 0)
};

uint64_t get_field(const uint8_t* msg, Field f) {
  const unsigned nbytes = (f.bit + f.width + 7) / 8;
  uint64_t v = 0;
  for (unsigned i = 0; i < nbytes; i++) v = v << 8 | msg[f.byte + i];
  const unsigned shift = nbytes * 8 - f.bit - f.width;
  const uint64_t mask = f.width == 64 ? ~uint64_t(0) : (uint64_t(1) << f.width) - 1;
  return (v >> shift) & mask;
}

/// Writes `value` into the field, keeping the bits around it. False when it does not fit.
bool put_field(uint8_t* msg, Field f, uint64_t value) {
  if (f.width < 64 && (value >> f.width) != 0) return false;
  if (f.width == 64) {
    store_be64(msg + f.byte, value);
    return true;
  }
  const unsigned nbytes = (f.bit + f.width + 7) / 8;
  uint64_t v = 0;
  for (unsigned i = 0; i < nbytes; i++) v = v << 8 | msg[f.byte + i];
  const unsigned shift = nbytes * 8 - f.bit - f.width;
  const uint64_t mask = ((uint64_t(1) << f.width) - 1) << shift;
  v = (v & ~mask) | (value << shift);
  for (unsigned i = nbytes; i-- > 0;) {
    msg[f.byte + i] = uint8_t(v);
    v >>= 8;
  }
  return true;
}

/// Collects put_field failures so an encoder reads as a list of fields.
/// Fills a zeroed message from a struct, field by field; `ok` turns false when a value does not
/// fit its field.
struct Writer {
  uint8_t* msg;
  bool ok = true;
  template <typename T>
  void operator()(Field f, const T& v) { ok &= put_field(msg, f, uint64_t(v)); }
  template <size_t N>
  void bytes(uint16_t at, const std::array<uint8_t, N>& a) { std::memcpy(msg + at, a.data(), N); }
};

/// Fills a struct from a message, field by field (a one-bit flag is true when set).
struct Reader {
  const uint8_t* msg;
  template <typename T>
  void operator()(Field f, T& v) { v = static_cast<T>(get_field(msg, f)); }
  template <size_t N>
  void bytes(uint16_t at, std::array<uint8_t, N>& a) { std::memcpy(a.data(), msg + at, N); }
};

// ---- IBTA table 106: REQ ----------------------------------------------------------------------
constexpr Field kReqLocalCommId{0, 0, 32};
constexpr Field kReqServiceId{8, 0, 64};
constexpr Field kReqLocalCaGuid{16, 0, 64};
constexpr Field kReqLocalQkey{28, 0, 32};
constexpr Field kReqLocalQpn{32, 0, 24};
constexpr Field kReqResponderResources{35, 0, 8};
constexpr Field kReqLocalEecn{36, 0, 24};
constexpr Field kReqInitiatorDepth{39, 0, 8};
constexpr Field kReqRemoteEecn{40, 0, 24};
constexpr Field kReqRemoteCmResponseTimeout{43, 0, 5};
constexpr Field kReqTransportServiceType{43, 5, 2};
constexpr Field kReqEndToEndFlowControl{43, 7, 1};
constexpr Field kReqStartingPsn{44, 0, 24};
constexpr Field kReqLocalCmResponseTimeout{47, 0, 5};
constexpr Field kReqRetryCount{47, 5, 3};
constexpr Field kReqPkey{48, 0, 16};
constexpr Field kReqPathMtu{50, 0, 4};
constexpr Field kReqRdcExists{50, 4, 1};
constexpr Field kReqRnrRetryCount{50, 5, 3};
constexpr Field kReqMaxCmRetries{51, 0, 4};
constexpr Field kReqSrq{51, 4, 1};
constexpr Field kReqExtendedTransportType{51, 5, 3};
constexpr uint16_t kReqPrimaryPath = 52;
constexpr uint16_t kReqAlternatePath = 96;
constexpr Field kReqSapSupported{139, 5, 1};
constexpr uint16_t kReqPrivateData = 140;

// A path's fields, relative to its start (primary 52, alternate 96).
constexpr Field kPathLocalLid{0, 0, 16};
constexpr Field kPathRemoteLid{2, 0, 16};
constexpr uint16_t kPathLocalGid = 4;
constexpr uint16_t kPathRemoteGid = 20;
constexpr Field kPathFlowLabel{36, 0, 20};
constexpr Field kPathPacketRate{39, 2, 6};
constexpr Field kPathTrafficClass{40, 0, 8};
constexpr Field kPathHopLimit{41, 0, 8};
constexpr Field kPathSl{42, 0, 4};
constexpr Field kPathSubnetLocal{42, 4, 1};
constexpr Field kPathLocalAckTimeout{43, 0, 5};

constexpr Field at(uint16_t base, Field f) { return Field{uint16_t(base + f.byte), f.bit, f.width}; }

// ---- table 107: MRA ---------------------------------------------------------------------------
constexpr Field kLocalCommId{0, 0, 32};   // the first two fields of every message but REQ
constexpr Field kRemoteCommId{4, 0, 32};
constexpr Field kMraMessageMraed{8, 0, 2};
constexpr Field kMraServiceTimeout{9, 0, 5};
constexpr uint16_t kMraPrivateData = 10;

// ---- table 108: REJ ---------------------------------------------------------------------------
constexpr Field kRejMessageRejected{8, 0, 2};
constexpr Field kRejRejectInfoLength{9, 0, 7};
constexpr Field kRejReason{10, 0, 16};
constexpr uint16_t kRejAri = 12;
constexpr uint16_t kRejPrivateData = 84;

// ---- table 110: REP ---------------------------------------------------------------------------
constexpr Field kRepLocalQkey{8, 0, 32};
constexpr Field kRepLocalQpn{12, 0, 24};
constexpr Field kRepLocalEecn{16, 0, 24};
constexpr Field kRepStartingPsn{20, 0, 24};
constexpr Field kRepResponderResources{24, 0, 8};
constexpr Field kRepInitiatorDepth{25, 0, 8};
constexpr Field kRepTargetAckDelay{26, 0, 5};
constexpr Field kRepFailoverAccepted{26, 5, 2};
constexpr Field kRepEndToEndFlowControl{26, 7, 1};
constexpr Field kRepRnrRetryCount{27, 0, 3};
constexpr Field kRepSrq{27, 3, 1};
constexpr Field kRepLocalCaGuid{28, 0, 64};
constexpr uint16_t kRepPrivateData = 36;

// ---- tables 111-113: RTU, DREQ, DREP ----------------------------------------------------------
constexpr uint16_t kRtuPrivateData = 8;
constexpr Field kDreqRemoteQpnEecn{8, 0, 24};
constexpr uint16_t kDreqPrivateData = 12;
constexpr uint16_t kDrepPrivateData = 8;

static_assert(kReqPrivateData + kReqPrivateDataLen == kCmMsgLen);
static_assert(kMraPrivateData + kMraPrivateDataLen == kCmMsgLen);
static_assert(kRejAri + kRejAriLen == kRejPrivateData);
static_assert(kRejPrivateData + kRejPrivateDataLen == kCmMsgLen);
static_assert(kRepPrivateData + kRepPrivateDataLen == kCmMsgLen);
static_assert(kRtuPrivateData + kRtuPrivateDataLen == kCmMsgLen);
static_assert(kDreqPrivateData + kDreqPrivateDataLen == kCmMsgLen);
static_assert(kDrepPrivateData + kDrepPrivateDataLen == kCmMsgLen);
static_assert(kReqAlternatePath - kReqPrimaryPath == 44 && kReqPrivateData - kReqAlternatePath == 44);

// ---- one field list per message, read by decode and written by encode -----------------------
//
// fields(msg, v) hands each field of a message and the struct member it maps to to the visitor
// `v` (Reader or Writer), in the message's order: a field is named once for both directions.

template <typename P, typename V>
void path_fields(P& p, uint16_t base, V& v) {
  v(at(base, kPathLocalLid), p.local_lid);
  v(at(base, kPathRemoteLid), p.remote_lid);
  v.bytes(uint16_t(base + kPathLocalGid), p.local_gid);
  v.bytes(uint16_t(base + kPathRemoteGid), p.remote_gid);
  v(at(base, kPathFlowLabel), p.flow_label);
  v(at(base, kPathPacketRate), p.packet_rate);
  v(at(base, kPathTrafficClass), p.traffic_class);
  v(at(base, kPathHopLimit), p.hop_limit);
  v(at(base, kPathSl), p.sl);
  v(at(base, kPathSubnetLocal), p.subnet_local);
  v(at(base, kPathLocalAckTimeout), p.local_ack_timeout);
}

template <typename M, typename T>
constexpr bool kIs = std::is_same_v<std::remove_const_t<M>, T>;

template <typename M, typename V>
void fields(M& r, V& v) {
  if constexpr (kIs<M, CmReq>) {
    v(kReqLocalCommId, r.local_comm_id);
    v(kReqServiceId, r.service_id);
    v(kReqLocalCaGuid, r.local_ca_guid);
    v(kReqLocalQkey, r.local_qkey);
    v(kReqLocalQpn, r.local_qpn);
    v(kReqResponderResources, r.responder_resources);
    v(kReqLocalEecn, r.local_eecn);
    v(kReqInitiatorDepth, r.initiator_depth);
    v(kReqRemoteEecn, r.remote_eecn);
    v(kReqRemoteCmResponseTimeout, r.remote_cm_response_timeout);
    v(kReqTransportServiceType, r.transport_service_type);
    v(kReqEndToEndFlowControl, r.end_to_end_flow_control);
    v(kReqStartingPsn, r.starting_psn);
    v(kReqLocalCmResponseTimeout, r.local_cm_response_timeout);
    v(kReqRetryCount, r.retry_count);
    v(kReqPkey, r.pkey);
    v(kReqPathMtu, r.path_mtu);
    v(kReqRdcExists, r.rdc_exists);
    v(kReqRnrRetryCount, r.rnr_retry_count);
    v(kReqMaxCmRetries, r.max_cm_retries);
    v(kReqSrq, r.srq);
    v(kReqExtendedTransportType, r.extended_transport_type);
    path_fields(r.primary, kReqPrimaryPath, v);
    path_fields(r.alternate, kReqAlternatePath, v);
    v(kReqSapSupported, r.sap_supported);
    v.bytes(kReqPrivateData, r.private_data);
  } else {
    // Every other message starts with both communication IDs.
    v(kLocalCommId, r.local_comm_id);
    v(kRemoteCommId, r.remote_comm_id);
    if constexpr (kIs<M, CmMra>) {
      v(kMraMessageMraed, r.message_mraed);
      v(kMraServiceTimeout, r.service_timeout);
      v.bytes(kMraPrivateData, r.private_data);
    } else if constexpr (kIs<M, CmRej>) {
      v(kRejMessageRejected, r.message_rejected);
      v(kRejRejectInfoLength, r.reject_info_length);
      v(kRejReason, r.reason);
      v.bytes(kRejAri, r.ari);
      v.bytes(kRejPrivateData, r.private_data);
    } else if constexpr (kIs<M, CmRep>) {
      v(kRepLocalQkey, r.local_qkey);
      v(kRepLocalQpn, r.local_qpn);
      v(kRepLocalEecn, r.local_eecn);
      v(kRepStartingPsn, r.starting_psn);
      v(kRepResponderResources, r.responder_resources);
      v(kRepInitiatorDepth, r.initiator_depth);
      v(kRepTargetAckDelay, r.target_ack_delay);
      v(kRepFailoverAccepted, r.failover_accepted);
      v(kRepEndToEndFlowControl, r.end_to_end_flow_control);
      v(kRepRnrRetryCount, r.rnr_retry_count);
      v(kRepSrq, r.srq);
      v(kRepLocalCaGuid, r.local_ca_guid);
      v.bytes(kRepPrivateData, r.private_data);
    } else if constexpr (kIs<M, CmRtu>) {
      v.bytes(kRtuPrivateData, r.private_data);
    } else if constexpr (kIs<M, CmDreq>) {
      v(kDreqRemoteQpnEecn, r.remote_qpn_eecn);
      v.bytes(kDreqPrivateData, r.private_data);
    } else {
      static_assert(kIs<M, CmDrep>, "a CM message without its field list");
      v.bytes(kDrepPrivateData, r.private_data);
    }
  }
}

template <typename M>
void decode(const uint8_t* m, M* r) {
  Reader rd{m};
  fields(*r, rd);
}

template <typename M>
void encode(Writer& w, const M& r) {
  fields(r, w);
}

template <typename T> struct AttrOf;
template <> struct AttrOf<CmReq> { static constexpr uint16_t value = kAttrReq; };
template <> struct AttrOf<CmRep> { static constexpr uint16_t value = kAttrRep; };
template <> struct AttrOf<CmRtu> { static constexpr uint16_t value = kAttrRtu; };
template <> struct AttrOf<CmRej> { static constexpr uint16_t value = kAttrRej; };
template <> struct AttrOf<CmMra> { static constexpr uint16_t value = kAttrMra; };
template <> struct AttrOf<CmDreq> { static constexpr uint16_t value = kAttrDreq; };
template <> struct AttrOf<CmDrep> { static constexpr uint16_t value = kAttrDrep; };

/// The class checks decode and encode share; len checks are the caller's.
CmError check_header(const MadHeader& h) {
  if (h.base_version != kMadBaseVersion) return CmError::kBadBaseVersion;
  if (h.mgmt_class != kMgmtClassCm) return CmError::kWrongClass;
  if (h.class_version != kCmClassVersion) return CmError::kBadClassVersion;
  return CmError::kOk;
}

template <typename T>
void decode_as(const uint8_t* m, CmMessage* msg) {
  T v;
  decode(m, &v);
  *msg = std::move(v);
}

}  // namespace

const char* attr_name(uint16_t attr_id) {
  switch (attr_id) {
    case kAttrClassPortInfo: return "ClassPortInfo";
    case kAttrReq: return "REQ";
    case kAttrMra: return "MRA";
    case kAttrRej: return "REJ";
    case kAttrRep: return "REP";
    case kAttrRtu: return "RTU";
    case kAttrDreq: return "DREQ";
    case kAttrDrep: return "DREP";
    case kAttrSidrReq: return "SIDR_REQ";
    case kAttrSidrRep: return "SIDR_REP";
    case kAttrLap: return "LAP";
    case kAttrApr: return "APR";
    default: return nullptr;
  }
}

const char* cm_error_name(CmError e) {
  switch (e) {
    case CmError::kOk: return "ok";
    case CmError::kTruncated: return "truncated";
    case CmError::kOversized: return "oversized";
    case CmError::kBadBaseVersion: return "bad_base_version";
    case CmError::kWrongClass: return "wrong_class";
    case CmError::kBadClassVersion: return "bad_class_version";
    case CmError::kUnknownAttribute: return "unknown_attribute";
    case CmError::kUnsupportedAttribute: return "unsupported_attribute";
    case CmError::kBadMethod: return "bad_method";
    case CmError::kFieldOutOfRange: return "field_out_of_range";
    case CmError::kOutputTooSmall: return "output_too_small";
    case CmError::kBadCmaVersion: return "bad_cma_version";
    case CmError::kBadCmaIpVersion: return "bad_cma_ip_version";
    case CmError::kCount: break;
  }
  return "unknown";
}

uint16_t attr_id_of(const CmMessage& msg) {
  return std::visit([](const auto& m) { return AttrOf<std::decay_t<decltype(m)>>::value; }, msg);
}

CmError decode_mad_header(const uint8_t* buf, size_t len, MadHeader* out) {
  if (buf == nullptr || len < kMadHdrLen) return CmError::kTruncated;
  out->base_version = buf[0];
  out->mgmt_class = buf[1];
  out->class_version = buf[2];
  out->method = buf[3];
  out->status = load_be16(buf + 4);
  out->class_specific = load_be16(buf + 6);
  out->tid = load_be64(buf + 8);
  out->attr_id = load_be16(buf + 16);
  // buf[18..19]: reserved
  out->attr_mod = load_be32(buf + 20);
  return CmError::kOk;
}

CmError decode_cm_mad(const uint8_t* buf, size_t len, CmMad* out) {
  if (buf == nullptr || len < kMadLen) return CmError::kTruncated;
  if (len > kMadLen) return CmError::kOversized;
  MadHeader h;
  decode_mad_header(buf, len, &h);
  if (CmError e = check_header(h); e != CmError::kOk) return e;
  const uint8_t* m = buf + kMadHdrLen;
  CmMessage msg;
  switch (h.attr_id) {
    case kAttrReq: decode_as<CmReq>(m, &msg); break;
    case kAttrMra: decode_as<CmMra>(m, &msg); break;
    case kAttrRej: decode_as<CmRej>(m, &msg); break;
    case kAttrRep: decode_as<CmRep>(m, &msg); break;
    case kAttrRtu: decode_as<CmRtu>(m, &msg); break;
    case kAttrDreq: decode_as<CmDreq>(m, &msg); break;
    case kAttrDrep: decode_as<CmDrep>(m, &msg); break;
    default:
      return attr_name(h.attr_id) != nullptr ? CmError::kUnsupportedAttribute
                                             : CmError::kUnknownAttribute;
  }
  if (h.method != kMethodSend) return CmError::kBadMethod;
  out->hdr = h;
  out->msg = std::move(msg);
  return CmError::kOk;
}

CmError encode_cm_mad(const CmMad& mad, uint8_t* out, size_t cap) {
  if (out == nullptr || cap < kMadLen) return CmError::kOutputTooSmall;
  const MadHeader& h = mad.hdr;
  if (CmError e = check_header(h); e != CmError::kOk) return e;
  if (h.method != kMethodSend) return CmError::kBadMethod;
  uint8_t buf[kMadLen] = {};
  buf[0] = h.base_version;
  buf[1] = h.mgmt_class;
  buf[2] = h.class_version;
  buf[3] = h.method;
  store_be16(buf + 4, h.status);
  store_be16(buf + 6, h.class_specific);
  store_be64(buf + 8, h.tid);
  store_be16(buf + 16, attr_id_of(mad.msg));
  store_be32(buf + 20, h.attr_mod);
  Writer w{buf + kMadHdrLen};
  std::visit([&w](const auto& m) { encode(w, m); }, mad.msg);
  if (!w.ok) return CmError::kFieldOutOfRange;
  std::memcpy(out, buf, kMadLen);
  return CmError::kOk;
}

// ---- rdma_cm ----------------------------------------------------------------------------------

bool parse_rdma_service_id(uint64_t service_id, uint16_t* port_space, uint16_t* port) {
  const uint64_t ps = service_id >> 16;
  if (ps != kRdmaPsTcp && ps != kRdmaPsUdp && ps != kRdmaPsIb) return false;
  if (port_space) *port_space = uint16_t(ps);
  if (port) *port = uint16_t(service_id);
  return true;
}

uint32_t CmaHeader::src_ipv4() const { return load_be32(src_addr.data() + 12); }
uint32_t CmaHeader::dst_ipv4() const { return load_be32(dst_addr.data() + 12); }

CmaHeader CmaHeader::ipv4(uint32_t src, uint32_t dst, uint16_t src_port) {
  CmaHeader h;
  h.ip_version = 4;
  h.port = src_port;
  store_be32(h.src_addr.data() + 12, src);
  store_be32(h.dst_addr.data() + 12, dst);
  return h;
}

CmaHeader CmaHeader::ipv6(const Gid& src, const Gid& dst, uint16_t src_port) {
  CmaHeader h;
  h.ip_version = 6;
  h.port = src_port;
  h.src_addr = src;
  h.dst_addr = dst;
  return h;
}

CmError decode_cma_header(const uint8_t* buf, size_t len, CmaHeader* out) {
  if (buf == nullptr || len < kCmaHdrLen) return CmError::kTruncated;
  if (buf[0] != kCmaVersion) return CmError::kBadCmaVersion;
  const uint8_t ipv = buf[1] >> 4;  // bits 3:0 reserved
  if (ipv != 4 && ipv != 6) return CmError::kBadCmaIpVersion;
  out->version = buf[0];
  out->ip_version = ipv;
  out->port = load_be16(buf + 2);
  std::memcpy(out->src_addr.data(), buf + 4, 16);
  std::memcpy(out->dst_addr.data(), buf + 20, 16);
  return CmError::kOk;
}

CmError encode_cma_header(const CmaHeader& h, uint8_t* out, size_t cap) {
  if (out == nullptr || cap < kCmaHdrLen) return CmError::kOutputTooSmall;
  if (h.version != kCmaVersion) return CmError::kBadCmaVersion;
  if (h.ip_version != 4 && h.ip_version != 6) return CmError::kBadCmaIpVersion;
  out[0] = h.version;
  out[1] = uint8_t(h.ip_version << 4);
  store_be16(out + 2, h.port);
  std::memcpy(out + 4, h.src_addr.data(), 16);
  std::memcpy(out + 20, h.dst_addr.data(), 16);
  return CmError::kOk;
}

}  // namespace ndnic::wire::cm
