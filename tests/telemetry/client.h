// The test's side of DPDK telemetry, done the way dpdk-telemetry.py does it: connect a unix
// SOCK_SEQPACKET socket, read the hello ({"version", "pid", "max_output_len"}), then send one
// command per message and read one JSON reply each. With a small JSON reader for the replies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ndnic::telemetry::testing {

/// A parsed JSON value. Telemetry's numbers are integers; they are kept exact in `u` (and
/// `i` for negative ones).
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool b = false;
  uint64_t u = 0;
  int64_t i = 0;
  std::string s;
  std::vector<Json> a;
  std::map<std::string, Json> o;

  /// A member, or null when this is no object or has no such member.
  const Json& operator[](const std::string& key) const;
  bool is_null() const { return kind == Kind::kNull; }
  bool has(const std::string& key) const { return o.count(key) > 0; }
  bool operator==(const Json&) const = default;

  /// Parses a whole document; false (with `error`) on malformed text or trailing garbage.
  static bool parse(std::string_view text, Json* out, std::string* error = nullptr);
};

class Client {
 public:
  ~Client();
  /// Connects and reads the hello. False with error().
  bool connect(const std::string& path);
  /// Sends `command` ("/ndnic/qps,a") and returns the raw reply, empty on error.
  std::string raw(const std::string& command);
  /// The reply's value under the command's name (telemetry answers {"<cmd>": value}).
  Json query(const std::string& command);

  const Json& hello() const { return hello_; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  Json hello_;
  size_t max_output_ = 16384;
  std::string error_;
};

}  // namespace ndnic::telemetry::testing
