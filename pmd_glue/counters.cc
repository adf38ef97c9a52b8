#include "ndnic/port.h"

namespace ndnic::glue {

const char* drop_name(Drop d) {
  switch (d) {
    case Drop::kRuntFrame: return "runt_frame";
    case Drop::kNotOurMac: return "not_our_mac";
    case Drop::kVlan: return "vlan";
    case Drop::kIpv6: return "ipv6";
    case Drop::kOtherEtherType: return "other_ethertype";
    case Drop::kIpHeader: return "ip_header";
    case Drop::kIpFragment: return "ip_fragment";
    case Drop::kNotUdp: return "not_udp";
    case Drop::kNotRocePort: return "not_roce_port";
    case Drop::kNotOurIp: return "not_our_ip";
    case Drop::kArpMalformed: return "arp_malformed";
    case Drop::kArpNotForUs: return "arp_not_for_us";
    case Drop::kCount: break;
  }
  return "?";
}

uint64_t PortCounters::dropped() const {
  uint64_t n = 0;
  for (uint64_t d : drops) n += d;
  return n;
}

}  // namespace ndnic::glue
