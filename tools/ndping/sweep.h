// What a run measures: the message sizes and the iterations of each, computed the same way by
// the client (which chooses) and the server (which learns the choice from the connect's
// private data, see handshake.h), so the server knows every message it will receive.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/ndping/options.h"

namespace ndnic::ndping {

/// The SDK's warm-up before the first size: 1000 messages of x_HdrLen bytes.
constexpr uint32_t kWarmupSize = 40;
constexpr uint32_t kWarmupIters = 1000;

struct Step {
  uint32_t size;
  uint32_t iters;
};

struct Sweep {
  uint32_t warmup_iters = 0;  ///< messages of kWarmupSize before the first step, unmeasured
  std::vector<Step> steps;
};

/// Sizes min_size, 2 min_size, 4 min_size, ... up to max_size (which ends the sweep even when it
/// is no power of two); one size when they are equal. `iters` per size, or 0 for the default:
/// the SDK's iteration cap and volume per size (x_MaxIterations, x_MaxVolume), made smaller
/// so that a sweep over ndnic's software datapath takes seconds, not hours.
Sweep make_sweep(Tool tool, uint32_t min_size, uint32_t max_size, uint32_t iters);

}  // namespace ndnic::ndping
