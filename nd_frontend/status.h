// NIC completion statuses as ND v1 results (the seeds decide; nd-v1-facts.md has the rule).
#pragma once

#include "ndnic/ndspi.h"
#include "ndnic/verbs.h"

namespace ndnic::nd {

/// NTSTATUS STATUS_BAD_NETWORK_NAME, which no ND header names: the SDK's provider tests
/// (ndmemorytest NdInvalidIP) expect it from Connect to the unspecified address 0.0.0.0.
constexpr HRESULT STATUS_BAD_NETWORK_NAME = ::nd_status(0xC00000CC);

HRESULT nd_status(const nic::Completion& c);

}  // namespace ndnic::nd
