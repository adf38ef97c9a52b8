// Where the threads run. EAL's lcore map when the user gave none (lcore 0 for the application
// threads, a worker lcore for each ndnic device), and whether the application threads poll
// for completions or wait with Notify: polling needs a processor per busy thread.
#pragma once

#include <string>

#include "tools/ndperf/options.h"

namespace ndnic::ndperf {

/// EAL's --lcores default, chosen from the processors this process may use (before EAL
/// pins the main thread).
std::string default_lcores(const Options& o);

/// After EAL: -e/--poll as given, otherwise events unless every device worker lcore and
/// application thread has a processor of its own. Says so when it picks events.
void choose_waits(Options* o);

/// Worker lcores needed: one per device (two in the embedded mode).
size_t workers_needed(const Options& o);

}  // namespace ndnic::ndperf
