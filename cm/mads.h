// The CM MADs a connection sends, built from its record as Linux ib_cm / rdma_cm build them on
// RoCE, and the IBTA encodings they use (time codes, MTU codes, flow labels, GIDs).
#pragma once

#include <cstdint>
#include <span>

#include "cm/cm.h"
#include "cm/connection.h"
#include "wire/cm_mad.h"

namespace ndnic::cm::mads {

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

wire::cm::CmMad req(const Connection& c, const Config& cfg, uint64_t ca_guid,
                    std::span<const uint8_t> user_data);
wire::cm::CmMad rep(const Connection& c, const Config& cfg, uint64_t ca_guid,
                    std::span<const uint8_t> user_data);
wire::cm::CmMad rtu(const Connection& c);
/// A REJ; ari_guid != 0 adds it as Additional Rejection Information (a REJ "timeout" names
/// the rejecting CA that way).
wire::cm::CmMad rej(uint64_t tid, uint32_t local_id, uint32_t remote_id, uint8_t msg, uint16_t reason,
                    std::span<const uint8_t> user_data = {}, uint64_t ari_guid = 0);
wire::cm::CmMad dreq(const Connection& c);
wire::cm::CmMad drep(uint64_t tid, uint32_t local_id, uint32_t remote_id);

}  // namespace ndnic::cm::mads
