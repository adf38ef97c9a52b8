// CM MAD codec: round trips of every message with values that fill their fields, the exact bit
// positions of the REQ fields that span or share bytes, no two fields overlapping, and one named
// error per malformation.
#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <vector>

#include "wire/cm_mad.h"
#include "ndnic/wire/headers.h"

namespace ndnic::wire::cm {
namespace {

template <size_t N>
std::array<uint8_t, N> pattern(uint8_t seed) {
  std::array<uint8_t, N> a{};
  for (size_t i = 0; i < N; i++) a[i] = uint8_t(seed + i * 7);
  return a;
}

Gid gid(uint8_t seed) { return pattern<16>(seed); }

CmPath sample_path(uint8_t seed) {
  CmPath p;
  p.local_lid = 0xFFFF;
  p.remote_lid = uint16_t(0x1234 + seed);
  p.local_gid = gid(seed);
  p.remote_gid = gid(uint8_t(seed + 100));
  p.flow_label = 0xABCDE;
  p.packet_rate = 0x2B;
  p.traffic_class = 0xC4;
  p.hop_limit = 0x3F;
  p.sl = 0xA;
  p.subnet_local = true;
  p.local_ack_timeout = 0x13;
  return p;
}

CmReq sample_req() {
  CmReq r;
  r.local_comm_id = 0xB26A4ED2;
  r.service_id = rdma_tcp_service_id(7174);
  r.local_ca_guid = 0x505400FFFE120003;
  r.local_qkey = 0x80010000;
  r.local_qpn = 0xABCDEF;
  r.responder_resources = 0x81;
  r.local_eecn = 0x123456;
  r.initiator_depth = 0x7E;
  r.remote_eecn = 0xFEDCBA;
  r.remote_cm_response_timeout = 0x15;
  r.transport_service_type = 2;
  r.end_to_end_flow_control = true;
  r.starting_psn = 0x61EC24;
  r.local_cm_response_timeout = 0x1B;
  r.retry_count = 5;
  r.pkey = 0xFFFF;
  r.path_mtu = 5;
  r.rdc_exists = true;
  r.rnr_retry_count = 6;
  r.max_cm_retries = 0xD;
  r.srq = true;
  r.extended_transport_type = 3;
  r.primary = sample_path(1);
  r.alternate = sample_path(50);
  r.alternate.flow_label = 0x00001;
  r.sap_supported = true;
  r.private_data = pattern<kReqPrivateDataLen>(3);
  return r;
}

CmRep sample_rep() {
  CmRep r;
  r.local_comm_id = 0xF2D96583;
  r.remote_comm_id = 0xB26A4ED2;
  r.local_qkey = 0x11223344;
  r.local_qpn = 0x800011;
  r.local_eecn = 0x00F00F;
  r.starting_psn = 0xFFFFFE;
  r.responder_resources = 16;
  r.initiator_depth = 255;
  r.target_ack_delay = 0x1F;
  r.failover_accepted = 2;
  r.end_to_end_flow_control = true;
  r.rnr_retry_count = 7;
  r.srq = true;
  r.local_ca_guid = 0x0123456789ABCDEF;
  r.private_data = pattern<kRepPrivateDataLen>(9);
  return r;
}

CmRtu sample_rtu() {
  CmRtu r;
  r.local_comm_id = 1;
  r.remote_comm_id = 0xFFFFFFFF;
  r.private_data = pattern<kRtuPrivateDataLen>(17);
  return r;
}

CmRej sample_rej() {
  CmRej r;
  r.local_comm_id = 0xCAFEF00D;
  r.remote_comm_id = 0;
  r.message_rejected = kMsgOther;
  r.reject_info_length = 0x48;
  r.reason = kRejConsumerDefined;
  r.ari = pattern<kRejAriLen>(33);
  r.private_data = pattern<kRejPrivateDataLen>(44);
  return r;
}

CmMra sample_mra() {
  CmMra r;
  r.local_comm_id = 0x01020304;
  r.remote_comm_id = 0x05060708;
  r.message_mraed = kMsgRep;
  r.service_timeout = 0x1D;
  r.private_data = pattern<kMraPrivateDataLen>(55);
  return r;
}

CmDreq sample_dreq() {
  CmDreq r;
  r.local_comm_id = 0xB26A4ED2;
  r.remote_comm_id = 0xF2D96583;
  r.remote_qpn_eecn = 0xFFFFFF;
  r.private_data = pattern<kDreqPrivateDataLen>(66);
  return r;
}

CmDrep sample_drep() {
  CmDrep r;
  r.local_comm_id = 0xF2D96583;
  r.remote_comm_id = 0xB26A4ED2;
  r.private_data = pattern<kDrepPrivateDataLen>(77);
  return r;
}

MadHeader sample_hdr() {
  MadHeader h;
  h.status = 0x001C;
  h.class_specific = 0x8001;
  h.tid = 0x00000002D24E6AB2;
  h.attr_mod = 0xDEADBEEF;
  return h;
}

// Field-wise equality: structs with arrays and nested structs compare through their bytes.
bool same_path(const CmPath& a, const CmPath& b) {
  return a.local_lid == b.local_lid && a.remote_lid == b.remote_lid && a.local_gid == b.local_gid &&
         a.remote_gid == b.remote_gid && a.flow_label == b.flow_label &&
         a.packet_rate == b.packet_rate && a.traffic_class == b.traffic_class &&
         a.hop_limit == b.hop_limit && a.sl == b.sl && a.subnet_local == b.subnet_local &&
         a.local_ack_timeout == b.local_ack_timeout;
}

void expect_same(const CmReq& a, const CmReq& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.service_id, b.service_id);
  EXPECT_EQ(a.local_ca_guid, b.local_ca_guid);
  EXPECT_EQ(a.local_qkey, b.local_qkey);
  EXPECT_EQ(a.local_qpn, b.local_qpn);
  EXPECT_EQ(a.responder_resources, b.responder_resources);
  EXPECT_EQ(a.local_eecn, b.local_eecn);
  EXPECT_EQ(a.initiator_depth, b.initiator_depth);
  EXPECT_EQ(a.remote_eecn, b.remote_eecn);
  EXPECT_EQ(a.remote_cm_response_timeout, b.remote_cm_response_timeout);
  EXPECT_EQ(a.transport_service_type, b.transport_service_type);
  EXPECT_EQ(a.end_to_end_flow_control, b.end_to_end_flow_control);
  EXPECT_EQ(a.starting_psn, b.starting_psn);
  EXPECT_EQ(a.local_cm_response_timeout, b.local_cm_response_timeout);
  EXPECT_EQ(a.retry_count, b.retry_count);
  EXPECT_EQ(a.pkey, b.pkey);
  EXPECT_EQ(a.path_mtu, b.path_mtu);
  EXPECT_EQ(a.rdc_exists, b.rdc_exists);
  EXPECT_EQ(a.rnr_retry_count, b.rnr_retry_count);
  EXPECT_EQ(a.max_cm_retries, b.max_cm_retries);
  EXPECT_EQ(a.srq, b.srq);
  EXPECT_EQ(a.extended_transport_type, b.extended_transport_type);
  EXPECT_TRUE(same_path(a.primary, b.primary));
  EXPECT_TRUE(same_path(a.alternate, b.alternate));
  EXPECT_EQ(a.sap_supported, b.sap_supported);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmRep& a, const CmRep& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.local_qkey, b.local_qkey);
  EXPECT_EQ(a.local_qpn, b.local_qpn);
  EXPECT_EQ(a.local_eecn, b.local_eecn);
  EXPECT_EQ(a.starting_psn, b.starting_psn);
  EXPECT_EQ(a.responder_resources, b.responder_resources);
  EXPECT_EQ(a.initiator_depth, b.initiator_depth);
  EXPECT_EQ(a.target_ack_delay, b.target_ack_delay);
  EXPECT_EQ(a.failover_accepted, b.failover_accepted);
  EXPECT_EQ(a.end_to_end_flow_control, b.end_to_end_flow_control);
  EXPECT_EQ(a.rnr_retry_count, b.rnr_retry_count);
  EXPECT_EQ(a.srq, b.srq);
  EXPECT_EQ(a.local_ca_guid, b.local_ca_guid);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmRtu& a, const CmRtu& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmRej& a, const CmRej& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.message_rejected, b.message_rejected);
  EXPECT_EQ(a.reject_info_length, b.reject_info_length);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.ari, b.ari);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmMra& a, const CmMra& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.message_mraed, b.message_mraed);
  EXPECT_EQ(a.service_timeout, b.service_timeout);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmDreq& a, const CmDreq& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.remote_qpn_eecn, b.remote_qpn_eecn);
  EXPECT_EQ(a.private_data, b.private_data);
}

