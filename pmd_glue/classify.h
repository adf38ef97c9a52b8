// Sorting a received frame: RoCEv2 for us, ARP, or a counted drop. Reads only the headers, with
// rte_pktmbuf_read, so a frame split across segments is sorted like a contiguous one.
#pragma once

#include <cstdint>

#include "ndnic/port.h"

namespace ndnic::glue {

enum class Verdict : uint8_t { kRoce, kArp, kDrop };

struct Classified {
  Verdict verdict;
  Drop drop;          ///< when verdict == kDrop
};

struct Identity {
  rte_ether_addr mac;
  uint32_t ipv4;      ///< host order; 0 accepts any destination address
  bool promiscuous;   ///< skip the destination MAC check
};

/// Reads the frame and writes nothing into its mbuf (the transport finds its headers itself).
/// The usual RoCEv2 frame is recognised in place; any other goes through classify_full().
Classified classify(const rte_mbuf* m, const Identity& us);
/// The same verdict, every frame taken header by header.
Classified classify_full(const rte_mbuf* m, const Identity& us);

}  // namespace ndnic::glue
