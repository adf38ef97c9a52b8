// The private data of the connection: the client's Connect tells the server what it will
// send (the tool, the sweep, whether payloads are checked); the server's Accept answers with
// its receive queue depth, from which ndping's client takes its initial credits (as the SDK's
// ndping server advertises its queue depth in the Accept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tools/ndping/options.h"

namespace ndnic::ndping {

struct Request {
  Tool tool = Tool::kPing;
  bool check = true;
  uint32_t min_size = 0, max_size = 0, iters = 0;  ///< make_sweep's arguments
};

struct Reply {
  uint32_t queue_depth = 0;  ///< receives the server keeps posted
};

/// Network byte order, a magic number and a version first: a server of the other tool, or of
/// another version, refuses the connection instead of misreading it.
std::vector<uint8_t> encode(const Request& r);
std::vector<uint8_t> encode(const Reply& r);
std::optional<Request> decode_request(const uint8_t* data, size_t len);
std::optional<Reply> decode_reply(const uint8_t* data, size_t len);

}  // namespace ndnic::ndping
