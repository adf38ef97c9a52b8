#include <string_view>

#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "ndnic/port.h"
#include "pmd_glue/ring_pair.h"

namespace ndnic::glue {
namespace {

constexpr unsigned kRingSize = 1024;
constexpr unsigned kMaxQueues = 16;

// A pair named N is the ethdevs net_ring_N_a and net_ring_N_b (rte_eth_from_rings puts the
// driver's name in front of the one it is given); queue q's ring from A to B is N_ab<q>, and
// the other way N_ba<q>.
constexpr char kEthdevPrefix[] = "net_ring_";
constexpr char kPortA[] = "_a", kPortB[] = "_b";
constexpr char kAToB[] = "_ab", kBToA[] = "_ba";

std::string ring_name(std::string_view pair, const char* direction, unsigned q) {
  return std::string(pair) + direction + std::to_string(q);
}

}  // namespace

std::vector<rte_ring*> ring_pair_tx_rings(const std::string& ethdev_name, unsigned queues) {
  std::string_view pair = ethdev_name;
  if (!pair.starts_with(kEthdevPrefix)) return {};
  pair.remove_prefix(sizeof kEthdevPrefix - 1);
  const char* direction = pair.ends_with(kPortA) ? kAToB : pair.ends_with(kPortB) ? kBToA : nullptr;
  static_assert(sizeof kPortA == sizeof kPortB);
  if (direction == nullptr || pair.size() == sizeof kPortA - 1) return {};  // no pair name before it
  pair.remove_suffix(sizeof kPortA - 1);
  std::vector<rte_ring*> rings;
  for (unsigned q = 0; q < queues; q++) {
    rte_ring* r = rte_ring_lookup(ring_name(pair, direction, q).c_str());
    if (r == nullptr) return {};
    rings.push_back(r);
  }
  return rings;
}

bool make_ring_pair(const std::string& name, uint16_t* port_a, uint16_t* port_b, unsigned queues) {
  const int socket = int(rte_socket_id());
  // One ring per direction and queue: A's TX queue q is B's RX queue q, and the reverse.
  if (queues == 0 || queues > kMaxQueues) return false;
  rte_ring* a_to_b[kMaxQueues];
  rte_ring* b_to_a[kMaxQueues];
  for (unsigned q = 0; q < queues; q++) {
    a_to_b[q] = rte_ring_create(ring_name(name, kAToB, q).c_str(), kRingSize, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    b_to_a[q] = rte_ring_create(ring_name(name, kBToA, q).c_str(), kRingSize, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (a_to_b[q] == nullptr || b_to_a[q] == nullptr) return false;
  }
  const int a = rte_eth_from_rings((name + kPortA).c_str(), b_to_a, queues, a_to_b, queues, socket);
  const int b = rte_eth_from_rings((name + kPortB).c_str(), a_to_b, queues, b_to_a, queues, socket);
  if (a < 0 || b < 0) return false;
  *port_a = uint16_t(a);
  *port_b = uint16_t(b);
  return true;
}

}  // namespace ndnic::glue
