// The verdict lines both peers print: "ok <what>" or "FAIL <what>: got X expected Y"; the exit
// status is 0 only when every check passed (and there was at least one).
#pragma once

#include <cstdint>
#include <string>

#include "ndnic/ndspi.h"

namespace ndnic::nd_peer {

void ok(const std::string& what);
void fail(const std::string& what, const std::string& got, const std::string& expected);
void check_u64(const std::string& what, uint64_t got, uint64_t expected);
void check_status(const std::string& what, HRESULT got, HRESULT expected);
std::string hex(uint64_t v);
unsigned oks();
unsigned fails();

}  // namespace ndnic::nd_peer
