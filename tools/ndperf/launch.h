// Where the threads run. EAL's lcore map when the user gave none (lcore 0 for the application
// threads, a worker lcore for each ndnic device), where each application thread runs, who moves
// the devices (worker lcores, or the application threads: run to completion), and whether the
// application threads poll for completions or wait with Notify.
#pragma once

#include <string>
#include <vector>

#include "tools/ndperf/options.h"

namespace ndnic::ndperf {

/// EAL's --lcores default, chosen from the processors this process may use (before EAL
/// pins the main thread).
std::string default_lcores(const Options& o);

/// After EAL: places the application threads (the embedded client and server each on a
/// processor of its own where the main lcore has two, or the server on a worker lcore the
/// devices do not need), then chooses, unless given, the progress mode (worker lcores where
/// each has a processor no other busy thread uses, run to completion otherwise) and the wait
/// (Notify only where polling threads would share a processor with a worker). Says what it chose.
void place_threads(Options* o);

/// The worker lcores the devices may use (after place_threads: not the server thread's).
std::vector<unsigned> device_lcores();
/// Worker lcores needed: one per device (two in the embedded mode), none run to completion.
size_t workers_needed(const Options& o);

/// Pins the calling thread where place_threads put the client (the main thread) or the
/// embedded server.
void pin_client_thread();
void pin_server_thread();

}  // namespace ndnic::ndperf
