// The RDMA side of ndperf's perftest mode: one ndnic RC QP (a raw_qp::RcSession) with
// perftest's buffer layout, QP attributes and message flow for each test, the checks of what
// arrived, and ndperf's words for what fails. The TCP side is oob.h, the order of the two
// is flow.cc.
//
// Buffer (as perftest's create_single_mr and set_up_connection): two halves of
// max(largest size, cycle buffer) bytes rounded up to the cache line; we send from and READ
// into the first, the peer WRITEs into the second, whose address is the vaddr we advertise.
// Receives land at the second half's start.
//
// What is checked where ndnic receives data (perftest fills its buffers with rand(), except
// write_lat's, which it zeroes and whose last byte it sets to the iteration count):
//  - write_lat: every byte of each size's last message (zeros, the iteration counter in the
//    last byte, the peer's stale counters at the earlier sizes' last bytes under -a), and the
//    last byte of every message, which is what both sides poll for;
//  - send_lat: each message's length, and that it holds the same bytes as the size's first
//    (perftest sends every one from the same buffer);
//  - send_bw (receiver): each message's length (perftest sends from addresses cycling through
//    its random buffer);
//  - read_bw, read_lat: that every READ of the run returned the same bytes (the peer's buffer
//    does not change), across slots and across sizes;
//  - write_bw (target): nothing the peer's random data would let us predict.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ndnic/nic.h"
#include "tools/ndperf/perftest/figures.h"
#include "tools/ndperf/perftest/oob.h"
#include "tools/ndperf/perftest/options.h"
#include "tools/raw_qp/session.h"

namespace ndnic::ndperf::perftest {

/// READs we let the peer have outstanding at our responder and the most we keep outstanding
/// towards it (ndnic's default for both; perftest asks the device, rxe says 128).
constexpr uint16_t kOutReads = 16;
constexpr uint32_t kDefaultTxDepth = 128;  ///< DEF_TX_BW
constexpr uint32_t kDefaultRxDepth = 512;  ///< DEF_RX_SEND
constexpr uint32_t kDefaultCqMod = 100;    ///< DEF_CQ_MOD

class Rdma {
 public:
  explicit Rdma(const PerftestOptions& o);

  /// The port and the device: before the TCP exchange, so ARP is answered from the start.
  bool open_port();
  /// Buffer, CQs, QP in INIT, from what the TCP setup agreed.
  bool create(const Channel::Agreed& agreed);
  const Dest& local() const { return local_; }
  /// RTR then RTS towards the peer (the peer's IPv4 from its GID, else from TCP).
  bool connect(const Dest& peer, uint32_t tcp_ipv4);

  /// One round of the engine, for waits elsewhere (the TCP side).
  void poll() { qp_.poll(); }
  /// Keeps answering for a moment after the last message (the peer may still need an ACK).
  void linger() { qp_.linger(); }

  /// send_bw receiver: posts this size's first receives (before the size's barrier).
  bool post_first_receives(uint32_t size);
  /// The traffic of one size; rows for the table. False (with a message on stderr) on an
  /// error completion, a stall, or data that is not what it should be.
  bool bw_requester(uint32_t size, BwSamples* out);
  bool send_bw_receiver(uint32_t size, BwSamples* out);
  bool send_lat(uint32_t size, bool client, LatSamples* out);
  bool write_lat(uint32_t size, bool client, LatSamples* out);
  bool read_lat(uint32_t size, LatSamples* out);

  /// One line of transport counters, for the log.
  std::string counters() const { return qp_.counters(); }

 private:
  void say(const raw_qp::Failure& f) const;
  uint8_t* send_area() { return qp_.buf(); }
  uint8_t* peer_area() { return qp_.buf() + half_; }
  bool post_recv(uint32_t size);
  bool post(nic::WrOpcode op, uint32_t size, uint64_t local_addr, uint64_t wr_id);
  bool wait_send_completion(nic::Completion* c);
  bool check_reads(uint32_t size, uint32_t slots, uint32_t stride);

  PerftestOptions opts_;
  raw_qp::RcSession qp_;
  uint64_t half_ = 0, buf_size_ = 0;
  uint32_t cache_line_ = kDefaultCacheLine;
  uint32_t cycle_buffer_ = kDefaultCycleBuffer;
  Dest local_;
  Dest peer_;
  uint32_t recvs_posted_ = 0;         ///< this size's receives posted so far
  std::vector<uint8_t> reference_;    ///< send_lat: the size's first message; reads: the peer's bytes
  std::vector<uint8_t> stale_;        ///< write_lat: the peer's stale counter byte per position (-a)
  std::vector<bool> stale_set_;
};

}  // namespace ndnic::ndperf::perftest
