// NIC completion statuses as ND v1 results (the seeds decide; nd-v1-facts.md has the rule).
#pragma once

#include "nd_frontend/ndspi.h"
#include "nic/verbs.h"

namespace ndnic::nd {

HRESULT nd_status(const nic::Completion& c);

}  // namespace ndnic::nd
