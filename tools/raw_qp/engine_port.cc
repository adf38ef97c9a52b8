#include "tools/raw_qp/engine_port.h"

#include <cstring>

namespace ndnic::raw_qp {

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

}  // namespace ndnic::raw_qp
