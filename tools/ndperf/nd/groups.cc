#include "tools/ndperf/nd/groups.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {

bool GroupSync::meet(std::unique_lock<std::mutex>& lock) {
  const uint64_t round = round_;
  if (++count_ == parts_.size()) {
    count_ = 0;
    round_++;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return round_ != round || failed_; });
  }
  return !failed_;
}

bool GroupSync::start() {
  std::unique_lock<std::mutex> lock(mu_);
  return !failed_ && meet(lock);
}

bool GroupSync::finish(uint32_t g, const Row& row, uint64_t t0, uint64_t t1, bool* stop, Row* whole) {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_) return false;
  parts_[g] = Part{row, t0, t1, *stop};
  if (!meet(lock)) return false;
  // Every group wrote its part before the last one arrived; none writes again before the next
  // size's start(), which every group (this one too) reaches only after reading here.
  Row r;
  r.bytes = row.bytes;
  uint64_t first = UINT64_MAX, last = 0;
  for (const Part& p : parts_) {
    r.iterations += p.row.iterations;
    // Each group's fastest stretch, added: the groups run side by side.
    r.bw_peak_gbps += p.row.bw_peak_gbps;
    first = std::min(first, p.t0);
    last = std::max(last, p.t1);
    *stop = *stop || p.stop;
  }
  const double secs = last > first ? double(last - first) / tsc_hz() : 0;
  if (secs > 0) {
    const double rate = double(r.iterations) / secs;
    r.msg_rate_mpps = rate / 1e6;
    r.bw_avg_gbps = rate * r.bytes * 8 / 1e9;
    r.bw_peak_gbps = std::max(r.bw_peak_gbps, r.bw_avg_gbps);
  }
  *whole = r;
  return true;
}

void GroupSync::fail() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
  cv_.notify_all();
}

bool run_groups(uint32_t n, const std::function<bool(uint32_t)>& fn) {
  std::unique_ptr<bool[]> ok(new bool[n]());
  std::vector<std::thread> threads;
  for (uint32_t g = 1; g < n; g++)
    threads.emplace_back([&, g] { ok[g] = fn(g); });
  ok[0] = fn(0);
  for (std::thread& t : threads) t.join();
  return std::all_of(ok.get(), ok.get() + n, [](bool b) { return b; });
}

}  // namespace ndnic::ndperf
