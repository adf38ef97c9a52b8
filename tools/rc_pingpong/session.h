// One ndnic RC QP doing what ibv_rc_pingpong's QP does: receives posted before the exchange,
// connected with ibv_rc_pingpong's attributes, then SENDs alternating with receives. The QP
// itself is a raw_qp::RcSession; this is the message flow, its checks and the original's words.
#pragma once

#include <cstdint>
#include <string>

#include "ndnic/nic.h"
#include "tools/raw_qp/session.h"
#include "tools/rc_pingpong/exchange.h"
#include "tools/rc_pingpong/options.h"

namespace ndnic::rc_pingpong {

struct Figures {
  uint32_t sent = 0, received = 0;
  double usec = 0;
};

class Session {
 public:
  explicit Session(const Options& o);

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
  void poll() { qp_.poll(); }
  /// Keeps the engine answering for a moment, see raw_qp::RcSession::linger.
  void linger() { qp_.linger(); }
  /// One line of transport counters, for the log.
  std::string counters() const { return qp_.counters(); }

 private:
  void say(const raw_qp::Failure& f) const;
  bool post_recvs(uint32_t n);
  bool post_send();
  bool check_message(const nic::Completion& c);

  Options opts_;
  raw_qp::RcSession qp_;
  Dest local_;
  uint32_t routs_ = 0;        ///< receives posted and not completed
  uint32_t messages_ = 0;
  uint32_t scnt_ = 0;         ///< sends completed
  uint32_t rcnt_ = 0;         ///< receives completed
};

}  // namespace ndnic::rc_pingpong
