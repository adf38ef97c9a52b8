// The baselines' frames: plain Ethernet/IPv4/UDP, sent and received through the same
// glue::Port bursts the RDMA engine uses, with no RDMA processing (no BTH, no ICRC, no
// transport). Their destination is UDP port 4791, so the port's classifier hands them over
// exactly as it hands over RoCE frames. A message of S bytes travels as ceil(S / MTU) frames
// of at most MTU payload bytes, as many as the RDMA tests' packets. Data frames carry only the
// message's bytes; the few control frames (a handshake per size) come from another UDP source
// port and carry a RawCtl.
#pragma once

#include <cstddef>
#include <cstdint>

#include <rte_ether.h>

struct rte_mbuf;

namespace ndnic::glue {
class Port;
}

namespace ndnic::ndperf {

constexpr uint16_t kRawDataPort = 0x2A00;  ///< UDP source port of data frames
constexpr uint16_t kRawCtlPort = 0x2A01;   ///< ... and of control frames
constexpr uint16_t kRawBurst = 32;

enum class RawType : uint8_t { kHello = 1, kReady, kStart, kStarted, kEnd, kEndAck, kBye, kByeAck };

/// A control frame's payload (host order; both ends are this program on x86).
struct RawCtl {
  uint32_t magic = 0;
  RawType type = RawType::kHello;
  uint8_t echo = 0;      ///< kStart: the server sends every message back (raw_lat)
  uint16_t reserved = 0;
  uint32_t seq = 0;      ///< the request's number; answers repeat it
  uint32_t size = 0;     ///< kStart: the message size
  uint32_t mtu = 0;      ///< kStart: payload bytes per frame
  uint64_t count = 0;    ///< kEnd: frames sent; kEndAck: frames received
  uint64_t aux = 0;      ///< kEndAck: 1 when the last message's bytes checked out
};
constexpr uint32_t kRawMagic = 0x4E445257;  // "NDRW"

/// Addressing of one direction: our MAC and IPv4 as source, the peer's as destination.
struct RawPath {
  rte_ether_addr src_mac{}, dst_mac{};
  uint32_t src_ip = 0, dst_ip = 0;  ///< host order
};

inline uint32_t frames_for(uint32_t size, uint32_t mtu) { return (size + mtu - 1) / mtu; }

/// Builds one frame: headers for `path` from UDP source port `sport`, then `len` payload bytes.
/// nullptr when the mempool is empty.
rte_mbuf* build_frame(glue::Port& port, const RawPath& path, uint16_t sport, const uint8_t* payload, size_t len);

/// The UDP payload of a received frame that passed the port's classifier, and its source.
struct RawFrame {
  uint16_t sport = 0;
  const uint8_t* payload = nullptr;
  size_t len = 0;
  rte_ether_addr src_mac{};
  uint32_t src_ip = 0;
};
bool parse_frame(rte_mbuf* m, RawFrame* out);

/// Sends every frame, spinning while the port is full (its peer drains it). False when the
/// port took nothing for a second (the peer is gone): the frames left are freed.
bool send_all(glue::Port& port, uint16_t queue, rte_mbuf** frames, uint16_t n);

}  // namespace ndnic::ndperf
