#include "tools/ndping/handshake.h"

#include "ndnic/wire/headers.h"

namespace ndnic::ndping {
namespace {

constexpr uint32_t kRequestMagic = 0x4E445051;  // "NDPQ"
constexpr uint32_t kReplyMagic = 0x4E445052;    // "NDPR"
constexpr uint8_t kVersion = 1;
constexpr size_t kRequestLen = 4 + 4 + 4 * 3;
constexpr size_t kReplyLen = 4 + 4 + 4;

}  // namespace

std::vector<uint8_t> encode(const Request& r) {
  std::vector<uint8_t> v(kRequestLen, 0);
  wire::store_be32(&v[0], kRequestMagic);
  v[4] = kVersion;
  v[5] = uint8_t(r.tool);
  v[6] = r.check ? 1 : 0;
  wire::store_be32(&v[8], r.min_size);
  wire::store_be32(&v[12], r.max_size);
  wire::store_be32(&v[16], r.iters);
  return v;
}

std::vector<uint8_t> encode(const Reply& r) {
  std::vector<uint8_t> v(kReplyLen, 0);
  wire::store_be32(&v[0], kReplyMagic);
  v[4] = kVersion;
  wire::store_be32(&v[8], r.queue_depth);
  return v;
}

std::optional<Request> decode_request(const uint8_t* p, size_t len) {
  // The private data may come padded to the REQ's full length: read the prefix only.
  if (len < kRequestLen || wire::load_be32(p) != kRequestMagic || p[4] != kVersion || p[5] > uint8_t(Tool::kPingPong))
    return std::nullopt;
  Request r;
  r.tool = Tool(p[5]);
  r.check = p[6] != 0;
  r.min_size = wire::load_be32(p + 8);
  r.max_size = wire::load_be32(p + 12);
  r.iters = wire::load_be32(p + 16);
  if (r.min_size == 0 || r.min_size > r.max_size || r.max_size > kMaxXfer) return std::nullopt;
  return r;
}

std::optional<Reply> decode_reply(const uint8_t* p, size_t len) {
  if (len < kReplyLen || wire::load_be32(p) != kReplyMagic || p[4] != kVersion) return std::nullopt;
  Reply r;
  r.queue_depth = wire::load_be32(p + 8);
  if (r.queue_depth < 2) return std::nullopt;
  return r;
}

}  // namespace ndnic::ndping
