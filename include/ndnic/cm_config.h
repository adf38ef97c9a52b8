// The connection manager's settings, as an application passes them to nd::register_adapter
// (nd.h): rdma_cm's timeouts and retries, the path MTU offered, the RNR retries asked of the
// peer, and the bounds that keep a hostile peer from growing the agent's state.
#pragma once

#include <cstdint>

namespace ndnic::cm {

/// Everything has rdma_cm's default; an application changes what it needs.
struct Config {
  // Defaults are rdma_cm's (cma.c); tests shrink them.
  uint8_t cm_response_timeout = 20;  ///< CMA_CM_RESPONSE_TIMEOUT: 4.096 us * 2^20 = 4.3 s
  uint8_t max_cm_retries = 15;       ///< CMA_MAX_CM_RETRIES
  uint8_t packet_life_time = 18;     ///< CMA_IBOE_PACKET_LIFETIME (the RoCE path record's)
  uint8_t ack_timeout = 14;          ///< the path's local ACK timeout: the RC QPs' transport timer
  uint8_t retry_count = 7;           ///< RC transport retries, in the REQ
  uint8_t rnr_retry_count = 7;       ///< RNR retries we ask of the peer (REQ/REP); 7 = infinite
  uint32_t path_mtu = 1024;          ///< largest MTU we offer / accept (rxe on a 1500-byte netdev)
  uint8_t hop_limit = 64;
  uint32_t recv_depth = 64;          ///< MAD receives kept posted on QP1
  uint32_t send_depth = 64;          ///< MADs in flight on QP1
  /// Connection records (TIMEWAIT ones included) past which a REQ is dropped unanswered, so
  /// that a REQ flood cannot grow the agent's state without bound. At the cap the oldest
  /// TIMEWAIT record makes room first. connect() is not held to it: the application's own.
  uint32_t max_connections = 4096;
  /// A request nobody accepts or rejects is refused (REJ "timeout") after the REQ's sender would
  /// have given up on it, but never later than this.
  uint32_t max_request_wait_ms = 60000;
};

}  // namespace ndnic::cm
