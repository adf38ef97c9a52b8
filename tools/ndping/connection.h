// One side's Network Direct v1 objects, as the SDK examples' NdTestBase holds them: the
// adapter (opened by address), one completion queue for both directions, one connection
// (nd_app::Connection) and one registered buffer; sends split over --sge entries, receives,
// and waits for results, polling or blocking (nd_app::Reaper). Only ndspi.h and
// NdOpenV1Adapter here: this is what an ND application does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"
#include "tools/nd_app/connection.h"
#include "tools/nd_app/halt.h"
#include "tools/nd_app/reaper.h"
#include "tools/ndping/options.h"

namespace ndnic::ndping {

struct Limits {
  SIZE_T inbound = 0;   ///< receives outstanding at most
  SIZE_T outbound = 0;  ///< sends outstanding at most
};

class Connection {
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
  bool get_request(std::vector<uint8_t>* private_data) { return conn_.get_request(adapter_, listen_, private_data); }
  /// Accepts with this private data and waits until the connection is established.
  bool accept(const std::vector<uint8_t>& private_data) { return conn_.accept(private_data); }
  void reject() { conn_.reject(); }
  /// Waits until the peer disconnects.
  bool wait_disconnect() { return conn_.wait_disconnect(); }

  // ---- client (active side) ----
  /// Connects to ip:port with this private data (retrying a refused or unanswered attempt
  /// for --retry seconds) and returns the server's. CompleteConnect is separate, so receives
  /// can be posted before the server may send.
  bool connect(uint32_t ip, uint16_t port, const std::vector<uint8_t>& private_data, std::vector<uint8_t>* reply);
  bool complete_connect() { return conn_.complete_connect(); }
  bool disconnect() { return conn_.disconnect(); }

  // ---- data ----
  uint8_t* buffer() { return buf_.data(); }
  /// Posts a receive of up to `len` bytes at `offset` in the buffer, split over --sge entries.
  bool receive(ND_RESULT* r, size_t offset, uint32_t len);
  /// Posts a send of `len` bytes (0: no SGE at all) from `offset` in the buffer.
  bool send(ND_RESULT* r, size_t offset, uint32_t len);
  /// Waits for results and returns 1..n of them; 0 after a timeout (--timeout seconds without
  /// any) or abort(), with the message printed.
  size_t results(ND_RESULT** out, size_t n) { return reaper_.reap(out, n); }

  /// From another thread: every wait (for a connection step or for results) gives up. The
  /// embedded mode's way to stop one side when the other has failed.
  void abort() { reaper_.abort(); }

  /// Prints "<tool> <who>: <what>" (and the status) to stderr; returns false.
  bool fail(const std::string& what, HRESULT hr = ND_SUCCESS) const { return actor_.fail(what, hr); }

 private:
  nd_app::EndpointShape shape() const;
  SIZE_T split(size_t offset, uint32_t len, ND_SGE* sgl);

  const Options& o_;
  nd_app::Halt halt_{false};  ///< abort() only: ndping has no Ctrl-C handling of its own
  nd_app::Actor actor_;
  Limits lim_;
  INDAdapter* adapter_ = nullptr;
  nd_app::Reaper reaper_;
  nd_app::Connection conn_;
  INDListen* listen_ = nullptr;
  std::vector<uint8_t> buf_;
  ND_MR_HANDLE mr_ = nullptr;
};

}  // namespace ndnic::ndping