void expect_same(const CmDrep& a, const CmDrep& b) {
  EXPECT_EQ(a.local_comm_id, b.local_comm_id);
  EXPECT_EQ(a.remote_comm_id, b.remote_comm_id);
  EXPECT_EQ(a.private_data, b.private_data);
}

std::vector<uint8_t> encode_ok(const CmMad& mad) {
  std::vector<uint8_t> buf(kMadLen, 0xEE);
  EXPECT_EQ(encode_cm_mad(mad, buf.data(), buf.size()), CmError::kOk);
  return buf;
}

template <typename T>
void round_trip(const T& msg, uint16_t attr) {
  SCOPED_TRACE(attr_name(attr));
  CmMad mad{sample_hdr(), msg};
  EXPECT_EQ(attr_id_of(mad.msg), attr);
  const std::vector<uint8_t> buf = encode_ok(mad);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(buf[1], 0x07);
  EXPECT_EQ(buf[2], 2);
  EXPECT_EQ(buf[3], 0x03);
  EXPECT_EQ(load_be16(&buf[16]), attr);
  EXPECT_EQ(load_be16(&buf[18]), 0) << "reserved";

  CmMad back;
  ASSERT_EQ(decode_cm_mad(buf.data(), buf.size(), &back), CmError::kOk);
  EXPECT_EQ(back.hdr.base_version, 1);
  EXPECT_EQ(back.hdr.mgmt_class, kMgmtClassCm);
  EXPECT_EQ(back.hdr.class_version, 2);
  EXPECT_EQ(back.hdr.method, kMethodSend);
  EXPECT_EQ(back.hdr.status, 0x001C);
  EXPECT_EQ(back.hdr.class_specific, 0x8001);
  EXPECT_EQ(back.hdr.tid, 0x00000002D24E6AB2u);
  EXPECT_EQ(back.hdr.attr_id, attr);
  EXPECT_EQ(back.hdr.attr_mod, 0xDEADBEEFu);
  ASSERT_TRUE(std::holds_alternative<T>(back.msg));
  expect_same(std::get<T>(back.msg), msg);
  EXPECT_EQ(encode_ok(back), buf) << "re-encoding the decoded MAD gives the same bytes";
}

