// The CM MADs the agent sends, filled in as Linux ib_cm / rdma_cm fill them on RoCE (checked
// against rping over rxe, tests/data/rxe/cm.pcap): permissive LIDs, IPv4-mapped GIDs, P_Key
// 0xFFFF, hop limit 64, rdma_cm's header first in the REQ's private data.
#include <algorithm>
#include <cstring>

#include "cm/mads.h"
#include "ndnic/wire/headers.h"

namespace ndnic::cm::mads {
namespace ib = wire::cm;
namespace {

constexpr uint16_t kPermissiveLid = 0xFFFF;
constexpr uint16_t kDefaultPkey = 0xFFFF;
constexpr uint8_t kTargetAckDelay = 15;  ///< rxe's ack_delay, which Linux puts in the REP

ib::CmMad mad(uint64_t tid, ib::CmMessage msg) {
  ib::CmMad m;
  m.hdr.tid = tid;
  m.msg = std::move(msg);
  return m;
}

template <size_t N>
void copy_data(std::array<uint8_t, N>* to, size_t at, std::span<const uint8_t> from) {
  if (!from.empty()) std::memcpy(to->data() + at, from.data(), std::min(from.size(), N - at));
}

}  // namespace

uint8_t mtu_code(uint32_t bytes) {
  for (uint8_t code = 1; code <= 5; code++)
    if (mtu_bytes(code) == bytes) return code;
  return 0;
}

uint32_t mtu_bytes(uint8_t code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

uint64_t ca_guid(const uint8_t mac[6]) {
  const uint8_t eui[8] = {uint8_t(mac[0] ^ 2), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
  uint64_t g = 0;
  for (uint8_t b : eui) g = g << 8 | b;
  return g;
}

ib::Gid v4_gid(uint32_t ipv4) {
  ib::Gid g{};
  g[10] = g[11] = 0xFF;
  wire::store_be32(g.data() + 12, ipv4);
  return g;
}

ib::CmMad req(const Connection& c, const Config& cfg, uint64_t guid, std::span<const uint8_t> user_data) {
  ib::CmReq r;
  r.local_comm_id = c.local_id;
  r.service_id = ib::rdma_tcp_service_id(c.peer_port);
  r.local_ca_guid = guid;
  r.local_qpn = c.local_qpn;
  r.responder_resources = c.responder_resources;
  r.initiator_depth = c.initiator_depth;
  r.remote_cm_response_timeout = cfg.cm_response_timeout;
  r.transport_service_type = 0;  // RC
  r.starting_psn = c.rq_psn;     // what we expect: the passive side sends from it
  r.local_cm_response_timeout = cfg.cm_response_timeout;
  r.retry_count = c.retry_count;
  r.pkey = kDefaultPkey;
  r.path_mtu = mtu_code(c.mtu);
  r.rnr_retry_count = cfg.rnr_retry_count;  // what we ask of the peer's QP
  r.max_cm_retries = cfg.max_cm_retries;
  r.primary.local_lid = r.primary.remote_lid = kPermissiveLid;
  r.primary.local_gid = v4_gid(c.local_ipv4);
  r.primary.remote_gid = v4_gid(c.peer_ipv4);
  r.primary.flow_label = c.flow_label;
  r.primary.hop_limit = cfg.hop_limit;
  r.primary.local_ack_timeout = c.ack_timeout;
  const ib::CmaHeader h = ib::CmaHeader::ipv4(c.local_ipv4, c.peer_ipv4, c.local_port);
  ib::encode_cma_header(h, r.private_data.data(), r.private_data.size());
  copy_data(&r.private_data, ib::kCmaHdrLen, user_data);
  return mad(c.tid, r);
}

ib::CmMad rep(const Connection& c, const Config& cfg, uint64_t guid, std::span<const uint8_t> user_data) {
  ib::CmRep r;
  r.local_comm_id = c.local_id;
  r.remote_comm_id = c.remote_id;
  r.local_qpn = c.local_qpn;
  r.starting_psn = c.rq_psn;  // what we expect: the active side sends from it
  r.responder_resources = c.responder_resources;
  r.initiator_depth = c.initiator_depth;
  r.target_ack_delay = kTargetAckDelay;
  r.rnr_retry_count = cfg.rnr_retry_count;  // what we ask of the peer's QP
  r.local_ca_guid = guid;
  copy_data(&r.private_data, 0, user_data);
  return mad(c.tid, r);
}

ib::CmMad rtu(const Connection& c) {
  ib::CmRtu r;
  r.local_comm_id = c.local_id;
  r.remote_comm_id = c.remote_id;
  return mad(c.tid, r);
}

ib::CmMad rej(uint64_t tid, uint32_t local_id, uint32_t remote_id, uint8_t msg, uint16_t reason,
              std::span<const uint8_t> user_data, uint64_t ari_guid) {
  ib::CmRej r;
  r.local_comm_id = local_id;
  r.remote_comm_id = remote_id;
  r.message_rejected = msg;
  r.reason = reason;
  if (ari_guid) {
    wire::store_be64(r.ari.data(), ari_guid);
    r.reject_info_length = 8;
  }
  copy_data(&r.private_data, 0, user_data);
  return mad(tid, r);
}

ib::CmMad dreq(const Connection& c) {
  ib::CmDreq r;
  r.local_comm_id = c.local_id;
  r.remote_comm_id = c.remote_id;
  r.remote_qpn_eecn = c.peer_qpn;
  return mad(c.tid, r);
}

ib::CmMad drep(uint64_t tid, uint32_t local_id, uint32_t remote_id) {
  ib::CmDrep r;
  r.local_comm_id = local_id;
  r.remote_comm_id = remote_id;
  return mad(tid, r);
}

}  // namespace ndnic::cm::mads
