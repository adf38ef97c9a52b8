// A bandwidth test split over several application threads per node (--threads): each group
// of QPs has its own thread, session, CQ and worker lcore at both ends, and the groups share
// nothing but the start of each size and its figures. Every group starts a size together,
// and the size's row counts every group's messages over the time from the first group's
// first post to the last group's last completion.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

class GroupSync {
 public:
  explicit GroupSync(uint32_t groups) : parts_(groups) {}

  /// Waits until every group is ready to measure the next size. False once a group failed.
  bool start();
  /// Group g's figures for the size (its messages between TSC t0 and t1, its own row); waits
  /// for the other groups' and returns the size's row, and whether any group was asked to
  /// stop after this size (`stop`: this group's answer; every group gets the same). False once
  /// a group failed.
  bool finish(uint32_t g, const Row& row, uint64_t t0, uint64_t t1, bool* stop, Row* whole);
  /// A group gave up: the others stop waiting for it.
  void fail();

 private:
  struct Part {
    Row row;
    uint64_t t0 = 0, t1 = 0;
    bool stop = false;
  };
  /// Waits until `count_` reaches the number of groups, then starts a new round.
  bool meet(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Part> parts_;
  uint32_t count_ = 0;
  uint64_t round_ = 0;
  bool failed_ = false;
};

/// Runs fn(0) .. fn(n-1), each on a thread of its own (fn(0) on the calling one), and returns
/// whether all succeeded.
bool run_groups(uint32_t n, const std::function<bool(uint32_t)>& fn);

}  // namespace ndnic::ndperf
