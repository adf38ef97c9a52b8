#include "tools/nd_app/actor.h"

#include <cstdio>

#include "tools/nd_app/status.h"

namespace ndnic::nd_app {

bool Actor::fail(const std::string& what, HRESULT hr) const {
  std::string line = tool_;
  if (*who_) line.append(" ").append(who_);
  line.append(": ").append(what);
  if (hr != ND_SUCCESS) line.append(": ").append(status_text(hr));
  std::fprintf(stderr, "%s\n", line.c_str());
  return false;
}

bool Actor::check(HRESULT hr, const std::string& what) {
  if (hr == ND_SUCCESS) return true;  // not SUCCEEDED(): ND_TIMEOUT has success severity
  if (hr == ND_CANCELED && halting(true)) {
    halted_ = true;
    return halt_.aborted() ? fail(what + ": stopped, the other side failed") : false;
  }
  if (hr == ND_IO_TIMEOUT) return fail(what + ": no answer in " + std::to_string(timeout_s_) + " s (--timeout)");
  return fail(what, hr);
}

}  // namespace ndnic::nd_app
