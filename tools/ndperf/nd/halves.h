// Each test's two halves. A client half connects its QPs, measures every size of its plan,
// appends a row per size to env.result (printing it as it goes) and disconnects; a server
// half accepts the pending request (and the test's other QPs), serves until the client's
// last SYNC or its disconnect, and returns. Both take a Session opened on their node.
#pragma once

#include "tools/ndperf/nd/exchange.h"
#include "tools/ndperf/nd/session.h"

namespace ndnic::ndperf {

/// send_bw, write_bw, read_bw, atomic_bw (bw_test.cc).
bool bw_client(Session& s, const Plan& p, ClientEnv& env);
bool bw_server(Session& s, const Plan& p);
/// send_lat, write_lat, read_lat (lat_test.cc).
bool lat_client(Session& s, const Plan& p, ClientEnv& env);
bool lat_server(Session& s, const Plan& p);
/// sendinv (sendinv_test.cc).
bool sendinv_client(Session& s, const Plan& p, ClientEnv& env);
bool sendinv_server(Session& s, const Plan& p);

/// The banner every client half prints before its first row; `note` adds a line.
void print_test_banner(const Session& s, const Plan& p, const ClientEnv& env, uint32_t cq_moderation,
                       const std::string& note = "");
/// A size's row: printed under the banner and kept in env.result.
void keep_row(const Plan& p, ClientEnv& env, const Row& row);

}  // namespace ndnic::ndperf
