#include "tools/nd_app/arguments.h"

#include <arpa/inet.h>
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ndnic::nd_app {

bool parse_uint(const char* s, unsigned long max, unsigned long* out) {
  // strtoul would accept a sign and leading blanks: refused here.
  if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ') return false;
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (*end != '\0' || v > max) return false;
  *out = v;
  return true;
}

bool parse_size(const char* s, unsigned long max, unsigned long* out) {
  std::string_view v(s);
  unsigned long scale = 1;
  if (!v.empty() && (v.back() == 'K' || v.back() == 'k')) scale = 1ul << 10;
  if (!v.empty() && (v.back() == 'M' || v.back() == 'm')) scale = 1ul << 20;
  const std::string digits(scale == 1 ? v : v.substr(0, v.size() - 1));
  unsigned long n = 0;
  if (!parse_uint(digits.c_str(), max, &n) || n == 0 || n * scale > max) return false;
  *out = n * scale;
  return true;
}

bool parse_ipv4(const char* s, uint32_t* out) {
  in_addr a{};
  if (inet_pton(AF_INET, s, &a) != 1 || a.s_addr == 0) return false;
  *out = ntohl(a.s_addr);
  return true;
}

bool parse_port(const char* s, uint16_t* out) {
  unsigned long v = 0;
  if (!parse_uint(s, 65535, &v) || v == 0) return false;
  *out = uint16_t(v);
  return true;
}

bool parse_seconds(const char* s, unsigned min_s, unsigned* out) {
  unsigned long v = 0;
  if (!parse_uint(s, kMaxSeconds, &v) || v < min_s) return false;
  *out = unsigned(v);
  return true;
}

std::string ipv4_text(uint32_t ip) {
  char b[16];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

void print_usage_error(const char* tool, const std::string& what) {
  std::fprintf(stderr, "%1$s: %2$s\nTry '%1$s --help' for more information.\n", tool, what.c_str());
}

std::vector<std::string> program_args(int argc, char** argv) {
  int first = 1;
  for (int i = 1; i < argc; i++) {
    if (std::string_view(argv[i]) == "--") {
      first = i + 1;
      break;
    }
  }
  return std::vector<std::string>(argv + first, argv + argc);
}

std::string option_text(int c, const option* longopts) {
  for (const option* o = longopts; o->name; o++)
    if (o->val == c) return std::string("--") + o->name;
  return std::string("-") + char(c);
}

void forget_getopt_state() {
  char name[] = "nd_app";
  char* none[] = {name, nullptr};
  optind = 0;
  getopt(1, none, "");
  optind = 0;
}

std::string getopt_problem(int c, const option* longopts, char* const* argv) {
  if (c == ':')
    return "option needs a value: " + (optopt ? option_text(optopt, longopts) : std::string(argv[optind - 1]));
  return "unknown option: " + (optopt ? std::string("-") + char(optopt) : std::string(argv[optind - 1]));
}

std::string bad_value(int c, const option* longopts, const char* value) {
  return "bad value for " + option_text(c, longopts) + ": " + (value ? value : "");
}

std::string role_problem(const Roles& r) {
  if (!r.server && !r.client) {
    if (r.device || r.ipv4) return "--dev and --ip go with --server or --client";
  } else if (!r.device || !r.ipv4) {
    return "--server and --client need --dev and --ip";
  }
  if (r.client && r.peer_ipv4 == r.ipv4) return "the server's address is our own --ip";
  if (r.retry && !r.client) return "--retry goes with --client";
  return "";
}

}  // namespace ndnic::nd_app