TEST(CmMad, SizesMatchIbta) {
  EXPECT_EQ(kMadLen, 256u);
  EXPECT_EQ(kMadHdrLen + kCmMsgLen, kMadLen);
  EXPECT_EQ(kReqPrivateDataLen, 92u);
  EXPECT_EQ(kRepPrivateDataLen, 196u);
  EXPECT_EQ(kRtuPrivateDataLen, 224u);
  EXPECT_EQ(kRejPrivateDataLen, 148u);
  EXPECT_EQ(kMraPrivateDataLen, 222u);
  EXPECT_EQ(kDreqPrivateDataLen, 220u);
  EXPECT_EQ(kDrepPrivateDataLen, 224u);
}

TEST(CmMad, RoundTripEveryMessage) {
  round_trip(sample_req(), kAttrReq);
  round_trip(sample_rep(), kAttrRep);
  round_trip(sample_rtu(), kAttrRtu);
  round_trip(sample_rej(), kAttrRej);
  round_trip(sample_mra(), kAttrMra);
  round_trip(sample_dreq(), kAttrDreq);
  round_trip(sample_drep(), kAttrDrep);
}

// The fields that share bytes, at the bytes IBTA table 106 puts them (MAD offset = message + 24).
TEST(CmMad, ReqBitPositions) {
  CmReq r;
  r.local_qpn = 0x123456;
  r.responder_resources = 0x78;
  r.remote_cm_response_timeout = 0x1F;
  r.transport_service_type = 1;
  r.end_to_end_flow_control = true;
  r.starting_psn = 0xABCDEF;
  r.local_cm_response_timeout = 0x01;
  r.retry_count = 7;
  r.path_mtu = 3;
  r.rdc_exists = false;
  r.rnr_retry_count = 7;
  r.max_cm_retries = 15;
  r.srq = true;
  r.extended_transport_type = 1;
  r.primary.flow_label = 0x9705A;
  r.primary.packet_rate = 0x3F;
  r.primary.sl = 0xF;
  r.primary.subnet_local = false;
  r.primary.local_ack_timeout = 19;
  r.alternate.local_ack_timeout = 1;
  r.sap_supported = true;
  const std::vector<uint8_t> b = encode_ok(CmMad{MadHeader{}, r});
  const uint8_t* m = b.data() + kMadHdrLen;
  EXPECT_EQ(load_be32(m + 32), 0x12345678u);
  EXPECT_EQ(m[43], 0xFB) << "timeout 5 bits (0x1F), transport type 2 bits (1), flow control 1 bit";
  EXPECT_EQ(load_be32(m + 44), 0xABCDEF0Fu) << "PSN, timeout 1 in the top 5 bits, retry 7";
  EXPECT_EQ(m[50], 0x37) << "MTU 3, RDC 0, RNR retry 7";
  EXPECT_EQ(m[51], 0xF9) << "max CM retries 15, SRQ, extended type 1";
  EXPECT_EQ(load_be32(m + 88), 0x9705A03Fu) << "flow label in the top 20 bits, rate in the low 6";
  EXPECT_EQ(m[94], 0xF0);
  EXPECT_EQ(m[95], 0x98) << "local ACK timeout 19 << 3";
  EXPECT_EQ(m[139], 0x0C) << "alternate ACK timeout 1 << 3 | SAP supported at bit 5";
}

