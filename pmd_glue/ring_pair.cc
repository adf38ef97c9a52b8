#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "pmd_glue/pmd_glue.h"

namespace ndnic::glue {
namespace {

constexpr unsigned kRingSize = 1024;

}  // namespace

bool make_ring_pair(const std::string& name, uint16_t* port_a, uint16_t* port_b) {
  const int socket = int(rte_socket_id());
  // One ring per direction: each port enqueues on one and dequeues from the other.
  rte_ring* a_to_b = rte_ring_create((name + "_ab").c_str(), kRingSize, socket,
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* b_to_a = rte_ring_create((name + "_ba").c_str(), kRingSize, socket,
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (a_to_b == nullptr || b_to_a == nullptr) return false;
  const int a = rte_eth_from_rings((name + "_a").c_str(), &b_to_a, 1, &a_to_b, 1, socket);
  const int b = rte_eth_from_rings((name + "_b").c_str(), &a_to_b, 1, &b_to_a, 1, socket);
  if (a < 0 || b < 0) return false;
  *port_a = uint16_t(a);
  *port_b = uint16_t(b);
  return true;
}

}  // namespace ndnic::glue
