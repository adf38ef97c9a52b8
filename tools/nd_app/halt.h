// Ending a run early. Ctrl-C (SIGINT), for a tool that installs the handler, asks the run to
// end cleanly (ndperf: the size being measured drains what is in flight, finishes with the peer
// and reports the figures so far). A second Ctrl-C kills the process as usual.
//
// A Halt is one side's view of it: whether that side honors Ctrl-C (ndperf's client finishes
// its size whatever happens, a server of its own stops at once), and abort(), by which either
// side of an embedded run stops the other's waits when it fails (ndping, ndperf).
#pragma once

#include <atomic>

namespace ndnic::nd_app {

/// Installs the SIGINT handler.
void install_sigint();
/// True once SIGINT came.
bool sigint_requested();

class Halt {
 public:
  explicit Halt(bool honor_sigint) : honor_sigint_(honor_sigint) {}
  /// Waits and loops on this side give up now.
  bool now() const { return aborted_.load(std::memory_order_relaxed) || (honor_sigint_ && sigint_requested()); }
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  /// From the other side's thread: it failed, stop waiting for it.
  void abort() { aborted_.store(true, std::memory_order_relaxed); }
  bool honors_sigint() const { return honor_sigint_; }
  void set_honor_sigint(bool on) { honor_sigint_ = on; }

 private:
  std::atomic<bool> aborted_{false};
  bool honor_sigint_;
};

}  // namespace ndnic::nd_app
