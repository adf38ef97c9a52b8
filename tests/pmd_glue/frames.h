// The RoCEv2 frames the integration tests send through each PMD, and the checks the far side
// runs on what arrives: every field, every payload byte, and the ICRC (by decoding).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rte_ether.h>

#include "ndnic/port.h"
#include "ndnic/wire/packet.h"

namespace ndnic::itest {

struct Endpoints {
  rte_ether_addr src_mac, dst_mac;
  uint32_t src_ip, dst_ip;   ///< host order
};

/// The test set: several opcodes (SEND, WRITE with RETH, READ request/response, ACK, atomics,
/// SEND with invalidate) and payload sizes (0, unaligned, up to 1024), PSNs 1..n.
std::vector<wire::RocePacket> request_set(const Endpoints& ep);

/// One ACK per request, same PSN, for the replies.
wire::RocePacket ack_for(const wire::RocePacket& request, const Endpoints& ep);

/// Encodes into an mbuf from `pool`; nullptr when the pool is empty.
rte_mbuf* to_mbuf(const wire::RocePacket& p, rte_mempool* pool);

/// Empty when `m` decodes (ICRC included) to exactly `want`; otherwise what differs.
std::string check_frame(const rte_mbuf* m, const wire::RocePacket& want);
std::string check_bytes(const uint8_t* frame, size_t len, const wire::RocePacket& want);

/// Sends all, retrying while the PMD's ring is full; false after `timeout_ms`.
bool send_all(glue::Port& port, const std::vector<wire::RocePacket>& pkts, uint32_t timeout_ms);

/// Receives `want.size()` frames and checks each in order; prints one line per mismatch.
/// `also` is polled too (the other port of an in-process pair), so it can answer ARP.
bool receive_and_check(glue::Port& port, const std::vector<wire::RocePacket>& want,
                       uint32_t timeout_ms, const char* who, glue::Port* also = nullptr);

std::string mac_str(const rte_ether_addr& mac);
std::string ip_str(uint32_t ip);
bool parse_ip(const std::string& s, uint32_t* ip);
void print_counters(const char* who, const glue::Port& port);

}  // namespace ndnic::itest
