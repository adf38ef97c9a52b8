// The ND objects of one connection, as an ND application holds them: a connector and its
// endpoint on a given CQ, made over the wire (IB CM on QP1) with INDListen / INDConnector.
// The server takes a request from a listen, reads its private data, and accepts or rejects;
// the client connects (again with a fresh connector and endpoint while nobody listens yet),
// posts its receives, and completes. Every step waits at most the actor's --timeout (a
// request for as long as it takes), less on a halt, and says what failed as the actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ndnic/ndnic_ext.h"
#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"

namespace ndnic::nd_app {

/// CreateEndpoint's limits.
struct EndpointShape {
  SIZE_T inbound = 0;     ///< receives outstanding at most
  SIZE_T outbound = 0;    ///< send-side requests outstanding at most
  SIZE_T sge = 1;         ///< SGEs per request, both ways
  SIZE_T read_limit = 0;  ///< RDMA Reads in flight, both ways
};

/// Where and how a client connects.
struct Dial {
  uint32_t ip = 0;                   ///< the server's address, host order
  uint16_t port = 0;                 ///< the ND port it listens on
  std::vector<uint8_t> private_data;  ///< what the server's get_request reads
  std::chrono::steady_clock::duration retry{};  ///< retry a refused or unanswered attempt this long
  std::chrono::steady_clock::duration pause{};  ///< between two attempts
  std::string refused_hint;          ///< added to a refusal's message: what the user may do
};

class Connection {
 public:
  explicit Connection(Actor& actor) : actor_(actor) {}
  /// close().
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// The connector (unless there is one) and an endpoint on `cq` for both directions.
  bool create_endpoint(INDAdapter* adapter, INDCompletionQueue* cq, const EndpointShape& shape);
  /// The SDK's Shutdown: disconnects (quietly: a run that gets here connected has failed and
  /// said why) so the peer hears of it, then releases the objects.
  void close();
  /// Releases the endpoint, its extension and the connector, connected or not.
  void release();
  /// Releases this connection's objects and takes over `conn` (a connector that has taken a
  /// request on a listen while the connection before it stayed up).
  void adopt(INDConnector* conn);

  // ---- server ----
  /// Waits (for as long as it takes, or a halt) for the next request on `listen` into this
  /// connection's connector, made here unless there is one, and returns its private data.
  bool get_request(INDAdapter* adapter, INDListen* listen, std::vector<uint8_t>* private_data);
  /// Accepts with this private data and waits until the connection is established.
  bool accept(const std::vector<uint8_t>& private_data);
  void reject();
  /// Waits until the peer has disconnected.
  bool wait_disconnect();

  // ---- client ----
  /// Connects with a fresh endpoint (unless there is one) and returns the server's private
  /// data when `reply` is given. CompleteConnect is separate, so receives can be posted
  /// before the server may send (and not before Connect succeeded: a failed attempt's
  /// endpoint would flush them).
  bool connect(INDAdapter* adapter, INDCompletionQueue* cq, const EndpointShape& shape, const Dial& dial,
               std::vector<uint8_t>* reply);
  bool complete_connect();
  bool disconnect();

  INDConnector* connector() const { return conn_; }
  INDEndpoint* endpoint() const { return ep_; }
  /// ndnic's extension of the endpoint (ndnic_ext.h); null, said why, when there is none.
  INDEndpointExt* ext();
  bool connected() const { return connected_; }

 private:
  /// A step's overlapped request that returned `hr`, waited for; ND_SUCCESS or false.
  bool finish(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, std::chrono::steady_clock::duration limit,
              bool on_sigint, const std::string& what);

  Actor& actor_;
  INDConnector* conn_ = nullptr;
  INDEndpoint* ep_ = nullptr;
  INDEndpointExt* ext_ = nullptr;
  bool connected_ = false;
  bool disconnected_ = false;
};

}  // namespace ndnic::nd_app
