// The ways to run the demo: both sides in one process, or one side per process (or host).
#pragma once

#include <cstdint>

#include "tools/nd_demo/options.h"

namespace ndnic::nd_demo {

/// Owner on port `pa`, peer on `pb` (a net_ring pair), stepped from this thread.
int run_one_process(uint16_t pa, uint16_t pb);
/// The owner: listens, binds the window, checks its memory and its CQ.
int run_passive(const Options& o);
/// The peer: connects to the owner, goes through the window, SendAndInvalidate-s it.
int run_active(const Options& o);

}  // namespace ndnic::nd_demo
