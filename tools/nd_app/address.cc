#include "tools/nd_app/address.h"

#include <arpa/inet.h>

namespace ndnic::nd_app {

sockaddr_in ipv4_sockaddr(uint32_t ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(ip);
  return sa;
}

}  // namespace ndnic::nd_app
