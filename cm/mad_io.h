// MAD I/O on QP1 (the GSI QP) of one device: the UD QP with its two CQs, one registered buffer
// of MAD slots (recv_depth receive slots, then send_depth send slots), receives kept posted,
// MADs sent to a peer's QP1 by IPv4 address, completions drained into decoded MADs and send
// errors. Not thread-safe: the agent calls it under its lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cm/cm.h"
#include "ndnic/nic.h"
#include "wire/cm_mad.h"

namespace ndnic::cm {

class MadIo {
 public:
  /// Uses cfg's recv_depth, send_depth and path_mtu; drop_tx: a test's hook, or none.
  MadIo(nic::Device& dev, const Config& cfg, DropTx drop_tx = {});
  ~MadIo() { close(); }
  MadIo(const MadIo&) = delete;
  MadIo& operator=(const MadIo&) = delete;

  /// Creates QP1, its CQs and buffer and posts the receives; false (error set) when it cannot.
  bool open(std::string* error);
  /// Destroys QP1, its CQs and buffer; MADs in flight are lost.
  void close();
  /// Whether QP1 is up.
  bool is_open() const { return qp1_ != nullptr; }
  /// The CQs' event fds, to sleep on.
  int recv_fd() const { return recv_cq_->event_fd(); }
  int send_fd() const { return send_cq_->event_fd(); }
  /// Asks both CQs for an event on their next completion.
  void arm();

  /// Sends one encoded MAD (kMadLen bytes) to a peer's QP1; `owner` comes back with a send
  /// error. Dropped (counted) with no free send slot or when the drop_tx hook says so.
  void send(uint32_t dest_ipv4, const uint8_t* mad, ConnId owner);
  /// Handles the receive completions: each MAD that decodes goes to `on_mad` (source IPv4,
  /// MAD), then its slot is posted again. Returns the completions seen.
  unsigned drain_recv(const std::function<void(uint32_t, const wire::cm::CmMad&)>& on_mad);
  /// Frees the slots of finished sends; the owner of each that failed goes to `on_error`.
  unsigned drain_send(const std::function<void(ConnId)>& on_error);

  /// mads_sent, mads_received, dropped_tx, and bad_mads for receives that did not decode.
  const Counters& counters() const { return counters_; }

 private:
  void post_recv(uint32_t slot);

  nic::Device& dev_;
  uint32_t recv_depth_, send_depth_, path_mtu_;
  DropTx drop_tx_;
  Counters counters_;
  uint32_t pd_ = 0;
  nic::Cq* send_cq_ = nullptr;
  nic::Cq* recv_cq_ = nullptr;
  nic::Qp* qp1_ = nullptr;
  std::vector<uint8_t> buf_;
  nic::MrKeys mr_{};
  std::vector<uint32_t> free_send_;
};

}  // namespace ndnic::cm
