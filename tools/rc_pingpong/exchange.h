// The out-of-band exchange of rdma-core's ibv_rc_pingpong: over TCP, each side sends its
// address as "LID:QPN:PSN:GID" (`%04x:%06x:%06x:` and the GID as 32 hex digits, 52 bytes with
// the NUL). The client writes first, reads the server's, then writes "done" (5 bytes with the
// NUL). The server reads the client's, connects its QP (so it is ready before the client can
// send), writes its own and waits for "done".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tools/raw_qp/gid.h"

namespace ndnic::rc_pingpong {

struct Dest {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  raw_qp::Gid gid{};
};

/// The 52-byte message, NUL included, and its parser (nothing for a malformed message).
std::string to_wire(const Dest& d);
std::optional<Dest> from_wire(const char* msg, size_t len);

/// Called while the exchange waits on the network: the peer resolves our address (ARP) while
/// it connects its QP, in the middle of the exchange, so the port must keep being polled.
using Idle = std::function<void()>;

struct Peer {
  Dest dest;
  uint32_t tcp_ipv4 = 0;  ///< the address the TCP connection came from or went to (host order)
};

/// Client side. Retries the connection for up to retry_s seconds while nobody listens
/// (0: one attempt, as ibv_rc_pingpong). Errors go to stderr.
std::optional<Peer> client_exchange(const std::string& host, uint16_t port, const Dest& mine,
                                    unsigned retry_s, const Idle& idle);

/// Server side: `connect` runs between reading the client's address and writing ours; its
/// false aborts the exchange.
std::optional<Peer> server_exchange(uint16_t port, const Dest& mine,
                                    const std::function<bool(const Peer&)>& connect, const Idle& idle);

}  // namespace ndnic::rc_pingpong
