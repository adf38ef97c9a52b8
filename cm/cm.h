// The IB CM's vocabulary, shared by the agent's API (agent.h) and the state machine under it:
// connection states, the events an application hears, an incoming request, the parameters of
// connect() and accept(). The agent's configuration is public (ndnic/cm_config.h), as the
// application passes it to nd::register_adapter. Pure C++: no DPDK, no device.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ndnic/cm_config.h"
#include "wire/cm_mad.h"

namespace ndnic::nic {
class Qp;
}

namespace ndnic::cm {

/// Our local communication ID: the handle of one connection, active or passive.
using ConnId = uint32_t;

/// User private data each message can carry: the REQ loses rdma_cm's header to it.
constexpr size_t kConnectDataLen = wire::cm::kReqPrivateDataLen - wire::cm::kCmaHdrLen;  // 56
constexpr size_t kAcceptDataLen = wire::cm::kRepPrivateDataLen;   // 196
constexpr size_t kRejectDataLen = wire::cm::kRejPrivateDataLen;   // 148

/// A test's hook on MAD I/O (Agent's constructor): a MAD for which it returns true is not
/// sent (counted as dropped). Runs under the agent's lock: it must not call the agent.
using DropTx = std::function<bool(const wire::cm::CmMad&)>;

/// Connection states, named as Linux ib_cm names them (IB_CM_*).
enum class State : uint8_t {
  kIdle,          ///< unknown, finished, or never started
  kReqSent,
  kMraReqRcvd,    ///< the peer asked for more time to answer our REQ
  kReqRcvd,       ///< a request waiting for accept() / reject()
  kRepSent,
  kMraRepRcvd,
  kRepRcvd,       ///< REP in, RTU deferred to complete_connect()
  kEstablished,
  kDreqSent,
  kDreqRcvd,
  kTimewait,      ///< over; kept a while to answer the peer's retransmissions
};
const char* state_name(State s);

enum class EventKind : uint8_t {
  kConnectResponse,  ///< active, defer_rtu: REP in, QP in RTR; call complete_connect()
  kEstablished,      ///< both sides: the QP is in RTS (active: RTU sent; passive: RTU in)
  kRejected,         ///< the peer's consumer rejected (REJ reason 28): private_data is its
  kRefused,          ///< any other REJ (8 = nobody listens on that port): reject_reason
  kTimeout,          ///< no answer after max_cm_retries (REQ, or REP on the passive side)
  kUnreachable,      ///< the peer's address did not resolve (ARP unanswered)
  kError,            ///< a local failure (the QP refused a transition)
  kDisconnected,     ///< DREQ in, or the transport failed (peer gone); the QP is in ERROR (ND NotifyDisconnect)
  kDisconnectDone,   ///< our disconnect() finished (DREP in, or DREQ retries exhausted)
};
const char* event_name(EventKind k);

struct Event {
  EventKind kind;
  ConnId conn = 0;
  uint16_t reject_reason = 0;         ///< kRejected / kRefused: the REJ's reason
  std::vector<uint8_t> private_data;  ///< the REP's (established / response) or REJ's
};
using Callback = std::function<void(const Event&)>;

/// An incoming connection request (a REQ to a port we listen on), waiting for accept/reject.
struct Request {
  ConnId conn = 0;
  uint16_t listen_port = 0;
  uint32_t local_ipv4 = 0;            ///< host order, from the rdma_cm header
  uint32_t peer_ipv4 = 0;
  uint16_t peer_port = 0;             ///< the active side's rdma_cm source port
  uint32_t peer_qpn = 0;
  uint32_t peer_starting_psn = 0;     ///< the PSN our QP will send from (REQ semantics)
  uint8_t responder_resources = 0;    ///< READs the peer lets us have outstanding at it
  uint8_t initiator_depth = 0;        ///< READs the peer wants outstanding at us
  uint32_t path_mtu = 0;              ///< bytes
  std::vector<uint8_t> private_data;  ///< kConnectDataLen bytes (the REQ's, minus rdma_cm's header)
};

struct ConnectParams {
  nic::Qp* qp = nullptr;              ///< an RC QP in RESET or INIT
  uint32_t dest_ipv4 = 0;             ///< host order
  uint16_t dest_port = 0;
  uint16_t src_port = 0;              ///< 0: a random ephemeral port, as rdma_cm binds
  std::span<const uint8_t> private_data;  ///< at most kConnectDataLen
  uint8_t responder_resources = 1;    ///< READs the peer may have outstanding at us (ND inbound limit)
  uint8_t initiator_depth = 1;        ///< READs we want outstanding at the peer (ND outbound limit)
  bool defer_rtu = false;             ///< stop at kConnectResponse (ND Connect / CompleteConnect)
};

struct AcceptParams {
  nic::Qp* qp = nullptr;              ///< an RC QP in RESET or INIT
  std::span<const uint8_t> private_data;  ///< at most kAcceptDataLen
  uint8_t responder_resources = 1;    ///< clamped to the REQ's initiator depth
  uint8_t initiator_depth = 1;        ///< clamped to the REQ's responder resources
};

/// What the agent counts: MAD I/O's and the state machine's together.
struct Counters {
  uint64_t mads_sent = 0, mads_received = 0;
  uint64_t retransmits = 0;      ///< REQ / REP / DREQ sent again on timeout
  uint64_t duplicates = 0;       ///< duplicate REQ / REP / DREQ answered again
  uint64_t dropped_tx = 0;       ///< no free send slot, or the drop_tx hook
  /// Receives that did not decode, or for no connection of ours: unknown comm IDs, or not
  /// from the connection's peer with its comm ID (and, for a DREQ, our QPN).
  uint64_t bad_mads = 0;
  uint64_t rejects_sent = 0;
  uint64_t requests_dropped = 0;  ///< REQs not queued: the backlog or max_connections was full
  uint64_t requests_expired = 0;  ///< requests never answered by the application, refused
};

}  // namespace ndnic::cm
