// One side's Network Direct v1 objects, as the SDK examples' NdTestBase holds them: the
// adapter (opened by address), one completion queue for both directions, the connector and
// its endpoint, one registered buffer; the connection made over the wire (IB CM on QP1) with
// INDListen / INDConnector; sends, receives and waits for results, polling or blocking.
// Only ndspi.h and NdOpenV1Adapter here: this is what an ND application does.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nd_frontend/ndspi.h"
#include "tools/ndping/options.h"

namespace ndnic::ndping {

struct Limits {
  SIZE_T inbound = 0;   ///< receives outstanding at most
  SIZE_T outbound = 0;  ///< sends outstanding at most
};

class Connection {
  using Clock = std::chrono::steady_clock;

 public:
  /// `who` ("server", "client") prefixes every error message.
  Connection(const Options& o, const char* who);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Opens the adapter that owns `ipv4`, a CQ for both directions, a connector and an
  /// endpoint with these limits, and registers a zeroed buffer of `bytes`.
  bool open(uint32_t ipv4, const Limits& lim, size_t bytes);

  // ---- server (passive side) ----
  bool listen(uint16_t port);
  /// Waits for a connection request and returns its private data.
  bool get_request(std::vector<uint8_t>* private_data);
  /// Accepts with this private data and waits until the connection is established.
  bool accept(const std::vector<uint8_t>& private_data);
  void reject();
  /// Waits until the peer disconnects.
  bool wait_disconnect();

  // ---- client (active side) ----
  /// Connects to ip:port with this private data (retrying a refused or unanswered attempt
  /// for --retry seconds) and returns the server's. CompleteConnect is separate, so receives
  /// can be posted before the server may send.
  bool connect(uint32_t ip, uint16_t port, const std::vector<uint8_t>& private_data, std::vector<uint8_t>* reply);
  bool complete_connect();
  bool disconnect();

  // ---- data ----
  uint8_t* buffer() { return buf_.data(); }
  /// Posts a receive of up to `len` bytes at `offset` in the buffer, split over --sge entries.
  bool receive(ND_RESULT* r, size_t offset, uint32_t len);
  /// Posts a send of `len` bytes (0: no SGE at all) from `offset` in the buffer.
  bool send(ND_RESULT* r, size_t offset, uint32_t len);
  /// Waits for results and returns 1..n of them; 0 after a timeout (--timeout seconds without
  /// any) or abort(), with the message printed.
  size_t results(ND_RESULT** out, size_t n);

  /// From another thread: every wait (for a connection step or for results) gives up. The
  /// embedded mode's way to stop one side when the other has failed.
  void abort();

  /// Prints "<tool> <who>: <what>" (and the status) to stderr; returns false.
  bool fail(const std::string& what, HRESULT hr = ND_SUCCESS) const;

 private:
  bool create_endpoint();
  void release_endpoint();
  /// Finishes an overlapped request that returned `hr`: waits at most `limit` for it, less
  /// if abort() comes. Its HRESULT, ND_IO_TIMEOUT after the limit, ND_CANCELED after abort().
  HRESULT await(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, Clock::duration limit);
  /// True for ND_SUCCESS; otherwise prints what failed and how, and returns false.
  bool check(HRESULT hr, const std::string& what) const;
  Clock::duration timeout() const;
  SIZE_T split(size_t offset, uint32_t len, ND_SGE* sgl);
  void watchdog();

  const Options& o_;
  const char* who_;
  Limits lim_;
  INDAdapter* adapter_ = nullptr;
  INDCompletionQueue* cq_ = nullptr;
  INDConnector* conn_ = nullptr;
  INDEndpoint* ep_ = nullptr;
  INDListen* listen_ = nullptr;
  std::vector<uint8_t> buf_;
  ND_MR_HANDLE mr_ = nullptr;
  bool connected_ = false;
  bool disconnected_ = false;

  // Blocking waits: one Notify at a time. The watchdog cancels it when it has slept longer
  // than kNotifyRecheck, so the waiter looks at the CQ itself (and gives up after --timeout).
  OVERLAPPED notify_ov_{};
  bool armed_ = false;
  uint64_t late_wakeups_ = 0;  ///< results found only by such a look: their notification was lost
  std::mutex mu_;  ///< abort() and the watchdog against the objects' release
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> recheck_{false};
  std::atomic<int64_t> waiting_since_ns_{0};  ///< steady_clock; 0 while not blocked on the CQ
  std::thread watchdog_;
};

}  // namespace ndnic::ndping
