// An ND HRESULT as a tool prints it: its ND name (the SDK's, as ndstatus.h spells it) and its
// value.
#pragma once

#include <string>

#include "ndnic/ndspi.h"

namespace ndnic::nd_app {

/// "ND_CONNECTION_REFUSED (0xC0000236)"; the bare value for a status without a name.
std::string status_text(HRESULT hr);

}  // namespace ndnic::nd_app
