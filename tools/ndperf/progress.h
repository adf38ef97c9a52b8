// The progress line of a long run: once a size has run for more than two seconds (or from the
// first second when -D asks for more than two), one line a second on stderr with the figures
// so far. Cheap to ask often: due() reads the TSC and compares.
#pragma once

#include <cstdint>
#include <string>

#include "tools/ndperf/catalog.h"

namespace ndnic::ndperf {

class Progress {
 public:
  Progress(Test test, uint32_t bytes, uint32_t duration_s);
  bool due(uint64_t tsc) const { return tsc >= next_; }
  /// Prints "ndperf: <test> <bytes> B: <s> s, <iterations> iterations, <figure>" and
  /// schedules the next line.
  void print(uint64_t tsc, uint64_t iterations, const std::string& figure);

 private:
  Test test_;
  uint32_t bytes_;
  uint64_t t0_, second_, next_;
};

}  // namespace ndnic::ndperf
