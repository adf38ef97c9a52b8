// How make_ring_pair names what it makes, for the ports that need to find their rings again.
#pragma once

#include <string>
#include <vector>

struct rte_ring;

namespace ndnic::glue {

/// The rings a port of a make_ring_pair pair sends on, queue by queue, found by the names
/// make_ring_pair gave them, from the port's ethdev name; empty for any other port, a net_ring
/// vdev of EAL's making included.
std::vector<rte_ring*> ring_pair_tx_rings(const std::string& ethdev_name, unsigned queues);

}  // namespace ndnic::glue
