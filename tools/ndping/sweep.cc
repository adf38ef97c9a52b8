#include "tools/ndping/sweep.h"

#include <algorithm>

namespace ndnic::ndping {
namespace {

// The SDK runs up to 500000 (ndping) or 100000 (ndpingpong) iterations, at most 2 GiB per size.
// A software NIC on a shared core moves far less: these caps keep each size to a fraction of a
// second on a two-core machine while leaving enough messages for a stable average.
constexpr uint64_t kPingMaxIters = 20000;
constexpr uint64_t kPingVolume = 64u << 20;
constexpr uint64_t kPingPongMaxIters = 2000;
constexpr uint64_t kPingPongVolume = 16u << 20;
constexpr uint64_t kMinIters = 4;  ///< even 4 MiB messages: a first, a last and some between

uint32_t default_iters(Tool tool, uint32_t size) {
  const bool ping = tool == Tool::kPing;
  const uint64_t cap = ping ? kPingMaxIters : kPingPongMaxIters;
  const uint64_t volume = ping ? kPingVolume : kPingPongVolume;
  return uint32_t(std::clamp<uint64_t>(volume / size, kMinIters, cap));
}

}  // namespace

Sweep make_sweep(Tool tool, uint32_t min_size, uint32_t max_size, uint32_t iters) {
  Sweep s;
  for (uint64_t size = min_size; size <= max_size; size *= 2) {
    s.steps.push_back({uint32_t(size), iters ? iters : default_iters(tool, uint32_t(size))});
    if (size < max_size && size * 2 > max_size) s.steps.push_back({max_size, iters ? iters : default_iters(tool, max_size)});
  }
  // The SDK warms up with 1000 messages; a run asked for fewer per size warms up with as few.
  s.warmup_iters = std::min(kWarmupIters, iters ? iters : kWarmupIters);
  return s;
}

}  // namespace ndnic::ndping
