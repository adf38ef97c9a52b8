// The connection manager the ND connector sits on: IB CM (IBTA vol. 1 ch. 12) over the GSI QP1 of
// one Device/port, speaking what Linux rdma_cm speaks on RoCEv2 (RDMA_PS_TCP service IDs, the
// rdma_cm private-data header, rdma_cm's flow label), so either end may be a Linux host.
//
// The agent owns QP1 (mad_io.h) and a thread that sleeps on QP1's CQ event fds (and a wake-up
// fd), hands incoming MADs and due timers to the state machine (state_machine.h), and moves the
// application's RC QPs through INIT -> RTR -> RTS (and to ERROR on disconnect). The API is
// thread-safe; results arrive as Events through the callback given to connect()/accept(), always
// on the agent thread (never inside the call that caused them), with no agent lock held: a
// callback may call the agent. The types it speaks are in cm.h.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cm/cm.h"
#include "cm/mad_io.h"
#include "cm/state_machine.h"
#include "ndnic/nic.h"

namespace ndnic::glue {
class Port;
}

namespace ndnic::cm {

class Agent {
 public:
  Agent(nic::Device& dev, const glue::Port& port, Config config = {}, DropTx drop_tx = {});
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// Creates QP1 (one per device) with its CQs and starts the thread. listen() may come first,
  /// so that no REQ arriving in between is refused.
  bool start();
  /// Stops the thread and destroys QP1; connections are dropped silently (a vanished host).
  /// Not from a callback (it joins the agent thread).
  void stop();
  const std::string& error() const { return error_; }

  /// Listens on an RDMA_PS_TCP port; 0 picks a free one. Returns the port, 0 if taken.
  /// on_request (optional) runs on the agent thread each time a request is queued. backlog:
  /// requests queued and not yet taken by get_request() beyond which a REQ is dropped
  /// unanswered (as Linux rdma_cm does, so that its sender's retry may still get in); 0: no
  /// limit but the agent's max_connections (ND v1 Listen).
  uint16_t listen(uint16_t port, std::function<void(uint16_t port)> on_request = {}, size_t backlog = 0);
  /// Stops listening; requests still queued are rejected (consumer reject, no data).
  void unlisten(uint16_t port);
  /// Takes the oldest request queued on `port`, waiting up to timeout_ms (0: do not wait).
  bool get_request(uint16_t port, Request* out, int timeout_ms);
  /// Requests queued on `port` and not yet taken (what its backlog counts).
  size_t pending_requests(uint16_t port) const;

  /// Sends a REQ. Returns the connection's ID, 0 when refused locally (bad QP or arguments).
  ConnId connect(const ConnectParams& p, Callback cb);
  /// After kConnectResponse: QP to RTS, RTU out, state ESTABLISHED (kEstablished follows).
  bool complete_connect(ConnId conn);
  /// Accepts a request: QP to RTS with its parameters, REP out; kEstablished once the RTU is in.
  bool accept(ConnId conn, const AcceptParams& p, Callback cb);
  /// Rejects (REJ, consumer defined, up to kRejectDataLen bytes) a request not yet accepted,
  /// or on the active side the peer's REP instead of complete_connect() (the QP goes to ERROR):
  /// IB CM lets either end refuse until the RTU. No event follows. False when neither applies.
  bool reject(ConnId conn, std::span<const uint8_t> private_data);
  /// Moves the QP to ERROR and sends DREQ; kDisconnectDone follows. Before the connection is
  /// up it cancels instead (REJ to the peer) and kDisconnectDone follows as well.
  bool disconnect(ConnId conn);
  /// The application is done with the connection's QP and callback: the agent touches neither
  /// again (events in flight may still run). Call before destroying the QP of a connection
  /// the agent may still know, e.g. one in TIMEWAIT or still disconnecting.
  void detach(ConnId conn);
  /// The rdma_cm port the connection uses on our side (the one picked when connect() was
  /// given none); 0 for an unknown connection.
  uint16_t local_port(ConnId conn) const;

  /// The connection's state; kIdle for an unknown (or forgotten) one.
  State state(ConnId conn) const;
  /// The peer's private data (REP's on the active side, REQ's user part on the passive side),
  /// for ND GetConnectionData. False for an unknown connection.
  bool peer_private_data(ConnId conn, std::vector<uint8_t>* out) const;

  /// The agent's counts (cm.h): MAD I/O's and the state machine's.
  using Counters = cm::Counters;
  Counters counters() const;
  /// Connection records the agent keeps, TIMEWAIT ones included.
  size_t connection_count() const;

 private:
  /// The state machine's world: QP1 for MADs, the pending list for callbacks, the clock.
  class World : public Effects {
   public:
    explicit World(Agent& a) : a_(a) {}
    void send(uint32_t dest_ipv4, const uint8_t* mad, ConnId owner) override;
    void post(std::function<void()> f) override;
    void requests_changed() override;
    Clock::time_point now() override;
    uint32_t random32() override;

   private:
    Agent& a_;
  };

  /// The agent thread: step, deliver the callbacks, sleep on QP1's CQs and the wake fd.
  void run();
  /// One round under the lock: MADs in, sends done, timers, transport failures. Returns the
  /// ms to sleep (0: look again at once), -1 once stopping.
  int step(bool drive);
  /// QP1's completions to the state machine; how many there were.
  unsigned drain();
  /// Runs the callbacks pending, unlocked.
  void deliver();
  /// Wakes the thread: something changed that its timers or MADs may depend on.
  void wake();

  nic::Device& dev_;
  Config cfg_;
  std::string error_;

  mutable std::mutex mu_;
  std::condition_variable requests_cv_;
  World world_{*this};
  MadIo io_;            ///< QP1; under mu_
  StateMachine sm_;     ///< under mu_
  std::vector<std::function<void()>> pending_;  ///< callbacks to run unlocked
  int wake_fd_ = -1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ndnic::cm
