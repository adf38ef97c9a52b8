// One ndnic RC QP doing what ibv_rc_pingpong's QP does: receives posted before the exchange,
// connected with ibv_rc_pingpong's attributes, then SENDs alternating with receives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nic/nic.h"
#include "tools/engine_port/engine_port.h"
#include "tools/rc_pingpong/exchange.h"
#include "tools/rc_pingpong/options.h"

namespace ndnic::rc_pingpong {

struct Figures {
  uint32_t sent = 0, received = 0;
  double usec = 0;
};

class Session {
 public:
  explicit Session(const Options& o) : opts_(o) {}
  ~Session();

  /// Port, device, buffers, CQ, QP in INIT with rx_depth receives posted. Errors to stderr.
  bool open();
  Dest local() const { return local_; }
  /// RTR then RTS towards the peer; the peer's IPv4 comes from its GID when IPv4-mapped,
  /// from the TCP connection otherwise.
  bool connect(const Peer& peer);
  /// The ping-pong: the client sends first. False on an error completion, a corrupted
  /// message or a stall.
  bool run(bool client, Figures* out);
  /// One round of the engine (and so of the port's ARP), for while the program waits elsewhere.
  void poll() { node_.poll(); }
  /// Keeps the engine answering for a moment, see the definition.
  void linger();
  /// One line of transport counters, for the log.
  std::string counters() const;

 private:
  bool post_recvs(uint32_t n);
  bool post_send();
  bool check_message(const nic::Completion& c);

  Options opts_;
  engine_port::EnginePort node_;
  std::vector<uint8_t> buf_;  ///< [0, size): what we send; [size, 2 size): where we receive
  nic::MrKeys mr_;
  nic::Cq* cq_ = nullptr;
  nic::Qp* qp_ = nullptr;
  Dest local_;
  uint32_t routs_ = 0;        ///< receives posted and not completed
  uint32_t messages_ = 0;
};

}  // namespace ndnic::rc_pingpong
