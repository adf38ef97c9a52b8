// IPv4 -> MAC for the peers a port talks to, filled by ARP. Keys live in an rte_hash; the
// position rte_hash gives each key indexes a plain array of entries, so a lookup is one hash
// probe and the entries stay in one allocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rte_ether.h>

struct rte_hash;

namespace ndnic::glue {

class NeighbourTable {
 public:
  enum class State : uint8_t { kPending, kResolved, kFailed };

  struct Entry {
    uint32_t ipv4 = 0;
    State state = State::kPending;
    rte_ether_addr mac{};
    uint32_t requests = 0;        ///< ARP requests sent in the current attempt
    uint64_t deadline_tsc = 0;    ///< pending: next request or failure; failed: end of the hold
  };

  NeighbourTable() = default;
  ~NeighbourTable();
  NeighbourTable(const NeighbourTable&) = delete;
  NeighbourTable& operator=(const NeighbourTable&) = delete;

  /// `name` must be unique in the process (rte_hash names are global).
  bool init(const std::string& name, uint32_t capacity, int socket);

  Entry* find(uint32_t ipv4);
  /// The entry for `ipv4`, created pending when absent; nullptr when the table is full.
  Entry* find_or_add(uint32_t ipv4);

  /// Calls fn(Entry&) for every pending entry.
  template <typename Fn>
  void for_each_pending(Fn&& fn) {
    for (Entry& e : entries_)
      if (e.ipv4 != 0 && e.state == State::kPending) fn(e);
  }

 private:
  rte_hash* hash_ = nullptr;
  std::vector<Entry> entries_;
};

}  // namespace ndnic::glue
