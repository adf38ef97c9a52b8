// A DPDK port with an IPv4 address and an ndnic device that the program's own thread polls (no
// worker lcore): what an RcSession (session.h) runs on. ND programs use tools/nd_app instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "ndnic/nic.h"
#include "ndnic/port.h"

namespace ndnic::raw_qp {

constexpr uint16_t kEthMtu = 1500;  ///< the port's Ethernet MTU (rxe's netdev, af_packet's)
/// The largest RoCEv2 header stack around a payload on IPv4: IP, UDP, BTH, RETH, pad, ICRC.
constexpr uint32_t kRoceOverhead = 20 + 8 + 12 + 16 + 3 + 4;
constexpr uint32_t kArpWaitMs = 3000;  ///< a peer that does not answer ARP in this fails at once
/// After the last completion the peer may still need our ACK of its last message (ours could be
/// lost or still queued) or retransmit a request: a NIC keeps answering after the program's loop
/// ends, a little longer than rxe's first retransmission (~67 ms at timeout 14).
constexpr auto kLinger = std::chrono::milliseconds(300);

/// Whether a path MTU's packets fit the port's Ethernet MTU.
constexpr bool mtu_fits(uint32_t path_mtu) { return path_mtu + kRoceOverhead <= kEthMtu; }

class EnginePort {
 public:
  EnginePort() = default;
  EnginePort(const EnginePort&) = delete;
  EnginePort& operator=(const EnginePort&) = delete;
  /// Closes the device: its owner destroys its QPs, CQs and regions first.
  ~EnginePort() { close(); }

  /// The port (`device`: ethdev port or vdev; `capture`: a pcap path or empty) and the device on
  /// it. False with error() set.
  bool open(const std::string& device, uint32_t ipv4, const std::string& capture);
  void close();
  /// The peer's MAC by ARP, waiting up to kArpWaitMs; false when nobody answered.
  bool resolve(uint32_t ipv4, uint8_t mac[6]);
  /// One round of the engine (and so of the port's ARP).
  void poll() { dev_.poll(); }
  /// Keeps the engine answering for kLinger.
  void linger();

  nic::Device& dev() { return dev_; }
  const nic::Device& dev() const { return dev_; }
  glue::Port& port() { return port_; }
  const std::string& error() const { return error_; }

 private:
  glue::Port port_;
  nic::Device dev_;
  bool dev_open_ = false;
  std::string error_;
};

}  // namespace ndnic::raw_qp
