// One side of the cross-process test: a port, an ndnic Device polled by this thread, one
// registered buffer and kQps RC QPs, and the checks' bookkeeping.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nic/fault.h"
#include "ndnic/nic.h"
#include "ndnic/port.h"
#include "tests/nic/xproc/scenario.h"
#include "tests/nic/xproc/side_channel.h"

namespace ndnic::nic::xproc {

struct Options {
  std::string role;         ///< "server" or "client"
  std::string device;       ///< the EAL vdev name, e.g. net_vhost0
  uint32_t ip = 0, peer_ip = 0;
  std::string channel;      ///< the side channel's socket path
  std::string capture;      ///< optional pcap of every frame
  double faults = 0;        ///< drop/duplicate/reorder/corrupt rate on our TX
  int watchdog_s = 60;
  uint32_t bulk_pieces = 1;  ///< client: the 1 MiB WRITE and READ as this many messages each
};

/// What the peer needs to reach our QPs and memory.
struct Endpoint {
  uint32_t qpn[kQps] = {}, psn[kQps] = {};
  uint64_t addr = 0;
  uint32_t rkey = 0;
  std::string line() const;
  bool parse(const std::string& line);
};

/// Records the first failure; the phases stop at it and main() reports it.
struct Failure {
  std::string what;
  bool operator()(const std::string& why) {
    if (what.empty()) what = why;
    return false;
  }
};

class Peer {
 public:
  bool open(const Options& o);
  void close();
  Endpoint local() const;
  bool connect(const Endpoint& remote);

  void poll() { dev_.poll(); }
  Idle idle() { return [this] { dev_.poll(); }; }
  /// Polls until `n` completions arrived on `cq`, or `ms` passed.
  bool wait(Cq* cq, size_t n, std::vector<Completion>* out, int ms);

  uint8_t* mem(uint32_t q, uint64_t off) { return buf_.data() + q * kRegion + off; }
  Sge sge(uint32_t q, uint64_t off, uint32_t len) {
    return {reinterpret_cast<uint64_t>(mem(q, off)), len, mr_.lkey};
  }
  RecvWr recv_wr(uint32_t q, uint64_t off, uint32_t len, uint64_t wr_id);

  Qp* qp(uint32_t q) { return qp_[q]; }
  Cq* scq(uint32_t q) { return scq_[q]; }
  Cq* rcq(uint32_t q) { return rcq_[q]; }
  const Endpoint& remote() const { return remote_; }
  /// One line per QP: packets, retransmissions, timeouts, NAKs, duplicates.
  void print_counters(const char* who);

  Failure fail;

 private:
  glue::Port port_;
  Device dev_;
  std::vector<uint8_t> buf_;
  MrKeys mr_;
  Qp* qp_[kQps] = {};
  Cq* scq_[kQps] = {};
  Cq* rcq_[kQps] = {};
  uint32_t psn_base_ = 0;
  uint32_t peer_ip_ = 0;
  Endpoint remote_;
  FaultConfig faults_;
};

bool run_server(Peer& p, SideChannel& ch);
bool run_client(Peer& p, SideChannel& ch, uint32_t bulk_pieces);

}  // namespace ndnic::nic::xproc
