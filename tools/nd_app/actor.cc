#include "tools/nd_app/actor.h"

#include <cstdio>

#include "tools/nd_app/status.h"

namespace ndnic::nd_app {

bool Actor::fail(const std::string& what, HRESULT hr) const {
  if (hr == ND_SUCCESS)
    std::fprintf(stderr, "%s %s: %s\n", tool_.c_str(), who_, what.c_str());
  else
    std::fprintf(stderr, "%s %s: %s: %s\n", tool_.c_str(), who_, what.c_str(), status_text(hr).c_str());
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
