// Where an ND tool's threads run: EAL's lcore map when the user gave none (lcore 0 for the
// application threads, a worker lcore per ndnic device), and whether the application threads
// can poll for completions or must wait with Notify (polling needs a processor per busy
// thread: one that shares a processor with a busy worker takes turns with it in scheduler
// slices, milliseconds per completion).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ndnic::nd_app {

/// The processors this process may use (before EAL pins the main thread).
std::vector<int> allowed_cpus();

/// EAL's --lcores default: lcore 0 on processors of its own for `app_threads` threads and each
/// of `workers` device workers on one of its own when there are enough; otherwise everything
/// shares what there is, the workers from the last processor down (two processors and two
/// workers: "0@(0,1),1@1,2@0").
std::string default_lcores(size_t app_threads, size_t workers);

/// After EAL: true when the first `workers` worker lcores and the main lcore are on processors
/// apart from each other, the main lcore with one per application thread.
bool threads_apart(size_t app_threads, size_t workers);

}  // namespace ndnic::nd_app
