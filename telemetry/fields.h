// The counters by name, in one place: the telemetry replies and the text table print the same
// fields under the same names (and a device's address the same way).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ndnic/nic.h"
#include "ndnic/port.h"

namespace ndnic::telemetry {

using Field = std::pair<const char*, uint64_t>;

/// "198.18.0.1" from a host-order address.
inline std::string ipv4_text(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
         std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

/// The AETH NAK codes 0..3 (Qp::Counters::naks_sent/naks_received index them).
constexpr const char* kNakKinds[4] = {"psn_sequence", "invalid_request", "remote_access",
                                      "remote_operation"};

/// The counters a table names, in its order.
template <class C, size_t N>
std::vector<Field> fields_of(const C& c, const glue::CounterField (&table)[N]) {
  std::vector<Field> v;
  v.reserve(N + 1);
  for (const glue::CounterField& f : table) v.emplace_back(f.name, glue::counter_value(c, f));
  return v;
}

inline std::vector<Field> port_fields(const glue::PortCounters& c) {
  std::vector<Field> v = fields_of(c, glue::kPortCounterFields);
  v.emplace_back("rx_dropped", c.dropped());
  return v;
}

/// Every reason, zero or not: a script sees the same keys each time.
inline std::vector<Field> port_drops(const glue::PortCounters& c) {
  std::vector<Field> v;
  for (size_t i = 0; i < size_t(glue::Drop::kCount); i++)
    v.emplace_back(glue::drop_name(glue::Drop(i)), c.drops[i]);
  return v;
}

inline std::vector<Field> engine_fields(const nic::Device::Counters& c) {
  return fields_of(c, nic::Device::kCounterFields);
}

inline std::vector<Field> engine_rejects(const nic::Device::Counters& c) {
  std::vector<Field> v;
  // From 1: Reject::kOk is no reason.
  for (size_t i = 1; i < size_t(wire::Reject::kCount); i++)
    v.emplace_back(wire::reject_name(wire::Reject(i)), c.rejects.count[i]);
  return v;
}

/// A QP's counters without the per-kind arrays and drops (qp_naks, qp_drops).
inline std::vector<Field> qp_fields(const nic::QpCounters& c) { return fields_of(c, nic::kQpCounterFields); }

inline std::vector<Field> qp_naks(const uint64_t (&naks)[4]) {
  return {{kNakKinds[0], naks[0]}, {kNakKinds[1], naks[1]}, {kNakKinds[2], naks[2]}, {kNakKinds[3], naks[3]}};
}

/// UD datagrams a QP dropped, by reason (RC QPs drop nothing themselves: they NAK).
inline std::vector<Field> qp_drops(const nic::QpCounters& c) {
  return {{"wrong_qkey", c.qkey_drops}, {"no_receive", c.no_recv_drops}};
}

}  // namespace ndnic::telemetry