TEST(CmMad, RepBitPositions) {
  CmRep r;
  r.local_qpn = 0x11;
  r.starting_psn = 0x65964F;
  r.target_ack_delay = 15;
  r.failover_accepted = 3;
  r.end_to_end_flow_control = false;
  r.rnr_retry_count = 7;
  r.srq = true;
  const std::vector<uint8_t> b = encode_ok(CmMad{MadHeader{}, r});
  const uint8_t* m = b.data() + kMadHdrLen;
  EXPECT_EQ(load_be32(m + 12), 0x00001100u);
  EXPECT_EQ(load_be32(m + 20), 0x65964F00u);
  EXPECT_EQ(m[26], 0x7E);
  EXPECT_EQ(m[27], 0xF0);
}

// Every REQ field set alone to all ones lights exactly `width` bits; all of them together light
// the sum, so no two fields overlap and none leaks into reserved bits.
TEST(CmMad, ReqFieldsDoNotOverlap) {
  struct F {
    const char* name;
    int width;
    std::function<void(CmReq&)> set;
  };
  auto path_fields = [](const char* which, CmPath CmReq::*p) {
    return std::vector<F>{
        {which, 16, [p](CmReq& r) { (r.*p).local_lid = 0xFFFF; }},
        {which, 16, [p](CmReq& r) { (r.*p).remote_lid = 0xFFFF; }},
        {which, 128, [p](CmReq& r) { (r.*p).local_gid.fill(0xFF); }},
        {which, 128, [p](CmReq& r) { (r.*p).remote_gid.fill(0xFF); }},
        {which, 20, [p](CmReq& r) { (r.*p).flow_label = 0xFFFFF; }},
        {which, 6, [p](CmReq& r) { (r.*p).packet_rate = 0x3F; }},
        {which, 8, [p](CmReq& r) { (r.*p).traffic_class = 0xFF; }},
        {which, 8, [p](CmReq& r) { (r.*p).hop_limit = 0xFF; }},
        {which, 4, [p](CmReq& r) { (r.*p).sl = 0xF; }},
        {which, 1, [p](CmReq& r) { (r.*p).subnet_local = true; }},
        {which, 5, [p](CmReq& r) { (r.*p).local_ack_timeout = 0x1F; }},
    };
  };
  std::vector<F> fields = {
      {"local_comm_id", 32, [](CmReq& r) { r.local_comm_id = ~0u; }},
      {"service_id", 64, [](CmReq& r) { r.service_id = ~uint64_t(0); }},
      {"local_ca_guid", 64, [](CmReq& r) { r.local_ca_guid = ~uint64_t(0); }},
      {"local_qkey", 32, [](CmReq& r) { r.local_qkey = ~0u; }},
      {"local_qpn", 24, [](CmReq& r) { r.local_qpn = 0xFFFFFF; }},
      {"responder_resources", 8, [](CmReq& r) { r.responder_resources = 0xFF; }},
      {"local_eecn", 24, [](CmReq& r) { r.local_eecn = 0xFFFFFF; }},
      {"initiator_depth", 8, [](CmReq& r) { r.initiator_depth = 0xFF; }},
      {"remote_eecn", 24, [](CmReq& r) { r.remote_eecn = 0xFFFFFF; }},
      {"remote_cm_response_timeout", 5, [](CmReq& r) { r.remote_cm_response_timeout = 0x1F; }},
      {"transport_service_type", 2, [](CmReq& r) { r.transport_service_type = 3; }},
      {"end_to_end_flow_control", 1, [](CmReq& r) { r.end_to_end_flow_control = true; }},
      {"starting_psn", 24, [](CmReq& r) { r.starting_psn = 0xFFFFFF; }},
      {"local_cm_response_timeout", 5, [](CmReq& r) { r.local_cm_response_timeout = 0x1F; }},
      {"retry_count", 3, [](CmReq& r) { r.retry_count = 7; }},
      {"pkey", 16, [](CmReq& r) { r.pkey = 0xFFFF; }},
      {"path_mtu", 4, [](CmReq& r) { r.path_mtu = 0xF; }},
      {"rdc_exists", 1, [](CmReq& r) { r.rdc_exists = true; }},
      {"rnr_retry_count", 3, [](CmReq& r) { r.rnr_retry_count = 7; }},
      {"max_cm_retries", 4, [](CmReq& r) { r.max_cm_retries = 0xF; }},
      {"srq", 1, [](CmReq& r) { r.srq = true; }},
      {"extended_transport_type", 3, [](CmReq& r) { r.extended_transport_type = 7; }},
      {"sap_supported", 1, [](CmReq& r) { r.sap_supported = true; }},
      {"private_data", 92 * 8, [](CmReq& r) { r.private_data.fill(0xFF); }},
  };
  for (auto& f : path_fields("primary", &CmReq::primary)) fields.push_back(f);
  for (auto& f : path_fields("alternate", &CmReq::alternate)) fields.push_back(f);

  auto ones = [](const std::vector<uint8_t>& b) {
    int n = 0;
    for (size_t i = kMadHdrLen; i < b.size(); i++) n += std::popcount(b[i]);
    return n;
  };
  CmReq all;
  int total = 0;
  for (const F& f : fields) {
    CmReq r;
    f.set(r);
    f.set(all);
    total += f.width;
    EXPECT_EQ(ones(encode_ok(CmMad{MadHeader{}, r})), f.width) << f.name;
  }
  const std::vector<uint8_t> b = encode_ok(CmMad{MadHeader{}, all});
  EXPECT_EQ(ones(b), total);
  // What stays zero are exactly the reserved bits of table 106: bytes 4-7 and 24-27, 6 bits after
  // each flow label, 3 after each SL/subnet local, 3 after the primary ACK timeout and 2 after
  // the alternate ACK timeout + SAP supported.
  EXPECT_EQ(int(kCmMsgLen * 8) - total, 64 + 2 * 6 + 2 * 3 + 3 + 2);
}

