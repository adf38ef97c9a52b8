#include "tools/ndperf/lcore_run.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <rte_launch.h>

namespace ndnic::ndperf {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(1);

struct Job {
  const std::function<bool()>* fn;
  bool ok = false;
  std::atomic<bool> done{false};
};

int trampoline(void* arg) {
  auto* job = static_cast<Job*>(arg);
  job->ok = (*job->fn)();
  job->done.store(true, std::memory_order_release);
  return 0;
}

}  // namespace

bool run_on_lcore(unsigned lcore, const std::function<bool()>& fn) {
  Job job;
  job.fn = &fn;
  if (rte_eal_remote_launch(trampoline, &job, lcore) != 0) {
    std::fprintf(stderr, "ndperf: lcore %u is not free for the baseline\n", lcore);
    return false;
  }
  while (!job.done.load(std::memory_order_acquire)) std::this_thread::sleep_for(kPoll);
  rte_eal_wait_lcore(lcore);
  return job.ok;
}

}  // namespace ndnic::ndperf
