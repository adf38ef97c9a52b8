#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "ndnic/port.h"

namespace ndnic::glue {
namespace {

constexpr unsigned kRingSize = 1024;
constexpr unsigned kMaxQueues = 16;

}  // namespace

bool make_ring_pair(const std::string& name, uint16_t* port_a, uint16_t* port_b, unsigned queues) {
  const int socket = int(rte_socket_id());
  // One ring per direction and queue: A's TX queue q is B's RX queue q, and the reverse.
  if (queues == 0 || queues > kMaxQueues) return false;
  rte_ring* a_to_b[kMaxQueues];
  rte_ring* b_to_a[kMaxQueues];
  for (unsigned q = 0; q < queues; q++) {
    std::string ab = name, ba = name;
    ab.append("_ab").append(std::to_string(q));
    ba.append("_ba").append(std::to_string(q));
    a_to_b[q] = rte_ring_create(ab.c_str(), kRingSize, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    b_to_a[q] = rte_ring_create(ba.c_str(), kRingSize, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (a_to_b[q] == nullptr || b_to_a[q] == nullptr) return false;
  }
  const int a = rte_eth_from_rings((name + "_a").c_str(), b_to_a, queues, a_to_b, queues, socket);
  const int b = rte_eth_from_rings((name + "_b").c_str(), a_to_b, queues, b_to_a, queues, socket);
  if (a < 0 || b < 0) return false;
  *port_a = uint16_t(a);
  *port_b = uint16_t(b);
  return true;
}

}  // namespace ndnic::glue