TEST(CmMad, EncodeRejectsValuesWiderThanTheirField) {
  auto enc = [](const CmMessage& m) {
    uint8_t buf[kMadLen];
    return encode_cm_mad(CmMad{MadHeader{}, m}, buf, sizeof buf);
  };
  CmReq req;
  req.local_qpn = 0x1000000;
  EXPECT_EQ(enc(req), CmError::kFieldOutOfRange);
  req = CmReq{};
  req.primary.flow_label = 0x100000;
  EXPECT_EQ(enc(req), CmError::kFieldOutOfRange);
  req = CmReq{};
  req.retry_count = 8;
  EXPECT_EQ(enc(req), CmError::kFieldOutOfRange);
  CmRep rep;
  rep.target_ack_delay = 32;
  EXPECT_EQ(enc(rep), CmError::kFieldOutOfRange);
  CmRej rej;
  rej.reject_info_length = 128;
  EXPECT_EQ(enc(rej), CmError::kFieldOutOfRange);
  CmMra mra;
  mra.message_mraed = 4;
  EXPECT_EQ(enc(mra), CmError::kFieldOutOfRange);
  CmDreq dreq;
  dreq.remote_qpn_eecn = 0x1000000;
  EXPECT_EQ(enc(dreq), CmError::kFieldOutOfRange);
  EXPECT_EQ(enc(CmDrep{}), CmError::kOk);

  uint8_t small[kMadLen - 1];
  EXPECT_EQ(encode_cm_mad(CmMad{MadHeader{}, CmRtu{}}, small, sizeof small), CmError::kOutputTooSmall);
  MadHeader h;
  h.mgmt_class = 0x01;
  uint8_t buf[kMadLen];
  EXPECT_EQ(encode_cm_mad(CmMad{h, CmRtu{}}, buf, sizeof buf), CmError::kWrongClass);
  h = MadHeader{};
  h.method = kMethodGet;
  EXPECT_EQ(encode_cm_mad(CmMad{h, CmRtu{}}, buf, sizeof buf), CmError::kBadMethod);
}

