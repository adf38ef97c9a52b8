#include "tools/raw_qp/gid.h"

#include <arpa/inet.h>

namespace ndnic::raw_qp {

Gid ipv4_mapped_gid(uint32_t ipv4) {
  Gid g{};
  g[10] = g[11] = 0xff;
  for (int i = 0; i < 4; i++) g[size_t(12 + i)] = uint8_t(ipv4 >> (24 - 8 * i));
  return g;
}

std::optional<uint32_t> gid_ipv4(const Gid& gid) {
  for (int i = 0; i < 10; i++)
    if (gid[size_t(i)] != 0) return std::nullopt;
  if (gid[10] != 0xff || gid[11] != 0xff) return std::nullopt;
  return uint32_t(gid[12]) << 24 | uint32_t(gid[13]) << 16 | uint32_t(gid[14]) << 8 | gid[15];
}

std::string gid_text(const Gid& gid) {
  char b[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, gid.data(), b, sizeof b);
  return b;
}

}  // namespace ndnic::raw_qp
