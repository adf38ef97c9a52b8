#include "wire/rx_flow_cache.h"

namespace ndnic::wire {

void RxFlowCache::learn(const uint8_t* frame, const IcrcFlow& flow, const RocePacket& p) {
  RxFlow& e = take(flow);
  for (size_t i = 0; i < RxFlow::kHeadWords; i++) {
    uint64_t w;
    std::memcpy(&w, frame + RxFlow::kHeadWordAt[i], 8);
    e.head[i] = w & RxFlow::kHeadMask[i];
  }
  // The IPv4 header's words but total length (2), identification (4) and checksum (10).
  const uint8_t* l3 = frame + kEthHdrLen;
  uint32_t sum = 0;
  for (const size_t at : {0, 6, 8, 12, 14, 16, 18}) {
    uint16_t w;
    std::memcpy(&w, l3 + at, 2);
    sum += w;
  }
  e.ip_fixed_sum = sum;
  e.eth = p.eth;
  e.ip4 = p.ip4;
  e.udp = p.udp;
  e.known = true;
}

}  // namespace ndnic::wire
