// The command line every ND tool shares: its arguments after EAL's "--", strict values
// (counts, byte sizes with K/M suffixes, IPv4 addresses: the whole text must be the value, no
// sign, no blanks, no trailing junk), getopt_long's problems worded for a usage error, and the
// rules of the embedded / --server / --client modes with their --dev, --ip and --retry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct option;  // <getopt.h>

namespace ndnic::nd_app {

constexpr int kUsageExit = 2;  ///< the exit status after a usage error

/// What a tool's parse_options decided: run with these options, or exit now with this status
/// (0 after --help, kUsageExit after a usage error, which has been printed).
template <class Options>
struct Parsed {
  std::optional<Options> options;
  int exit_code = 0;
};

/// A decimal number 0 .. max.
bool parse_uint(const char* s, unsigned long max, unsigned long* out);
/// BYTES with an optional K or M (binary) suffix, 1 .. max.
bool parse_size(const char* s, unsigned long max, unsigned long* out);
/// A dotted IPv4 address other than 0.0.0.0, host order.
bool parse_ipv4(const char* s, uint32_t* out);
/// An ND port, 1 .. 65535.
bool parse_port(const char* s, uint16_t* out);
/// --timeout (`min_s` 1) or --retry (`min_s` 0): seconds up to kMaxSeconds.
bool parse_seconds(const char* s, unsigned min_s, unsigned* out);
constexpr unsigned long kMaxSeconds = 3600;  ///< an hour: more is a typo
/// "198.18.0.1" from a host-order address: what parse_ipv4 reads back.
std::string ipv4_text(uint32_t ip);

/// The two lines of a usage error (usage_error()).
void print_usage_error(const char* tool, const std::string& what);
/// "TOOL: WHAT" and "Try 'TOOL --help' for more information." on stderr; a Parsed that exits
/// with kUsageExit.
template <class Options>
Parsed<Options> usage_error(const char* tool, const std::string& what) {
  print_usage_error(tool, what);
  return Parsed<Options>{std::nullopt, kUsageExit};
}

/// The program's own arguments: after the first "--", or all of them when there is none (as
/// pmd_glue's eal_init splits argv). Lets --help and usage errors answer before EAL starts.
std::vector<std::string> program_args(int argc, char** argv);
/// How the user wrote option `c`: "--name" when `longopts` (getopt_long's table, ended by a
/// null name) has it, "-c" otherwise.
std::string option_text(int c, const option* longopts);
/// glibc's getopt keeps a pointer into the last argument it read; EAL parses after the tool
/// (with optind = 1, which does not reinitialise it) and would resume from it once the tool's
/// strings are gone. A call with optind = 0 on an empty list clears that state.
void forget_getopt_state();

/// getopt_long's answer `c` after a problem, as a usage error says it: "option needs a value:
/// --dev" (':'), "unknown option: -x" (anything else). Before forget_getopt_state().
std::string getopt_problem(int c, const option* longopts, char* const* argv);
/// "bad value for --ip: 1.2.3".
std::string bad_value(int c, const option* longopts, const char* value);

/// The options of a tool that runs both ends in this process unless given --server or
/// --client, each of those on a DPDK port with an address.
struct Roles {
  bool server = false;     ///< --server
  bool client = false;     ///< --client (with the server's address)
  bool device = false;     ///< --dev given
  uint32_t ipv4 = 0;       ///< --ip
  uint32_t peer_ipv4 = 0;  ///< the server's address
  bool retry = false;      ///< --retry given
};
/// The usage error in how they combine, or "": --dev and --ip only with a role and both with
/// one, a server that is not us, --retry only for a client. (--server with --client is each
/// tool's first check.)
std::string role_problem(const Roles& r);

}  // namespace ndnic::nd_app
