#include "tests/telemetry/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ndnic::telemetry::testing {
namespace {

constexpr int kReplyTimeoutS = 5;

class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}

  bool document(Json* out) {
    if (!value(out, 0)) return false;
    space();
    return pos_ == t_.size() || fail("trailing text");
  }
  const std::string& error() const { return error_; }

 private:
  static constexpr int kMaxDepth = 32;

  bool fail(const char* why) {
    error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }
  void space() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\r' || t_[pos_] == '\t')) pos_++;
  }
  bool eat(char c) {
    space();
    if (pos_ < t_.size() && t_[pos_] == c) {
      pos_++;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  bool string(std::string* out) {
    if (!eat('"')) return fail("expected a string");
    while (pos_ < t_.size() && t_[pos_] != '"') {
      char c = t_[pos_++];
      if (c == '\\') {
        if (pos_ >= t_.size()) break;
        c = t_[pos_++];
        switch (c) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (pos_ + 4 > t_.size()) return fail("short \\u escape");
            const unsigned long cp = std::stoul(std::string(t_.substr(pos_, 4)), nullptr, 16);
            pos_ += 4;
            if (cp >= 0x80) return fail("non-ASCII \\u escape");  // telemetry sends none
            c = char(cp);
            break;
          }
          default: break;  // \" \\ \/
        }
      }
      out->push_back(c);
    }
    return eat('"') || fail("unterminated string");
  }

  bool number(Json* out) {
    const bool neg = t_[pos_] == '-';
    if (neg) pos_++;
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') v = v * 10 + uint64_t(t_[pos_++] - '0');
    if (pos_ == start) return fail("expected a number");
    if (pos_ < t_.size() && (t_[pos_] == '.' || t_[pos_] == 'e' || t_[pos_] == 'E'))
      return fail("fractions are not telemetry's");
    out->kind = Json::Kind::kNumber;
    out->u = neg ? 0 : v;
    out->i = neg ? -int64_t(v) : int64_t(v);
    return true;
  }

  bool value(Json* out, int depth) {
    if (depth > kMaxDepth) return fail("nested too deep");
    space();
    if (pos_ >= t_.size()) return fail("unexpected end");
    const char c = t_[pos_];
    if (c == '{') {
      pos_++;
      out->kind = Json::Kind::kObject;
      if (eat('}')) return true;
      do {
        std::string key;
        if (!string(&key) || !eat(':')) return fail("expected a member");
        if (!value(&out->o[key], depth + 1)) return false;
      } while (eat(','));
      return eat('}') || fail("expected '}'");
    }
    if (c == '[') {
      pos_++;
      out->kind = Json::Kind::kArray;
      if (eat(']')) return true;
      do {
        out->a.emplace_back();
        if (!value(&out->a.back(), depth + 1)) return false;
      } while (eat(','));
      return eat(']') || fail("expected ']'");
    }
    if (c == '"') {
      out->kind = Json::Kind::kString;
      return string(&out->s);
    }
    if (word("null")) return true;
    if (word("true") || word("false")) {
      out->kind = Json::Kind::kBool;
      out->b = t_.substr(pos_ - 4, 4) == "true";
      return true;
    }
    return number(out);
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

const Json& Json::operator[](const std::string& key) const {
  static const Json kNull;
  const auto it = o.find(key);
  return it == o.end() ? kNull : it->second;
}

bool Json::parse(std::string_view text, Json* out, std::string* error) {
  *out = Json{};
  Reader r(text);
  const bool ok = r.document(out);
  if (!ok && error) *error = r.error();
  return ok;
}

Client::~Client() {
  if (fd_ >= 0) close(fd_);
}

bool Client::connect(const std::string& path) {
  fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  if (fd_ < 0) {
    error_ = std::string("socket: ") + strerror(errno);
    return false;
  }
  timeval tv{kReplyTimeoutS, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sun.sun_path)) {
    error_ = "socket path too long";
    return false;
  }
  std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sun), sizeof(sun)) != 0) {
    error_ = "connect " + path + ": " + strerror(errno);
    return false;
  }
  std::string hello(1024, '\0');  // dpdk-telemetry.py reads the hello with 1024 bytes too
  const ssize_t n = recv(fd_, hello.data(), hello.size(), 0);
  if (n <= 0) {
    error_ = std::string("no hello: ") + strerror(errno);
    return false;
  }
  hello.resize(size_t(n));
  std::string why;
  if (!Json::parse(hello, &hello_, &why)) {
    error_ = "bad hello (" + why + "): " + hello;
    return false;
  }
  if (hello_["max_output_len"].kind == Json::Kind::kNumber) max_output_ = hello_["max_output_len"].u;
  return true;
}

std::string Client::raw(const std::string& command) {
  if (send(fd_, command.data(), command.size(), 0) != ssize_t(command.size())) {
    error_ = std::string("send: ") + strerror(errno);
    return {};
  }
  std::string reply(max_output_, '\0');
  const ssize_t n = recv(fd_, reply.data(), reply.size(), 0);
  if (n <= 0) {
    error_ = std::string("recv: ") + strerror(errno);
    return {};
  }
  reply.resize(size_t(n));
  return reply;
}

Json Client::query(const std::string& command) {
  const std::string reply = raw(command);
  Json doc;
  std::string why;
  if (reply.empty() || !Json::parse(reply, &doc, &why)) {
    if (!reply.empty()) error_ = "bad reply (" + why + "): " + reply;
    return {};
  }
  // {"/ndnic/qps": [...]}: the key is the command without its parameters.
  return doc[command.substr(0, command.find(','))];
}

}  // namespace ndnic::telemetry::testing
