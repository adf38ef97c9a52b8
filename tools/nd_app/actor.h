// One side of a tool's ND conversation as its messages and waits see it: who speaks
// ("ndperf server"), how long a silent step may take (--timeout), and when to give up early
// (the Halt: the other side failed, or Ctrl-C). Shared by its Connections and its Reaper.
#pragma once

#include <chrono>
#include <string>

#include "ndnic/ndspi.h"
#include "tools/nd_app/halt.h"

namespace ndnic::nd_app {

class Actor {
 public:
  /// A patient actor (a server) waits for results and its peer's disconnect as long as it
  /// takes, and Ctrl-C stops those waits; an impatient one gives up after --timeout and
  /// finishes ending its connections whatever Ctrl-C says.
  Actor(std::string tool, const char* who, unsigned timeout_s, Halt& halt, bool patient)
      : tool_(std::move(tool)), who_(who), timeout_s_(timeout_s), halt_(halt), patient_(patient) {}

  /// "TOOL WHO: WHAT[: STATUS (0x...)]" on stderr ("TOOL: ..." when `who` is ""); returns false.
  bool fail(const std::string& what, HRESULT hr = ND_SUCCESS) const;
  /// True for ND_SUCCESS; otherwise says what failed and returns false: ND_IO_TIMEOUT as the
  /// --timeout, ND_CANCELED on a halt as "stopped, the other side failed" (silently after
  /// Ctrl-C: the run says why it ends), marking the actor halted.
  bool check(HRESULT hr, const std::string& what);
  /// Whether a wait gives up now: the other side failed, or (`on_sigint`) Ctrl-C came.
  bool halting(bool on_sigint) const { return halt_.aborted() || (on_sigint && halt_.now()); }

  const char* who() const { return who_; }
  unsigned timeout_s() const { return timeout_s_; }
  std::chrono::steady_clock::duration timeout() const { return std::chrono::seconds(timeout_s_); }
  Halt& halt() const { return halt_; }
  bool patient() const { return patient_; }
  /// Whether a wait gave up on a halt.
  bool halted() const { return halted_; }
  void set_halted() { halted_ = true; }

 private:
  std::string tool_;
  const char* who_;
  unsigned timeout_s_;
  Halt& halt_;
  bool patient_;
  bool halted_ = false;
};

}  // namespace ndnic::nd_app
