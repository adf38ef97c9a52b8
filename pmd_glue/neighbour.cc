#include "pmd_glue/neighbour.h"

#include <rte_hash.h>
#include <rte_hash_crc.h>

namespace ndnic::glue {

NeighbourTable::~NeighbourTable() { rte_hash_free(hash_); }

bool NeighbourTable::init(const std::string& name, uint32_t capacity, int socket) {
  rte_hash_parameters params{};
  params.name = name.c_str();
  params.entries = capacity;
  params.key_len = sizeof(uint32_t);
  params.hash_func = rte_hash_crc;
  params.socket_id = socket;
  hash_ = rte_hash_create(&params);
  if (hash_ == nullptr) return false;
  // rte_hash hands out positions up to its own rounded-up capacity.
  entries_.resize(rte_hash_max_key_id(hash_) + 1);
  return true;
}

NeighbourTable::Entry* NeighbourTable::find(uint32_t ipv4) {
  const int32_t pos = rte_hash_lookup(hash_, &ipv4);
  return pos < 0 ? nullptr : &entries_[pos];
}

NeighbourTable::Entry* NeighbourTable::find_or_add(uint32_t ipv4) {
  if (Entry* e = find(ipv4)) return e;
  const int32_t pos = rte_hash_add_key(hash_, &ipv4);
  if (pos < 0 || size_t(pos) >= entries_.size()) return nullptr;
  entries_[pos] = Entry{};
  entries_[pos].ipv4 = ipv4;
  return &entries_[pos];
}

}  // namespace ndnic::glue
