#include "tests/interop/nd_peer/checks.h"

#include <cstdio>

#include "tools/nd_app/node.h"
#include "tools/nd_app/status.h"
#include "tools/nd_app/waits.h"

namespace ndnic::nd_peer {
namespace {
unsigned g_oks = 0, g_fails = 0;
}  // namespace

void ok(const std::string& what) {
  std::printf("ok %s\n", what.c_str());
  g_oks++;
}

void fail(const std::string& what, const std::string& got, const std::string& expected) {
  std::printf("FAIL %s: got %s expected %s\n", what.c_str(), got.c_str(), expected.c_str());
  g_fails++;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

void check_u64(const std::string& what, uint64_t got, uint64_t expected) {
  if (got == expected) {
    std::string w = what;
    ok(w.append(" (").append(hex(got)).append(")"));
  } else {
    fail(what, hex(got), hex(expected));
  }
}

void check_status(const std::string& what, HRESULT got, HRESULT expected) {
  if (got == expected) {
    std::string w = what;
    ok(w.append(" (").append(nd_app::status_text(got)).append(")"));
  } else {
    fail(what, nd_app::status_text(got), nd_app::status_text(expected));
  }
}

unsigned oks() { return g_oks; }
unsigned fails() { return g_fails; }

}  // namespace ndnic::nd_peer
