// Fault injection on the packet path: drop, duplicate, reorder and corrupt frames at given
// rates, per direction, from a seed. Off by default; when off the engine's cost is one
// pointer test per burst.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

struct rte_mbuf;
struct rte_mempool;

namespace ndnic::nic {

struct FaultRates {
  double drop = 0;        ///< probability a frame is discarded
  double duplicate = 0;   ///< probability a frame is sent twice
  double reorder = 0;     ///< probability a frame is held back and released after later ones
  double corrupt = 0;     ///< probability one byte of a frame is flipped (the ICRC catches it)
  bool any() const { return drop > 0 || duplicate > 0 || reorder > 0 || corrupt > 0; }
};

struct FaultConfig {
  uint64_t seed = 1;
  FaultRates rx;          ///< applied to received bursts
  FaultRates tx;          ///< applied to bursts before they go to the port
};

struct FaultCounters {
  uint64_t frames = 0;
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
};

/// One direction's switch. apply() rewrites a burst in place: it may shorten it (drops, frames
/// held back for reordering), lengthen it up to `cap` (duplicates, released frames), and flip
/// bytes. Duplicates are copies from `pool`; a held-back frame is released within
/// kMaxHoldBursts bursts, so nothing is held forever.
class FaultSwitch {
 public:
  static constexpr unsigned kMaxHoldBursts = 4;

  FaultSwitch(const FaultRates& rates, uint64_t seed);
  ~FaultSwitch();
  /// Returns the new burst length.
  uint16_t apply(rte_mbuf** pkts, uint16_t n, uint16_t cap, rte_mempool* pool);
  /// Frames still held back (freed by the destructor).
  size_t held() const;
  const FaultCounters& counters() const { return counters_; }

 private:
  FaultRates rates_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  struct Held {
    rte_mbuf* m;
    unsigned bursts_left;
  };
  std::vector<Held> held_;
  FaultCounters counters_;
};

}  // namespace ndnic::nic
