// One ND connection as the protocol (protocol.h) wants it: separate inbound and outbound CQs,
// an endpoint with its extension interface, one registered buffer holding the receive pool, a
// send area and the area the scenarios expose, control messages, and waits that keep the order
// in which the inbound CQ handed results out.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "ndnic/ndnic_ext.h"
#include "ndnic/ndspi.h"
#include "tests/interop/nd_peer/protocol.h"

namespace ndnic::nd_peer {

struct ConnectOptions {
  bool server = false;
  uint32_t peer_ipv4 = 0;  ///< client: the server's address, host order
  uint16_t port = kDefaultPort;
  unsigned retry_s = 0;   ///< client: keep trying a refused connect this long
  bool post_pool = true;  ///< post the receive pool before connecting
};

class Peer {
 public:
  explicit Peer(INDAdapter* adapter) : adapter_(adapter) {}
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  /// CQs, buffer, endpoint, pool, connection. False (with the reason printed) on failure.
  bool open(const ConnectOptions& o);
  void disconnect();

  INDAdapter* adapter() const { return adapter_; }
  INDEndpoint* ep() const { return ep_; }
  INDEndpointExt* ext() const { return ext_; }
  INDCompletionQueue* in_cq() const { return in_cq_; }
  ND_MR_HANDLE mr() const { return mr_; }
  uint8_t* send_area() { return buf_ + kPoolSlots * kSlotSize; }
  uint8_t* area() { return send_area() + kSendAreaSize; }

  bool post_slot(unsigned slot);
  size_t outstanding() const { return posted_.size(); }
  /// The oldest posted receive's result once it completed (not posted again), or nullptr after
  /// `ms` (a FAIL line printed under `what`).
  NDNIC_RESULT* next_recv(const std::string& what, int ms = kWaitMs);
  const NDNIC_RESULT* slot_result(unsigned slot) const { return &slots_[slot]; }
  unsigned slot_of(const NDNIC_RESULT* r) const { return unsigned(r - slots_); }
  uint8_t* data_of(const NDNIC_RESULT* r) { return buf_ + slot_of(r) * kSlotSize; }

  /// Reaps both CQs until `r` completes or `ms` pass. False on the deadline.
  bool wait(const ND_RESULT* r, int ms = kWaitMs);
  /// Reaps both CQs once; true when anything came.
  bool reap();
  /// The inbound CQ's results in the order GetResults handed them out.
  const std::vector<const ND_RESULT*>& inbound_order() const { return inbound_order_; }

  /// A posted request's HRESULT: ND_SUCCESS, or a FAIL line and false.
  bool posted(const std::string& what, HRESULT hr);
  bool send_ctl(Ctl kind, const ND_MW_DESCRIPTOR* d = nullptr);
  bool recv_ctl(Ctl kind, ND_MW_DESCRIPTOR* d = nullptr);
  /// Every receive still posted completes with ND_CANCELED (the endpoint went to error).
  void expect_flushed(const std::string& side);

 private:
  bool connect(const ConnectOptions& o);
  bool accept(const ConnectOptions& o);

  INDAdapter* adapter_;
  INDCompletionQueue* in_cq_ = nullptr;
  INDCompletionQueue* out_cq_ = nullptr;
  INDConnector* conn_ = nullptr;
  INDListen* listen_ = nullptr;
  INDEndpoint* ep_ = nullptr;
  INDEndpointExt* ext_ = nullptr;
  uint8_t* buf_ = nullptr;
  size_t buf_size_ = 0;
  ND_MR_HANDLE mr_ = nullptr;
  NDNIC_RESULT slots_[kPoolSlots] = {};
  std::deque<unsigned> posted_;
  std::vector<const ND_RESULT*> inbound_order_;
};

}  // namespace ndnic::nd_peer
