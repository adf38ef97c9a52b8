// The protocol's scenarios (protocol.h) from ndnic's side, over the ND v1 API and ndnic_ext.h.
#pragma once

#include <string>

#include "tests/interop/nd_peer/peer.h"

namespace ndnic::nd_peer {

struct Scenario {
  const char* name;
  void (*active)(Peer&);
  void (*passive)(Peer&);
  bool receiver_posts_nothing;  ///< the passive side posts no receive pool (RNR scenarios)
  /// RNR retries the passive (receiving) side asks of its peer in its REQ or REP: 0 makes the
  /// peer's first RNR NAK final (the REQ's or REP's RNR Retry Count), 7 retries forever.
  uint8_t receiver_asks_rnr_retry;
};

/// The scenario called `name` (without the -rxe/-nd suffix), or nullptr.
const Scenario* find_scenario(const std::string& name);
/// "mw imm ..." for usage lines.
std::string scenario_names();

}  // namespace ndnic::nd_peer