TEST(CmMad, MalformedInputIsRejectedByName) {
  const std::vector<uint8_t> good = encode_ok(CmMad{sample_hdr(), sample_req()});
  CmMad out;
  auto decode_with = [&](auto mutate) {
    std::vector<uint8_t> b = good;
    mutate(b);
    return decode_cm_mad(b.data(), b.size(), &out);
  };
  EXPECT_EQ(decode_cm_mad(good.data(), good.size(), &out), CmError::kOk);
  EXPECT_EQ(decode_cm_mad(good.data(), kMadLen - 1, &out), CmError::kTruncated);
  EXPECT_EQ(decode_cm_mad(good.data(), 0, &out), CmError::kTruncated);
  EXPECT_EQ(decode_cm_mad(nullptr, kMadLen, &out), CmError::kTruncated);
  EXPECT_EQ(decode_with([](auto& b) { b.push_back(0); }), CmError::kOversized);
  EXPECT_EQ(decode_with([](auto& b) { b[0] = 2; }), CmError::kBadBaseVersion);
  EXPECT_EQ(decode_with([](auto& b) { b[1] = 0x03; }), CmError::kWrongClass) << "SubnAdm";
  EXPECT_EQ(decode_with([](auto& b) { b[1] = 0x01; }), CmError::kWrongClass) << "SubnMgt";
  EXPECT_EQ(decode_with([](auto& b) { b[2] = 1; }), CmError::kBadClassVersion);
  EXPECT_EQ(decode_with([](auto& b) { store_be16(&b[16], 0x0000); }), CmError::kUnknownAttribute);
  EXPECT_EQ(decode_with([](auto& b) { store_be16(&b[16], 0x001B); }), CmError::kUnknownAttribute);
  EXPECT_EQ(decode_with([](auto& b) { store_be16(&b[16], 0x0110); }), CmError::kUnknownAttribute);
  for (uint16_t a : {kAttrClassPortInfo, kAttrSidrReq, kAttrSidrRep, kAttrLap, kAttrApr})
    EXPECT_EQ(decode_with([a](auto& b) { store_be16(&b[16], a); }), CmError::kUnsupportedAttribute)
        << attr_name(a);
  EXPECT_EQ(decode_with([](auto& b) { b[3] = kMethodGetResp; }), CmError::kBadMethod);
  EXPECT_STREQ(cm_error_name(CmError::kTruncated), "truncated");
  EXPECT_STREQ(cm_error_name(CmError::kWrongClass), "wrong_class");
  EXPECT_STREQ(cm_error_name(CmError::kUnknownAttribute), "unknown_attribute");
  for (int e = 0; e < int(CmError::kCount); e++)
    EXPECT_STRNE(cm_error_name(CmError(e)), "unknown") << e;

  // Reserved bits are ignored on decode (and zero again after re-encoding).
  std::vector<uint8_t> b = good;
  b[kMadHdrLen + 4] = 0xFF;   // REQ bytes 4-7 reserved
  b[kMadHdrLen + 90] |= 0x0F; // 4 of the 6 reserved bits after the flow label
  b[kMadHdrLen + 95] |= 0x07; // reserved after the local ACK timeout
  b[18] = 0xAB;               // MAD header reserved
  ASSERT_EQ(decode_cm_mad(b.data(), b.size(), &out), CmError::kOk);
  EXPECT_EQ(std::get<CmReq>(out.msg).primary.flow_label, 0xABCDEu);
  EXPECT_EQ(std::get<CmReq>(out.msg).primary.packet_rate, 0x2B);
  EXPECT_EQ(encode_ok(out), good);

  MadHeader h;
  EXPECT_EQ(decode_mad_header(good.data(), kMadHdrLen - 1, &h), CmError::kTruncated);
  EXPECT_EQ(decode_mad_header(good.data(), kMadHdrLen, &h), CmError::kOk);
  EXPECT_EQ(h.attr_id, kAttrReq);
}

