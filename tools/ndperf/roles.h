// The two roles of a run. The client runs the test list in order, one connection (set) per
// test, and collects the rows; the server serves whatever the client's connection requests
// ask for, one test at a time, until the last one (the plan says which) or the client's
// "no more tests". The embedded mode runs both, the server on a thread of its own.
#pragma once

#include "tools/nd_app/halt.h"
#include "tools/ndperf/node.h"
#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

/// Runs every test of the options against the server at `server_ipv4`. False after a failure
/// (printed); a Ctrl-C ends it early with true.
bool run_client(Node& node, const Options& o, uint32_t server_ipv4, nd_app::Halt& halt, RunReport* report);

/// Serves tests until the client's last. `announce`: print that it listens (the server mode).
/// False after a failure (printed); a halt by Ctrl-C returns true.
bool run_server(Node& node, const Options& o, nd_app::Halt& halt, bool announce, RunReport* report);

}  // namespace ndnic::ndperf
