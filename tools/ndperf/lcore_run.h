// Running a baseline on a worker lcore that a stopped device has freed, from an application
// thread that sleeps meanwhile (rte_eal_wait_lcore would spin on a processor the lcore may
// need: two of them here).
#pragma once

#include <functional>

namespace ndnic::ndperf {

/// Runs `fn` on `lcore` and returns its result once it has finished.
bool run_on_lcore(unsigned lcore, const std::function<bool()>& fn);

}  // namespace ndnic::ndperf
