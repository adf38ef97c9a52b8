// The ways to run the demo: both sides in one process, or one side per process (or host).
#pragma once

#include <cstdint>

#include "tools/nd_demo/options.h"

namespace ndnic::nd_demo {

/// Owner and peer on a net_ring pair, a worker lcore each, stepped from this thread.
int run_one_process();
/// The owner: listens, binds the window, checks its memory and its CQ.
int run_passive(const Options& o);
/// The peer: connects to the owner, goes through the window, SendAndInvalidate-s it.
int run_active(const Options& o);

}  // namespace ndnic::nd_demo
