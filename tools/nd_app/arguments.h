// Command-line values the ND tools share: counts, byte sizes with K/M suffixes, IPv4
// addresses. Strict: the whole text must be the value (no sign, no blanks, no trailing junk).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct option;  // <getopt.h>

namespace ndnic::nd_app {

/// A decimal number 0 .. max.
bool parse_uint(const char* s, unsigned long max, unsigned long* out);
/// BYTES with an optional K or M (binary) suffix, 1 .. max.
bool parse_size(const char* s, unsigned long max, unsigned long* out);
/// A dotted IPv4 address other than 0.0.0.0, host order.
bool parse_ipv4(const char* s, uint32_t* out);
/// "198.18.0.1" from a host-order address: what parse_ipv4 reads back.
std::string ipv4_text(uint32_t ip);

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

}  // namespace ndnic::nd_app
