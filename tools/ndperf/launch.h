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

/// --threads when not given (after place_threads): one application thread per worker lcore
/// of a node, at most one per QP, at most as many as the main lcore's processors hold (two per
/// group in the embedded mode); one when the application threads run the devices.
void resolve_threads(Options* o);

/// The thread of group g > 0 of a split test (groups.h): pinned to a processor of the main
/// lcore of its own where there is one (group 0 is the client's or the server's own thread),
/// and an EAL thread for as long as it lives (mempool caches, as a worker lcore has).
class GroupThread {
 public:
  GroupThread(bool server, uint32_t group);
  ~GroupThread();
  GroupThread(const GroupThread&) = delete;
  GroupThread& operator=(const GroupThread&) = delete;

 private:
  bool registered_ = false;
};

}  // namespace ndnic::ndperf
