// GIDs as RoCEv2 uses them on IPv4: ::ffff:a.b.c.d. Both raw-QP tools advertise one and take
// the peer's IPv4 address from the one it advertises.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ndnic::raw_qp {

using Gid = std::array<uint8_t, 16>;

/// ::ffff:a.b.c.d for an IPv4 address in host order.
Gid ipv4_mapped_gid(uint32_t ipv4);
/// The IPv4 address (host order) of an IPv4-mapped GID, or nothing.
std::optional<uint32_t> gid_ipv4(const Gid& gid);
/// As inet_ntop(AF_INET6) prints it: "::ffff:198.18.0.3", "::".
std::string gid_text(const Gid& gid);

}  // namespace ndnic::raw_qp