TEST(CmMad, AttributeNames) {
  EXPECT_STREQ(attr_name(0x0010), "REQ");
  EXPECT_STREQ(attr_name(0x0013), "REP");
  EXPECT_STREQ(attr_name(0x0014), "RTU");
  EXPECT_STREQ(attr_name(0x0016), "DREP");
  EXPECT_STREQ(attr_name(0x001A), "APR");
  EXPECT_EQ(attr_name(0x0002), nullptr);
}

TEST(CmMad, RdmaCmServiceId) {
  EXPECT_EQ(rdma_tcp_service_id(7174), 0x0000000001061C06u);
  uint16_t ps = 0, port = 0;
  ASSERT_TRUE(parse_rdma_service_id(0x0000000001061C06, &ps, &port));
  EXPECT_EQ(ps, kRdmaPsTcp);
  EXPECT_EQ(port, 7174);
  ASSERT_TRUE(parse_rdma_service_id(rdma_service_id(kRdmaPsUdp, 1), &ps, &port));
  EXPECT_EQ(ps, kRdmaPsUdp);
  EXPECT_TRUE(parse_rdma_service_id(rdma_service_id(kRdmaPsIb, 0xFFFF), &ps, &port));
  EXPECT_FALSE(parse_rdma_service_id(0x0000000101061C06, &ps, &port)) << "upper bits set";
  EXPECT_FALSE(parse_rdma_service_id(0x0000000001071C06, &ps, &port)) << "not a port space";
}

TEST(CmMad, RdmaCmHeaderIpv4) {
  const CmaHeader h = CmaHeader::ipv4(0xC6120003, 0xC6120002, 0xD12C);
  uint8_t buf[kCmaHdrLen + 4];
  ASSERT_EQ(encode_cma_header(h, buf, sizeof buf), CmError::kOk);
  const uint8_t want[kCmaHdrLen] = {0x00, 0x40, 0xD1, 0x2C,  // version 0, IPv4, port
                                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC6, 0x12, 0x00, 0x03,
                                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC6, 0x12, 0x00, 0x02};
  EXPECT_EQ(0, std::memcmp(buf, want, kCmaHdrLen));
  CmaHeader back;
  ASSERT_EQ(decode_cma_header(buf, kCmaHdrLen, &back), CmError::kOk);
  EXPECT_EQ(back.version, 0);
  EXPECT_EQ(back.ip_version, 4);
  EXPECT_EQ(back.port, 0xD12C);
  EXPECT_EQ(back.src_ipv4(), 0xC6120003u);
  EXPECT_EQ(back.dst_ipv4(), 0xC6120002u);
}

TEST(CmMad, RdmaCmHeaderIpv6AndErrors) {
  const Gid src = gid(0x20), dst = gid(0xFE);
  const CmaHeader h = CmaHeader::ipv6(src, dst, 4791);
  uint8_t buf[kCmaHdrLen];
  ASSERT_EQ(encode_cma_header(h, buf, sizeof buf), CmError::kOk);
  EXPECT_EQ(buf[1], 0x60);
  CmaHeader back;
  ASSERT_EQ(decode_cma_header(buf, sizeof buf, &back), CmError::kOk);
  EXPECT_EQ(back.ip_version, 6);
  EXPECT_EQ(back.port, 4791);
  EXPECT_EQ(back.src_addr, src);
  EXPECT_EQ(back.dst_addr, dst);

  EXPECT_EQ(decode_cma_header(buf, kCmaHdrLen - 1, &back), CmError::kTruncated);
  buf[1] = 0x65;  // low nibble reserved: ignored
  EXPECT_EQ(decode_cma_header(buf, sizeof buf, &back), CmError::kOk);
  buf[1] = 0x50;
  EXPECT_EQ(decode_cma_header(buf, sizeof buf, &back), CmError::kBadCmaIpVersion);
  buf[1] = 0x40;
  buf[0] = 1;
  EXPECT_EQ(decode_cma_header(buf, sizeof buf, &back), CmError::kBadCmaVersion);

  EXPECT_EQ(encode_cma_header(h, buf, kCmaHdrLen - 1), CmError::kOutputTooSmall);
  CmaHeader bad = h;
  bad.ip_version = 5;
  EXPECT_EQ(encode_cma_header(bad, buf, sizeof buf), CmError::kBadCmaIpVersion);
  bad = h;
  bad.version = 2;
  EXPECT_EQ(encode_cma_header(bad, buf, sizeof buf), CmError::kBadCmaVersion);
}

}  // namespace
}  // namespace ndnic::wire::cm
