// The IB CM MADs of a real rdma_cm connection (rping over rxe, cm.pcap): decoded with the CM
// codec, checked against what MANIFEST.md states and against the RC traffic that follows (QPNs,
// starting PSNs, flow label -> UDP source port), and re-encoded byte for byte.
//
// Values that differ per run (comm IDs, PSNs, TID, the rdma_cm source port and the flow label
// derived from it) are checked against the manifest only for the project's copy; every other
// cm.pcap (../shared) must pass the consistency checks.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/golden/golden_captures.h"
#include "wire/cm_mad.h"
#include "ndnic/wire/pcap_file.h"

namespace ndnic::test {
namespace {

namespace cm = wire::cm;

constexpr uint32_t kIpA = 0xC6120002;  // 198.18.0.2, server / passive side
constexpr uint32_t kIpB = 0xC6120003;  // 198.18.0.3, client / active side

struct Mad {
  size_t frame = 0;
  uint32_t src_ip = 0, dst_ip = 0;
  std::vector<uint8_t> bytes;  ///< the 256-byte UD payload
  cm::CmMad mad;
};

struct CmCapture {
  std::string path;
  bool project = false;             ///< the copy MANIFEST.md in tests/data/rxe describes
  std::vector<Mad> mads;            ///< UD SEND ONLY to QP1, in capture order
  std::vector<wire::RocePacket> rc; ///< every other RoCE packet (headers only)
  std::vector<std::vector<uint8_t>> frames;  ///< owns what rc[].payload points into
};

cm::Gid v4_mapped(uint32_t ip) {
  cm::Gid g{};
  g[10] = g[11] = 0xFF;
  wire::store_be32(g.data() + 12, ip);
  return g;
}

std::vector<CmCapture> load_cm_captures() {
  std::vector<CmCapture> out;
  for (const GoldenFile& f : golden_files()) {
    if (f.name != "cm.pcap") continue;
    CmCapture c;
    c.path = f.path;
    c.project = f.label.rfind("project_", 0) == 0;
    wire::PcapReader reader;
    EXPECT_TRUE(reader.open(f.path)) << f.path << ": " << reader.error();
    size_t n = 0;
    c.frames.reserve(reader.records().size());
    for (const wire::PcapRecord& r : reader.records()) {
      n++;
      c.frames.push_back(r.data);
      const std::vector<uint8_t>& bytes = c.frames.back();
      wire::RocePacket p;
      if (wire::decode_frame(bytes.data(), bytes.size(), &p) != wire::Reject::kOk) continue;
      if (p.bth.opcode != wire::kUdSendOnly) {
        c.rc.push_back(p);
        continue;
      }
      Mad m;
      m.frame = n;
      m.src_ip = p.ip4.src;
      m.dst_ip = p.ip4.dst;
      EXPECT_EQ(p.bth.dest_qp, cm::kGsiQpn) << "frame " << n;
      EXPECT_EQ(p.deth.qkey, cm::kGsiQkey) << "frame " << n;
      EXPECT_EQ(p.deth.src_qp, cm::kGsiQpn) << "frame " << n;
      m.bytes.assign(p.payload, p.payload + p.payload_len);
      const cm::CmError e = cm::decode_cm_mad(m.bytes.data(), m.bytes.size(), &m.mad);
      EXPECT_EQ(e, cm::CmError::kOk) << "frame " << n << ": " << cm::cm_error_name(e);
      if (e == cm::CmError::kOk) c.mads.push_back(std::move(m));
    }
    out.push_back(std::move(c));
  }
  EXPECT_FALSE(out.empty()) << "no golden capture named cm.pcap";
  return out;
}

/// PSN of the first request packet (SEND / WRITE / READ request / atomic) from `src` on the RC QP.
std::optional<uint32_t> first_request_psn(const CmCapture& c, uint32_t src) {
  for (const wire::RocePacket& p : c.rc) {
    const wire::OpKind k = wire::opcode_info(p.bth.opcode).kind;
    if (p.ip4.src != src) continue;
    if (k == wire::OpKind::kSend || k == wire::OpKind::kWrite || k == wire::OpKind::kReadRequest ||
        k == wire::OpKind::kAtomic)
      return p.bth.psn;
  }
  return std::nullopt;
}

TEST(GoldenCmMad, ConnectionSetupAndTeardown) {
  for (const CmCapture& c : load_cm_captures()) {
    SCOPED_TRACE(c.path);
    ASSERT_EQ(c.mads.size(), 5u) << "REQ, REP, RTU, DREQ, DREP";
    const uint16_t order[] = {cm::kAttrReq, cm::kAttrRep, cm::kAttrRtu, cm::kAttrDreq, cm::kAttrDrep};
    const uint32_t from[] = {kIpB, kIpA, kIpB, kIpB, kIpA};
    for (size_t i = 0; i < 5; i++) {
      const Mad& m = c.mads[i];
      SCOPED_TRACE("frame " + std::to_string(m.frame));
      EXPECT_EQ(m.mad.hdr.attr_id, order[i]) << cm::attr_name(m.mad.hdr.attr_id);
      EXPECT_EQ(m.src_ip, from[i]);
      EXPECT_EQ(m.dst_ip, from[i] == kIpA ? kIpB : kIpA);
      EXPECT_EQ(m.mad.hdr.base_version, 1);
      EXPECT_EQ(m.mad.hdr.mgmt_class, 0x07);
      EXPECT_EQ(m.mad.hdr.class_version, 2);
      EXPECT_EQ(m.mad.hdr.method, cm::kMethodSend);
      EXPECT_EQ(m.mad.hdr.status, 0);
      EXPECT_EQ(m.mad.hdr.attr_mod, 0u);
      EXPECT_EQ(m.mad.hdr.tid, c.mads[0].mad.hdr.tid) << "the manifest: same TID on all five";
    }
    const auto& req = std::get<cm::CmReq>(c.mads[0].mad.msg);
    const auto& rep = std::get<cm::CmRep>(c.mads[1].mad.msg);
    const auto& rtu = std::get<cm::CmRtu>(c.mads[2].mad.msg);
    const auto& dreq = std::get<cm::CmDreq>(c.mads[3].mad.msg);
    const auto& drep = std::get<cm::CmDrep>(c.mads[4].mad.msg);

    // REQ: what the manifest states.
    EXPECT_EQ(req.service_id, 0x0000000001061C06u);
    uint16_t ps = 0, dst_port = 0;
    ASSERT_TRUE(cm::parse_rdma_service_id(req.service_id, &ps, &dst_port));
    EXPECT_EQ(ps, cm::kRdmaPsTcp);
    EXPECT_EQ(dst_port, 7174);
    EXPECT_EQ(req.local_qpn, 0x11u);
    EXPECT_EQ(req.transport_service_type, 0) << "RC";
    EXPECT_EQ(req.pkey, 0xFFFF);
    EXPECT_EQ(req.path_mtu, 3) << "IB MTU enum 3 = 1024, the rxe active MTU on a 1500-byte netdev";
    EXPECT_EQ(req.primary.local_lid, 0xFFFF);
    EXPECT_EQ(req.primary.remote_lid, 0xFFFF);
    EXPECT_EQ(req.primary.local_gid, v4_mapped(kIpB));
    EXPECT_EQ(req.primary.remote_gid, v4_mapped(kIpA));
    EXPECT_EQ(req.primary.hop_limit, 64);
    EXPECT_EQ(req.primary.packet_rate, 0);
    EXPECT_EQ(req.alternate.local_gid, cm::Gid{}) << "no alternate path";
    cm::CmaHeader cma;
    ASSERT_EQ(cm::decode_cma_header(req.private_data.data(), req.private_data.size(), &cma),
              cm::CmError::kOk);
    EXPECT_EQ(cma.version, 0);
    EXPECT_EQ(cma.ip_version, 4);
    EXPECT_EQ(cma.src_ipv4(), kIpB);
    EXPECT_EQ(cma.dst_ipv4(), kIpA);
    // The manifest: rdma_cm's flow label = (src_port * 31 + dst_port) & 0xfffff, and every RC
    // packet of the connection, both ways, uses UDP source port
    // 0xC000 | ((fl & 0x3fff) ^ (fl >> 14)).
    const uint32_t fl = req.primary.flow_label;
    EXPECT_EQ(fl, (uint32_t(cma.port) * 31 + dst_port) & 0xFFFFF);
    const uint16_t sport = uint16_t(0xC000 | ((fl & 0x3FFF) ^ (fl >> 14)));
    ASSERT_FALSE(c.rc.empty());
    for (const wire::RocePacket& p : c.rc) EXPECT_EQ(p.udp.src_port, sport);

    // REP answers the REQ; RTU, DREQ, DREP name both ends' comm IDs.
    EXPECT_EQ(rep.remote_comm_id, req.local_comm_id);
    EXPECT_EQ(rep.local_qpn, 0x11u);
    EXPECT_EQ(rtu.local_comm_id, req.local_comm_id);
    EXPECT_EQ(rtu.remote_comm_id, rep.local_comm_id);
    EXPECT_EQ(dreq.local_comm_id, req.local_comm_id);
    EXPECT_EQ(dreq.remote_comm_id, rep.local_comm_id);
    EXPECT_EQ(dreq.remote_qpn_eecn, rep.local_qpn);
    EXPECT_EQ(drep.local_comm_id, rep.local_comm_id);
    EXPECT_EQ(drep.remote_comm_id, req.local_comm_id);
    EXPECT_NE(req.local_comm_id, rep.local_comm_id);

    // The RC traffic uses what the MADs negotiated: QPNs, and starting PSNs. A message's
    // Starting PSN is the PSN its *sender* expects to receive first, i.e. the one the other side
    // sends with (Linux ib_send_cm_req sets its own rq_psn from the REQ's): A's requests start
    // at the REQ's, B's at the REP's.
    for (const wire::RocePacket& p : c.rc)
      EXPECT_EQ(p.bth.dest_qp, p.ip4.src == kIpB ? rep.local_qpn : req.local_qpn);
    EXPECT_EQ(first_request_psn(c, kIpA), req.starting_psn) << "A's first request";
    EXPECT_EQ(first_request_psn(c, kIpB), rep.starting_psn) << "B's first request";

    if (c.project) {
      // The run MANIFEST.md describes.
      EXPECT_EQ(c.mads[0].mad.hdr.tid, 0x2D24E6AB2u);
      EXPECT_EQ(fl, 0x9705Au);
      EXPECT_EQ(cma.port, 0xD12C) << "53548";
      EXPECT_EQ(sport, 0xF07F);
      // "the raw bytes at REQ offset 88 are `97 05 a0 00` = flow label 0x9705a, rate 0"
      const uint8_t* at88 = c.mads[0].bytes.data() + cm::kMadHdrLen + 88;
      EXPECT_EQ(std::vector<uint8_t>(at88, at88 + 4), (std::vector<uint8_t>{0x97, 0x05, 0xA0, 0x00}));
    }
  }
}

TEST(GoldenCmMad, ReencodingReproducesEveryMadByteForByte) {
  for (const CmCapture& c : load_cm_captures()) {
    SCOPED_TRACE(c.path);
    EXPECT_EQ(c.mads.size(), 5u);
    for (const Mad& m : c.mads) {
      SCOPED_TRACE("frame " + std::to_string(m.frame) + " " + cm::attr_name(m.mad.hdr.attr_id));
      ASSERT_EQ(m.bytes.size(), cm::kMadLen);
      std::vector<uint8_t> again(cm::kMadLen, 0xEE);
      ASSERT_EQ(cm::encode_cm_mad(m.mad, again.data(), again.size()), cm::CmError::kOk);
      for (size_t i = 0; i < cm::kMadLen; i++)
        EXPECT_EQ(again[i], m.bytes[i]) << "byte " << i << " of the MAD";
      EXPECT_EQ(again, m.bytes);
    }
  }
}

}  // namespace
}  // namespace ndnic::test
