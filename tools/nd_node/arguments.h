// Command-line values the ND tools share: counts, byte sizes with K/M suffixes, IPv4
// addresses. Strict: the whole text must be the value (no sign, no blanks, no trailing junk).
#pragma once

#include <cstdint>
#include <string>

namespace ndnic::nd_node {

/// A decimal number 0 .. max.
bool parse_uint(const char* s, unsigned long max, unsigned long* out);
/// BYTES with an optional K or M (binary) suffix, 1 .. max.
bool parse_size(const char* s, unsigned long max, unsigned long* out);
/// A dotted IPv4 address other than 0.0.0.0, host order.
bool parse_ipv4(const char* s, uint32_t* out);
/// "198.18.0.1" from a host-order address: what parse_ipv4 reads back.
std::string ipv4_text(uint32_t ip);

}  // namespace ndnic::nd_node
