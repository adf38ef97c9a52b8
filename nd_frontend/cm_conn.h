// Private to the CM agent: one connection's state, and the MADs built from it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <vector>

#include "nd_frontend/cm_agent.h"
#include "wire/cm_mad.h"

namespace ndnic::nd {

struct CmConn {
  CmConnId local_id = 0;
  uint32_t remote_id = 0;             ///< the peer's comm ID, once known
  CmState state = CmState::kIdle;
  bool active = false;
  nic::Qp* qp = nullptr;
  CmCallback cb;
  uint64_t tid = 0;                   ///< the REQ's TID: every MAD of the exchange carries it

  uint32_t local_ipv4 = 0, peer_ipv4 = 0;
  uint16_t local_port = 0, peer_port = 0;  ///< rdma_cm ports (service ID port on the passive side)
  uint32_t peer_qpn = 0;
  uint32_t local_qpn = 0;             ///< our QP's, kept after detach(): a DREQ must name it
  uint32_t rq_psn = 0;                ///< first PSN we expect (our REQ's / REP's starting PSN)
  uint32_t sq_psn = 0;                ///< first PSN we send (the peer's starting PSN)
  uint32_t mtu = 1024;
  uint32_t flow_label = 0;
  uint8_t responder_resources = 1;    ///< our QP's max_dest_rd_atomic
  uint8_t initiator_depth = 1;        ///< our QP's max_rd_atomic
  uint8_t ack_timeout = 14;
  uint8_t retry_count = 7;
  /// RNR retries of our QP: the count the peer's REQ or REP asked for (as Linux's CM:
  /// the receiver knows how soon it posts receives, so each side tells the other).
  uint8_t rnr_retry_count = 7;
  bool defer_rtu = false;
  std::vector<uint8_t> peer_data;     ///< the REP's private data, or the REQ's user part

  /// Passive, until accept/reject: the request as the application sees it.
  CmRequest request;
  uint16_t listen_port = 0;
  uint8_t peer_cm_response_timeout = 0;  ///< the REQ's local CM response timeout
  uint8_t peer_max_cm_retries = 0;
  uint64_t peer_ca_guid = 0;          ///< the REQ's: a REJ withdrawing it names that CA
  bool queued = false;                ///< in its listener's queue (not yet taken by get_request)
  std::list<CmConnId>::iterator queue_pos;
  bool in_timewait_list = false;      ///< in the agent's TIMEWAIT list (the eviction order)
  std::list<CmConnId>::iterator timewait_pos;

  /// Retransmission: `sent` goes again at `deadline` while retries_left lasts.
  std::array<uint8_t, wire::cm::kMadLen> sent{};
  std::array<uint8_t, wire::cm::kMadLen> last_reply{};  ///< RTU / DREP / REJ, for duplicates
  bool has_reply = false;
  uint32_t timeout_ms = 0;            ///< per try: the REQ's (active), the REP's (passive); DREQ reuses it
  uint8_t max_retries = 0;
  uint8_t retries_left = 0;
  /// Set through CmAgent::set_deadline only: it keeps the agent's deadline-ordered timers.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool timer_armed = false;
  CmTimers::iterator timer;
};

namespace cm_mads {

/// IBTA time code (4.096 us * 2^t) to ms, as Linux cm_convert_to_ms approximates it.
constexpr uint32_t to_ms(uint8_t t) { return 1u << (t > 8 ? t - 8 : 0); }

/// IB MTU enum (1 = 256 ... 5 = 4096) <-> bytes; 0 for anything else.
uint8_t mtu_code(uint32_t bytes);
uint32_t mtu_bytes(uint8_t code);

/// rdma_cm's flow label for RoCE over IPv4 (cma_get_roce_udp_flow_label).
constexpr uint32_t flow_label(uint16_t src_port, uint16_t dst_port) {
  return (uint32_t(src_port) * 31 + dst_port) & 0xFFFFF;
}
/// The RoCEv2 UDP source port a flow label gives (rdma_flow_label_to_udp_sport); 0: none.
constexpr uint16_t udp_sport(uint32_t fl) {
  return fl ? uint16_t(0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14))) : 0;
}

/// EUI-64 from a MAC, as a RoCE port's node GUID.
uint64_t ca_guid(const uint8_t mac[6]);

/// The IPv4-mapped GID of an address (host order).
wire::cm::Gid v4_gid(uint32_t ipv4);

wire::cm::CmMad req(const CmConn& c, const CmConfig& cfg, uint64_t ca_guid,
                    std::span<const uint8_t> user_data);
wire::cm::CmMad rep(const CmConn& c, const CmConfig& cfg, uint64_t ca_guid,
                    std::span<const uint8_t> user_data);
wire::cm::CmMad rtu(const CmConn& c);
/// A REJ; ari_guid != 0 adds it as Additional Rejection Information (a REJ "timeout" names
/// the rejecting CA that way).
wire::cm::CmMad rej(uint64_t tid, uint32_t local_id, uint32_t remote_id, uint8_t msg, uint16_t reason,
                    std::span<const uint8_t> user_data = {}, uint64_t ari_guid = 0);
wire::cm::CmMad dreq(const CmConn& c);
wire::cm::CmMad drep(uint64_t tid, uint32_t local_id, uint32_t remote_id);

}  // namespace cm_mads
}  // namespace ndnic::nd
