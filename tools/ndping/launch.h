// What ndping and ndpingpong share around their protocol: the command line, EAL, the ndnic
// devices, and the roles: a server, a client, or both in this process on two threads (the
// embedded mode: the server on its own thread, the client on the main one).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "tools/ndping/connection.h"
#include "tools/ndping/handshake.h"
#include "tools/ndping/options.h"

namespace ndnic::ndping {

/// Called once by a server: true when it listens (a client may connect), false when it
/// failed before that.
using Ready = std::function<void(bool)>;

struct Halves {
  /// Serves one client on `c`, from our address `ipv4`. False on any failure (printed).
  std::function<bool(Connection& c, const Options& o, uint32_t ipv4, const Ready& ready)> server;
  /// Runs the sweep against the server at `server_ipv4` and prints the table.
  std::function<bool(Connection& c, const Options& o, uint32_t ipv4, uint32_t server_ipv4)> client;
};

/// A server's start: opens `c` on `ipv4` with these limits and `bytes` of buffer, listens on
/// --port, says whether it listens, and waits for the request of a client of this tool
/// (another is rejected, and said so). Nothing on failure.
std::optional<Request> take_request(Connection& c, const Options& o, uint32_t ipv4, const Limits& lim, size_t bytes,
                                    const Ready& ready);

/// The whole program: returns main's exit status (0 success, 1 failure, 2 usage error).
int launch(Tool tool, int argc, char** argv, const Halves& halves);

}  // namespace ndnic::ndping
