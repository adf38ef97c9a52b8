#include "tools/engine_port/engine_port.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace ndnic::engine_port {

bool EnginePort::open(const std::string& device, uint32_t ipv4, const std::string& capture) {
  glue::PortConfig pc;
  pc.device = device;
  pc.ipv4 = ipv4;
  pc.mtu = kEthMtu;
  pc.capture_path = capture;
  if (!port_.open(pc)) {
    error_ = "port " + device;
    error_.append(": ").append(port_.error());
    return false;
  }
  nic::DeviceConfig dc;
  dc.ports = {&port_};
  if (!dev_.open(dc)) {
    error_ = "device: " + dev_.error();
    return false;
  }
  dev_open_ = true;
  return true;
}

void EnginePort::close() {
  if (dev_open_) dev_.close();
  dev_open_ = false;
  port_.close();
}

bool EnginePort::resolve(uint32_t ipv4, uint8_t mac[6]) {
  rte_ether_addr m;
  if (port_.resolve_wait(ipv4, &m, kArpWaitMs) != glue::Resolve::kResolved) return false;
  std::memcpy(mac, m.addr_bytes, 6);
  return true;
}

void EnginePort::linger() {
  const auto end = std::chrono::steady_clock::now() + kLinger;
  while (std::chrono::steady_clock::now() < end) dev_.poll();
}

std::string counters_text(const nic::Qp& qp) {
  const nic::Qp::Counters c = qp.counters();
  char b[256];
  std::snprintf(b, sizeof b,
                "tx %" PRIu64 " rx %" PRIu64 " packets, retransmits %" PRIu64 ", timeouts %" PRIu64
                ", duplicates %" PRIu64 ", out of sequence %" PRIu64 ", rnr naks sent %" PRIu64,
                c.tx_packets, c.rx_packets, c.retransmits, c.timeouts, c.duplicates, c.out_of_sequence,
                c.rnr_naks_sent);
  return b;
}

}  // namespace ndnic::engine_port
