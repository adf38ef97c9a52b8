#include "tools/nd_app/halt.h"

#include <signal.h>

namespace ndnic::nd_app {
namespace {

volatile sig_atomic_t g_sigint = 0;

void on_sigint(int) {
  g_sigint = 1;
  // The next Ctrl-C is the default one: a run that does not end cleanly can still be killed.
  signal(SIGINT, SIG_DFL);
}

}  // namespace

void install_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

bool sigint_requested() { return g_sigint != 0; }

}  // namespace ndnic::nd_app
