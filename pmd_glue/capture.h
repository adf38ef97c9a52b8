// The capture switch: every frame a port sends or receives, appended to a pcap file that
// Wireshark reads as it reads a capture of kernel RDMA traffic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rte_spinlock.h>

#include "ndnic/wire/pcap_file.h"

struct rte_mbuf;

namespace ndnic::glue {

class Capture {
 public:
  bool open(const std::string& path);

  /// Appends received frames.
  bool write(rte_mbuf* const* pkts, uint16_t n);

  /// TX is captured in two steps because a frame handed to the PMD may be freed (or, on an
  /// in-process ring, read by the peer) before tx_burst returns: stage() copies the frames
  /// first, commit() writes the ones the PMD accepted, so retried frames are not recorded twice.
  void stage(rte_mbuf* const* pkts, uint16_t n);
  bool commit(uint16_t accepted);

 private:
  bool append(const rte_mbuf* m, std::vector<uint8_t>* scratch);

  rte_spinlock_t lock_ = RTE_SPINLOCK_INITIALIZER;  ///< queues polled from several lcores
  wire::PcapWriter writer_;
  std::vector<std::vector<uint8_t>> staged_;
  uint16_t staged_n_ = 0;
  std::vector<uint8_t> rx_scratch_;
};

}  // namespace ndnic::glue
