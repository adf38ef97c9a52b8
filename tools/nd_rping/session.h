// What rping's client and server share: the ND objects of one connection and the registered
// buffers, laid out as rping's are (two receive slots, one send slot, the sink, the source).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"
#include "tools/nd_app/connection.h"
#include "tools/nd_app/halt.h"
#include "tools/nd_rping/rping.h"

namespace ndnic::nd_rping {

using Clock = std::chrono::steady_clock;

class Session {
 public:
  Session(INDAdapter* adapter, const Options& o);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// CQ and registered buffers: `rdma_size` bytes of sink, `start_size` of source.
  bool open(uint32_t rdma_size, uint32_t start_size);
  /// A fresh connector and endpoint with both receive slots posted (a refused Connect leaves
  /// its connector spent; the client retries with new ones).
  bool new_endpoint();
  void drop_endpoint();

  /// Waits for the next receive (in posting order), checks it is an RpingInfo, reposts it.
  /// False on an error, a wrong size, the peer's disconnect (disconnected() tells) or silence.
  bool next_receive(RpingInfo* info);
  /// Sends the send slot holding `info` and waits for its completion (the slot is reused).
  bool send_info(const RpingInfo& info);
  /// Posts a Read or Write of `len` bytes between the sink and the peer's buffer; waits.
  bool rdma(bool read, const RpingInfo& peer, uint32_t len);
  /// Binds `w` over [p, p+len) with `flags`; fills the advertisement rping expects.
  bool bind(INDMemoryWindow* w, char* p, uint32_t len, DWORD flags, RpingInfo* info);
  /// Starts watching for the peer's disconnect.
  bool watch_disconnect();
  bool disconnected();
  void disconnect();

  INDAdapter* adapter() const { return adapter_; }
  INDConnector* connector() const { return conn_.connector(); }
  INDEndpoint* endpoint() const { return conn_.endpoint(); }
  char* sink() { return sink_; }
  char* source() { return source_; }
  Clock::time_point deadline() const { return Clock::now() + std::chrono::seconds(opts_.timeout_s); }

 private:
  bool wait(ND_RESULT* r, const char* what);
  bool post_receive(unsigned slot);

  INDAdapter* adapter_;
  const Options& opts_;
  nd_app::Halt halt_{false};
  nd_app::Actor actor_;  ///< "nd_rping: what failed: STATUS"
  INDCompletionQueue* cq_ = nullptr;
  nd_app::Connection conn_;
  std::vector<uint8_t> block_;
  ND_MR_HANDLE mr_ = nullptr;
  RpingInfo* recv_ = nullptr;   ///< two slots
  RpingInfo* send_ = nullptr;
  char* sink_ = nullptr;        ///< rping's rdma_buf
  char* source_ = nullptr;      ///< rping's start_buf (client)
  ND_RESULT recv_r_[kRecvDepth] = {};
  unsigned next_recv_ = 0;
  OVERLAPPED disc_ov_ = {};
  bool watching_ = false;
  bool peer_gone_ = false;
};

}  // namespace ndnic::nd_rping
